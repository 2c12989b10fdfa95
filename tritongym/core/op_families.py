"""What counts as torch *compute*, under which canonical name, and which ops do the same work.

`torch.softmax`, `F.softmax`, `torch.ops.aten._softmax.default`, `x.softmax(...)`, `x.softmax_(...)` and
`nn.Softmax()(x)` are one op, `softmax`.  Ops that can stand in for one another, or that contain each
other's work, share a family: `mm`, `bmm`, `einsum`, `linear` and `@` all multiply matrices, and a
`layer_norm` is a reduction with a square root.  An op may be in several families (composites such as
`softmax` are in `softmax`, `exp` and `reduction`); an op in no family is its own family.

`families_of` closes over `CONTAINS`.  Allocation, views, metadata and casts are never compute (casts are
the `precision` check's business).
"""

from __future__ import annotations

import re

NON_COMPUTE = frozenset(
    """
    empty empty_like empty_strided empty_permuted zeros zeros_like ones ones_like full full_like arange range
    linspace logspace eye tensor as_tensor asarray as_strided from_numpy frombuffer randn randn_like rand rand_like
    randint randint_like randperm normal bernoulli multinomial manual_seed seed initial_seed numel result_type
    promote_types can_cast broadcast_shapes finfo iinfo device dtype no_grad enable_grad inference_mode
    set_grad_enabled view view_as reshape reshape_as contiguous permute transpose swapaxes swapdims movedim
    moveaxis t adjoint flatten unflatten ravel unsqueeze squeeze expand expand_as broadcast_to broadcast_tensors
    narrow select chunk split tensor_split unbind hsplit vsplit dsplit stride size dim ndimension nelement
    element_size data_ptr storage_offset untyped_storage storage to cuda cpu type type_as float double half
    bfloat16 int long bool short byte char detach clone copy fill zero pin_memory share_memory item tolist
    numpy requires_grad retain_grad register_hook cat concat concatenate stack hstack vstack dstack pad flip
    fliplr flipud roll repeat tile dropout alpha_dropout feature_alpha_dropout dropout1d dropout2d dropout3d
    identity synchronize cdiv next_power_of_2
    """.split()
)
"""Names never counted as compute: allocation, views, metadata, copies, casts, randomness, dropout."""

ATEN_NON_COMPUTE = frozenset(
    """
    to_copy unsafe_view reshape_alias alias lift_fresh lift_fresh_copy local_scalar_dense slice split_with_sizes
    unsafe_split resize set scalar_tensor copy as_strided sym_size sym_stride sym_numel sym_storage_offset unbind
    select detach clone zero fill new_empty_strided native_dropout contiguous view_copy expand_copy
    """.split()
)
"""ATen names (leading `_` stripped) of ops that move, alias or make memory: what `.float()`, `x[1:]`,
`.item()` and `torch.empty` reach the dispatcher as."""

COMPUTE_METHODS = frozenset(
    """
    matmul mm bmm addmm baddbmm addbmm addmv addr mv dot vdot inner outer ger softmax log_softmax logsumexp relu
    clamp clamp_min clamp_max clip sigmoid tanh exp exp2 expm1 log log2 log10 log1p sqrt rsqrt pow square abs
    neg negative sum mean max min amax amin aminmax argmax argmin prod norm cumsum cumprod cummax cummin var std
    add sub subtract mul multiply div divide true_divide floor_divide remainder fmod reciprocal sin cos tan asin
    acos atan atan2 sinh cosh erf erfc erfinv maximum minimum fmax fmin where masked_fill masked_scatter sort
    topk kthvalue median nanmedian mode gather scatter scatter_add scatter_reduce index_add index_select
    index_put index_fill index_copy take take_along_dim lerp addcmul addcdiv sign sgn floor ceil round trunc
    frac cross tril triu diag trace kron logaddexp logaddexp2 nan_to_num heaviside gt lt ge le eq ne greater
    less greater_equal less_equal count_nonzero histc bincount xlogy lgamma digamma sinc hypot logit
    matrix_power matrix_exp det logdet slogdet inverse pinverse cholesky qr svd renorm dist cov corrcoef nansum
    nanmean float_power ldexp copysign sigmoid tanh relu hardshrink softplus
    """.split()
)
"""Method names that compute when called on a tensor (`x.sum()`); other methods (`d.items()`) are ignored."""

_FAMILIES_TEXT = {
    "matmul": "matmul mm bmm addmm baddbmm addbmm addmv addr mv dot vdot inner outer ger einsum linear bilinear "
    "tensordot chain_matmul multi_dot scaled_mm matrix_power kron lstm gru rnn",
    "attention": "scaled_dot_product_attention multihead_attention multi_head_attention_forward",
    "conv": "conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d convolution conv_tbc unfold fold "
    "im2col col2im",
    "piecewise": "relu relu6 clamp clamp_min clamp_max maximum minimum max min fmax fmin threshold hardtanh leaky_relu "
    "prelu rrelu elu celu selu where masked_fill heaviside abs sign sgn gt lt ge le greater less greater_equal "
    "less_equal hardshrink softshrink",
    "softmax": "softmax log_softmax logsumexp softmin gumbel_softmax cross_entropy nll_loss",
    "norm": "layer_norm rms_norm group_norm batch_norm instance_norm normalize var std var_mean std_mean "
    "local_response_norm norm vector_norm matrix_norm native_layer_norm native_batch_norm native_group_norm "
    "cosine_similarity renorm",
    "reduction": "sum mean max amax min amin aminmax argmax argmin prod cumsum cumprod cummax cummin nansum nanmean "
    "median nanmedian mode kthvalue topk sort count_nonzero max_pool1d max_pool2d max_pool3d avg_pool1d avg_pool2d "
    "avg_pool3d adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool1d adaptive_max_pool2d "
    "adaptive_max_pool3d lp_pool1d lp_pool2d",
    "gelu": "gelu erf erfc",
    "sigmoid": "silu sigmoid logsigmoid hardsigmoid hardswish swish glu",
    "tanh": "tanh tanhshrink mish",
    "exp": "exp exp2 expm1 log log2 log10 log1p softplus logaddexp logaddexp2 elu celu selu",
    "sqrt": "sqrt rsqrt",
    "pow": "pow square float_power",
    "add": "add sub subtract rsub addcmul addcdiv",
    "mul": "mul multiply addcmul",
    "div": "div divide true_divide floor_divide remainder fmod reciprocal",
    "neg": "neg negative",
    "gather": "embedding embedding_bag index_select gather take take_along_dim",
    "interpolate": "interpolate upsample upsample_nearest upsample_bilinear grid_sample pixel_shuffle pixel_unshuffle",
}
FAMILIES: dict[str, frozenset[str]] = {family: frozenset(ops.split()) for family, ops in _FAMILIES_TEXT.items()}
"""Family -> its ops.  An op may be in several families (`max` is a reduction and a piecewise maximum)."""

CONTAINS: dict[str, tuple[str, ...]] = {
    "attention": ("matmul", "softmax"),
    "conv": ("matmul",),
    "matmul": ("mul", "add", "reduction"),
    "softmax": ("exp", "reduction", "div"),
    "norm": ("reduction", "sqrt", "pow", "div"),
    "sigmoid": ("exp", "div"),
    "tanh": ("exp",),
    "gelu": ("tanh", "mul"),
}
"""The work a family's ops contain: a convolution is a matmul, a matmul multiplies and sums, a softmax
exponentiates and sums.  An op counts in the families it contains, so `(a[:, :, None] * b).sum(1)` for a
matmul problem and `x / x.norm(...)` for a normalisation are found like `torch.mm` and `F.normalize`."""

_ALIASES = {"clip": "clamp", "multiply": "mul", "divide": "div", "true_divide": "div", "subtract": "sub"}
_NN_CLASSES = {
    "ReLU": "relu",
    "ReLU6": "relu6",
    "LeakyReLU": "leaky_relu",
    "PReLU": "prelu",
    "RReLU": "rrelu",
    "SiLU": "silu",
    "LogSigmoid": "logsigmoid",
    "Softmax2d": "softmax",
    "MultiheadAttention": "multihead_attention",
    "Upsample": "interpolate",
    "UpsamplingNearest2d": "interpolate",
    "UpsamplingBilinear2d": "interpolate",
    "BCELoss": "binary_cross_entropy",
    "BCEWithLogitsLoss": "binary_cross_entropy_with_logits",
    "CrossEntropyLoss": "cross_entropy",
    "NLLLoss": "nll_loss",
    "KLDivLoss": "kl_div",
}
_CONTAINERS = frozenset(
    {"Module", "Sequential", "ModuleList", "ModuleDict", "Parameter", "ParameterList", "ParameterDict", "Buffer"}
)
_DUNDERS = {
    "add": "add",
    "sub": "sub",
    "mul": "mul",
    "truediv": "div",
    "floordiv": "floor_divide",
    "mod": "remainder",
    "pow": "pow",
    "matmul": "matmul",
    "neg": "neg",
    "abs": "abs",
    "gt": "gt",
    "lt": "lt",
    "ge": "ge",
    "le": "le",
}
_DUNDER_RE = re.compile(r"^__[ri]?([a-z]+)__$")
_NAMESPACES = {("nn", "functional"): True, ("special",): True, ("linalg",): True, ("fft",): True}
"""torch namespaces whose every function computes (True); `torch.Tensor.X` counts like a method `x.X`."""
_SUBMODULES = frozenset(
    """
    nn cuda backends utils linalg fft special ops testing autograd distributions jit onnx sparse library overrides
    random profiler hub multiprocessing distributed futures amp cpu mps xpu accelerator compiler export fx
    quantization ao masked nested func signal types storage serialization version functional package
    """.split()
)
_DTYPE_RE = re.compile(
    r"^(u?int\d*|float\d*\w*|bfloat16|complex\d*|c?float|c?double|half|long|short|bool|bits\w*|q?u?int\d+\w*)$"
)


def canonical_op(path: str) -> str | None:
    """The compute op a torch path names (`torch.nn.functional.relu_` -> 'relu'), or None when it is
    not compute (an allocation, a view, a namespace, a class, a dtype, `torch.cuda.*`)."""
    parts = path.split(".")
    if parts[0] != "torch" or len(parts) < 2:
        return None
    rest = parts[1:]
    if rest[:2] == ["ops", "aten"] and len(rest) >= 3:
        return method_op(rest[2], module_function=True)
    if rest[:2] in (["_C", "_nn"], ["_C", "_VariableFunctions"]) and len(rest) == 3:
        return method_op(rest[2], module_function=True)
    if rest[0] == "Tensor" and len(rest) == 2:
        return method_op(rest[1])
    if tuple(rest[:-1]) in _NAMESPACES:
        return method_op(rest[-1], module_function=True)
    if len(rest) == 1 and rest[0] not in _SUBMODULES:
        return method_op(rest[0], module_function=True)
    return None


def method_op(name: str, module_function: bool = False) -> str | None:
    """Canonical op of a name: in-place `_` and private `_` stripped, dunders mapped (`__rmul__` -> mul).
    A method name counts only if it is in `COMPUTE_METHODS`; a module function unless it is `NON_COMPUTE`."""
    dunder = _DUNDER_RE.match(name)
    if dunder:
        return _DUNDERS.get(dunder.group(1))
    if not name or name[0].isupper() or _DTYPE_RE.match(name.strip("_")):
        return None
    op = name.strip("_")
    if op in NON_COMPUTE or op.startswith(("is_", "new_", "get_", "set_", "has_", "can_", "use_")):
        return None
    if not module_function and op not in COMPUTE_METHODS:
        return None
    return _ALIASES.get(op, op)


def aten_op(name: str) -> str | None:
    """Canonical op of an ATen op name seen at run time (`_softmax` -> softmax), None for non-compute."""
    op = method_op(name, module_function=True)
    return None if op is None or op in ATEN_NON_COMPUTE else op


def nn_class_op(class_name: str) -> str | None:
    """The op an `nn.<Class>` layer computes when called: `Conv2d` -> conv2d, `BatchNorm2d` -> batch_norm."""
    if class_name in _CONTAINERS or not class_name[:1].isupper():
        return None
    if class_name in _NN_CLASSES:
        return _NN_CLASSES[class_name]
    name = class_name.removeprefix("Lazy")
    snake = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)).lower()
    snake = re.sub(r"_norm[123]d$", "_norm", snake)
    return None if snake in NON_COMPUTE else snake


def families_of(op: str) -> frozenset[str]:
    """The families `op` belongs to, with the work they contain; an op of no family is a family of its own."""
    found = {family for family, ops in FAMILIES.items() if op in ops}
    todo = list(found)
    while todo:
        for inner in CONTAINS.get(todo.pop(), ()):
            if inner not in found:
                found.add(inner)
                todo.append(inner)
    return frozenset(found or {op})
