"""The field corpus's kernels: which library file, which torch operation, the wrapper and the problem's sizes."""

from __future__ import annotations

from dataclasses import dataclass

LIBRARIES = {
    "flaggems": {
        "name": "FlagGems",
        "repo": "FlagOpen/FlagGems",
        "url": "https://github.com/FlagOpen/FlagGems",
        "commit": "532ff438c70343d7aec9becdabb76a71225a0553",
        "licence": "Apache-2.0",
        "licence_path": "LICENSE",
    },
    "liger": {
        "name": "Liger-Kernel",
        "repo": "linkedin/Liger-Kernel",
        "url": "https://github.com/linkedin/Liger-Kernel",
        "commit": "ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c",
        "licence": "BSD-2-Clause",
        "licence_path": "LICENSE",
        "strip": ("liger_kernel", "packaging"),
        "shim": "LIGER",
    },
    "attorch": {
        "name": "attorch",
        "repo": "BobMcDear/attorch",
        "url": "https://github.com/BobMcDear/attorch",
        "commit": "67c2772baf33913ef51c2d1064f746ca17b63749",
        "licence": "MIT",
        "licence_path": "LICENSE",
        "strip": (".", "attorch"),
    },
    "unsloth": {
        "name": "unsloth",
        "repo": "unslothai/unsloth",
        "url": "https://github.com/unslothai/unsloth",
        "commit": "015bdef0d94a241bcd94eec7a405b1700632180d",
        "licence": "Apache-2.0",
        "licence_path": "LICENSE",
        "strip": (".", "unsloth", "unsloth_zoo", "transformers"),
        "shim": "UNSLOTH",
    },
}

ELEMENTWISE = {"cpu": {"M": 16, "N": 100}, "gpu": {"M": 4096, "N": 4096}}
ROWS = {"cpu": {"M": 16, "N": 200}, "gpu": {"M": 4096, "N": 4096}}


@dataclass(frozen=True)
class Entry:
    name: str
    lib: str
    paths: tuple[str, ...]
    op: str
    model_new: str
    problem: str
    sizes: dict
    select: tuple[str, ...] = ()
    gpu_only: bool = False
    why_gpu_only: str = ""


HOSTDEV = "asserts its tensors are on the CUDA device"
LIMITS = (
    "reads a tl.constexpr dtype's `.value` (flag_gems.utils.limits), which Triton's interpreter passes as a plain dtype"
)


def fg(name, file, op, call, torch_expr, inputs="[torch.randn(M, N)]", args="x", sizes=ELEMENTWISE, gpu=""):
    model_new = f"""
    class ModelNew(torch.nn.Module):
        def forward(self, {args}):
            return {call}
    """
    problem = f"""
    class Model(nn.Module):
        def forward(self, {args}):
            return {torch_expr}


    def get_inputs():
        return {inputs}


    def get_init_inputs():
        return []
    """
    paths = tuple(f"src/flag_gems/{f}" for f in file.split("+"))
    return Entry(name, "flaggems", paths, op, model_new, problem, sizes, gpu_only=bool(gpu), why_gpu_only=gpu)


TWO = "[torch.randn(M, N), torch.randn(M, N)]"
POS = "[torch.rand(M, N) + 0.1]"
NAN = "[torch.where(torch.rand(M, N) < 0.1, float('nan'), torch.randn(M, N))]"
INF = "[torch.where(torch.rand(M, N) < 0.1, float('inf'), torch.randn(M, N))]"
INTS = "[torch.randint(-1000, 1000, (M, N), dtype=torch.int32), torch.randint(-1000, 1000, (M, N), dtype=torch.int32)]"
BOOLS = "[torch.rand(M, N) < 0.5, torch.rand(M, N) < 0.5]"

FLAGGEMS_POINTWISE = [
    fg("flaggems_abs", "ops/abs.py", "torch.abs", "abs(x)", "torch.abs(x)"),
    fg("flaggems_neg", "ops/neg.py", "torch.neg", "neg(x)", "torch.neg(x)"),
    fg("flaggems_relu", "ops/relu.py", "torch.relu", "relu(x)", "torch.relu(x)"),
    fg("flaggems_exp", "ops/exp.py", "torch.exp", "exp(x)", "torch.exp(x)"),
    fg("flaggems_exp2", "ops/exp2.py", "torch.exp2", "exp2(x)", "torch.exp2(x)"),
    fg("flaggems_log", "ops/log.py", "torch.log", "log(x)", "torch.log(x)", inputs=POS),
    fg("flaggems_sin", "ops/sin.py", "torch.sin", "sin(x)", "torch.sin(x)"),
    fg("flaggems_cos", "ops/cos.py", "torch.cos", "cos(x)", "torch.cos(x)"),
    fg("flaggems_sqrt", "ops/sqrt.py", "torch.sqrt", "sqrt(x)", "torch.sqrt(x)", inputs=POS),
    fg("flaggems_rsqrt", "ops/rsqrt.py", "torch.rsqrt", "rsqrt(x)", "torch.rsqrt(x)", inputs=POS),
    fg(
        "flaggems_reciprocal",
        "ops/reciprocal.py",
        "torch.reciprocal",
        "reciprocal(x)",
        "torch.reciprocal(x)",
        inputs=POS,
    ),
    fg("flaggems_erf", "ops/erf.py", "torch.erf", "erf(x)", "torch.erf(x)"),
    fg("flaggems_sigmoid", "ops/sigmoid.py", "torch.sigmoid", "sigmoid(x)", "torch.sigmoid(x)"),
    fg("flaggems_silu", "ops/silu.py", "torch.nn.functional.silu", "silu(x)", "F.silu(x)"),
    fg("flaggems_gelu", "ops/gelu.py", "torch.nn.functional.gelu", "gelu(x)", "F.gelu(x)"),
    fg(
        "flaggems_gelu_tanh",
        "ops/gelu.py",
        "torch.nn.functional.gelu(approximate='tanh')",
        "gelu(x, approximate='tanh')",
        "F.gelu(x, approximate='tanh')",
    ),
    fg("flaggems_tanh", "ops/tanh.py", "torch.tanh", "tanh(x)", "torch.tanh(x)"),
    fg("flaggems_atan", "ops/atan.py", "torch.atan", "atan(x)", "torch.atan(x)"),
    fg("flaggems_celu", "ops/celu.py", "torch.nn.functional.celu", "celu(x, alpha=1.5)", "F.celu(x, alpha=1.5)"),
    fg("flaggems_elu", "ops/elu.py", "torch.nn.functional.elu", "elu(x, alpha=0.8)", "F.elu(x, alpha=0.8)"),
    fg(
        "flaggems_log_sigmoid",
        "ops/log_sigmoid.py",
        "torch.nn.functional.logsigmoid",
        "log_sigmoid(x)",
        "F.logsigmoid(x)",
    ),
    fg(
        "flaggems_softplus",
        "ops/softplus.py",
        "torch.nn.functional.softplus",
        "softplus(x, beta=2.0, threshold=10.0)",
        "F.softplus(x, beta=2.0, threshold=10.0)",
    ),
    fg(
        "flaggems_threshold",
        "ops/threshold.py",
        "torch.nn.functional.threshold",
        "threshold(x, 0.1, 20.0)",
        "F.threshold(x, 0.1, 20.0)",
    ),
    fg(
        "flaggems_nan_to_num",
        "ops/nan_to_num.py",
        "torch.nan_to_num",
        "nan_to_num(x, nan=0.5)",
        "torch.nan_to_num(x, nan=0.5)",
        inputs=NAN,
    ),
    fg("flaggems_isnan", "ops/isnan.py", "torch.isnan", "isnan(x)", "torch.isnan(x)", inputs=NAN),
    fg("flaggems_isinf", "ops/isinf.py", "torch.isinf", "isinf(x)", "torch.isinf(x)", inputs=INF),
    fg(
        "flaggems_isfinite",
        "ops/isfinite.py",
        "torch.isfinite",
        "isfinite(x)",
        "torch.isfinite(x)",
        inputs=INF,
    ),
    fg(
        "flaggems_add",
        "ops/add.py",
        "torch.add(alpha)",
        "add(x, y, alpha=0.5)",
        "torch.add(x, y, alpha=0.5)",
        inputs=TWO,
        args="x, y",
    ),
    fg(
        "flaggems_sub",
        "ops/sub.py",
        "torch.sub(alpha)",
        "sub(x, y, alpha=2)",
        "torch.sub(x, y, alpha=2)",
        inputs=TWO,
        args="x, y",
    ),
    fg("flaggems_mul", "ops/mul.py", "torch.mul", "mul(x, y)", "torch.mul(x, y)", inputs=TWO, args="x, y"),
    fg("flaggems_mul_scalar", "ops/mul.py", "torch.mul (tensor, scalar)", "mul(x, 1.7)", "torch.mul(x, 1.7)"),
    fg(
        "flaggems_true_divide",
        "ops/div.py",
        "torch.div",
        "true_divide(x, y)",
        "torch.div(x, y)",
        inputs="[torch.randn(M, N), torch.rand(M, N) + 0.5]",
        args="x, y",
    ),
    fg(
        "flaggems_floor_divide",
        "ops/div.py",
        "torch.floor_divide (int32)",
        "floor_divide(x, y)",
        "torch.floor_divide(x, y)",
        inputs="[torch.randint(-1000, 1000, (M, N), dtype=torch.int32), "
        "torch.randint(1, 50, (M, N), dtype=torch.int32)]",
        args="x, y",
    ),
    fg(
        "flaggems_remainder",
        "ops/div.py",
        "torch.remainder (int32)",
        "remainder(x, y)",
        "torch.remainder(x, y)",
        inputs="[torch.randint(-1000, 1000, (M, N), dtype=torch.int32), "
        "torch.randint(1, 50, (M, N), dtype=torch.int32)]",
        args="x, y",
    ),
    fg(
        "flaggems_pow",
        "ops/pow.py",
        "torch.pow (tensor, scalar)",
        "pow_tensor_scalar(x, 3)",
        "torch.pow(x, 3)",
    ),
    fg(
        "flaggems_maximum",
        "ops/maximum.py",
        "torch.maximum",
        "maximum(x, y)",
        "torch.maximum(x, y)",
        inputs=TWO,
        args="x, y",
        gpu=HOSTDEV,
    ),
    fg(
        "flaggems_minimum",
        "ops/minimum.py",
        "torch.minimum",
        "minimum(x, y)",
        "torch.minimum(x, y)",
        inputs=TWO,
        args="x, y",
        gpu=HOSTDEV,
    ),
    fg("flaggems_clamp", "ops/clamp.py", "torch.clamp", "clamp(x, -0.5, 0.7)", "torch.clamp(x, -0.5, 0.7)"),
    fg(
        "flaggems_clamp_tensor",
        "ops/clamp.py",
        "torch.clamp (tensor bounds)",
        "clamp_tensor(x, lo, hi)",
        "torch.clamp(x, lo, hi)",
        inputs="[torch.randn(M, N), -torch.rand(M, N), torch.rand(M, N)]",
        args="x, lo, hi",
    ),
    fg(
        "flaggems_where",
        "ops/where.py",
        "torch.where",
        "where_self(c, x, y)",
        "torch.where(c, x, y)",
        inputs="[torch.rand(M, N) < 0.5, torch.randn(M, N), torch.randn(M, N)]",
        args="c, x, y",
        gpu=HOSTDEV,
    ),
    fg(
        "flaggems_lerp",
        "ops/lerp.py",
        "torch.lerp (scalar weight)",
        "lerp_scalar(x, y, 0.3)",
        "torch.lerp(x, y, 0.3)",
        inputs=TWO,
        args="x, y",
    ),
    fg(
        "flaggems_addcmul",
        "ops/addcmul.py",
        "torch.addcmul",
        "addcmul(x, y, z, value=0.5)",
        "torch.addcmul(x, y, z, value=0.5)",
        inputs="[torch.randn(M, N), torch.randn(M, N), torch.randn(M, N)]",
        args="x, y, z",
    ),
    fg(
        "flaggems_addcdiv",
        "ops/addcdiv.py",
        "torch.addcdiv",
        "addcdiv(x, y, z, value=0.5)",
        "torch.addcdiv(x, y, z, value=0.5)",
        inputs="[torch.randn(M, N), torch.randn(M, N), torch.rand(M, N) + 0.5]",
        args="x, y, z",
    ),
    fg(
        "flaggems_eq",
        "ops/eq.py",
        "torch.eq",
        "eq(x, y)",
        "torch.eq(x, y)",
        inputs="[torch.randint(0, 4, (M, N)).float(), torch.randint(0, 4, (M, N)).float()]",
        args="x, y",
    ),
    fg(
        "flaggems_ne",
        "ops/ne.py",
        "torch.ne",
        "ne(x, y)",
        "torch.ne(x, y)",
        inputs="[torch.randint(0, 4, (M, N)).float(), torch.randint(0, 4, (M, N)).float()]",
        args="x, y",
    ),
    fg("flaggems_gt", "ops/gt.py", "torch.gt", "gt(x, y)", "torch.gt(x, y)", inputs=TWO, args="x, y"),
    fg("flaggems_ge", "ops/ge.py", "torch.ge", "ge(x, y)", "torch.ge(x, y)", inputs=TWO, args="x, y"),
    fg("flaggems_lt", "ops/lt.py", "torch.lt", "lt(x, y)", "torch.lt(x, y)", inputs=TWO, args="x, y"),
    fg("flaggems_le", "ops/le.py", "torch.le", "le(x, y)", "torch.le(x, y)", inputs=TWO, args="x, y"),
    fg("flaggems_gt_scalar", "ops/gt.py", "torch.gt (tensor, scalar)", "gt_scalar(x, 0.25)", "torch.gt(x, 0.25)"),
    fg(
        "flaggems_isclose",
        "ops/isclose.py",
        "torch.isclose",
        "isclose(x, y, rtol=1e-2, atol=1e-2)",
        "torch.isclose(x, y, rtol=1e-2, atol=1e-2)",
        inputs="[torch.randn(M, N), torch.randn(M, N) * 0.01]",
        args="x, y",
    ),
    fg(
        "flaggems_logical_and",
        "ops/logical_and.py",
        "torch.logical_and",
        "logical_and(x, y)",
        "torch.logical_and(x, y)",
        inputs=BOOLS,
        args="x, y",
    ),
    fg(
        "flaggems_logical_or",
        "ops/logical_or.py",
        "torch.logical_or",
        "logical_or(x, y)",
        "torch.logical_or(x, y)",
        inputs=BOOLS,
        args="x, y",
    ),
    fg(
        "flaggems_logical_xor",
        "ops/logical_xor.py",
        "torch.logical_xor",
        "logical_xor(x, y)",
        "torch.logical_xor(x, y)",
        inputs=BOOLS,
        args="x, y",
    ),
    fg(
        "flaggems_logical_not",
        "ops/logical_not.py",
        "torch.logical_not",
        "logical_not(x)",
        "torch.logical_not(x)",
        inputs="[torch.rand(M, N) < 0.5]",
    ),
    fg(
        "flaggems_bitwise_and",
        "ops/bitwise_and.py",
        "torch.bitwise_and (int32)",
        "bitwise_and_tensor(x, y)",
        "torch.bitwise_and(x, y)",
        inputs=INTS,
        args="x, y",
    ),
    fg(
        "flaggems_bitwise_or",
        "ops/bitwise_or.py",
        "torch.bitwise_or (int32)",
        "bitwise_or_tensor(x, y)",
        "torch.bitwise_or(x, y)",
        inputs=INTS,
        args="x, y",
    ),
    fg(
        "flaggems_bitwise_not",
        "ops/bitwise_not.py",
        "torch.bitwise_not (int32)",
        "bitwise_not(x)",
        "torch.bitwise_not(x)",
        inputs="[torch.randint(-1000, 1000, (M, N), dtype=torch.int32)]",
    ),
    fg(
        "flaggems_masked_fill",
        "ops/masked_fill.py",
        "torch.masked_fill",
        "masked_fill(x, m, -2.5)",
        "torch.masked_fill(x, m, -2.5)",
        inputs="[torch.randn(M, N), torch.rand(M, N) < 0.3]",
        args="x, m",
    ),
    fg(
        "flaggems_mse_loss",
        "ops/mse_loss.py",
        "torch.nn.functional.mse_loss",
        "mse_loss(x, y)",
        "F.mse_loss(x, y)",
        inputs=TWO,
        args="x, y",
    ),
]


def raw(name, lib, paths, op, model_new, problem, sizes, gpu=""):
    return Entry(name, lib, tuple(paths), op, model_new, problem, sizes, gpu_only=bool(gpu), why_gpu_only=gpu)


def module(init, forward, inputs, init_inputs="[]", args="x"):
    return f"""
    class Model(nn.Module):
        def __init__(self{init[0]}):
            super().__init__()
            {init[1]}

        def forward(self, {args}):
            return {forward}


    def get_inputs():
        return {inputs}


    def get_init_inputs():
        return {init_inputs}
    """


def wrapper(init, forward, args="x"):
    init = (init[0], init[1].replace("nn.", "torch.nn."))
    return f"""
    class ModelNew(torch.nn.Module):
        def __init__(self{init[0]}):
            super().__init__()
            {init[1]}

        def forward(self, {args}):
            return {forward}
    """


def fgm(name, file, op, init, call, torch_expr, inputs, init_inputs="[]", sizes=ROWS, args="x", gpu=""):
    paths = [f"src/flag_gems/{f}" for f in file.split("+")]
    return raw(
        name,
        "flaggems",
        paths,
        op,
        wrapper(init, call, args),
        module(init, torch_expr, inputs, init_inputs, args),
        sizes,
        gpu,
    )


NOINIT = ("", "pass")
X = "[torch.randn(M, N)]"
MM = {"cpu": {"M": 32, "K": 48, "N": 40}, "gpu": {"M": 4096, "K": 4096, "N": 4096}}
BMM = {"cpu": {"B": 2, "M": 32, "K": 48, "N": 40}, "gpu": {"B": 16, "M": 1024, "K": 1024, "N": 1024}}
IMG = {"cpu": {"B": 2, "C": 4, "H": 16, "W": 20}, "gpu": {"B": 32, "C": 64, "H": 128, "W": 128}}
CUDA_PROPS = "queries torch.cuda device properties on the host"
HOSTDEV = "asserts its tensors are on the CUDA device"
FLAGGEMS_OTHER = [
    fgm(
        "flaggems_softmax",
        "ops/softmax.py",
        "torch.softmax(dim=-1)",
        NOINIT,
        "softmax(x, -1)",
        "torch.softmax(x, -1)",
        X,
    ),
    fgm(
        "flaggems_softmax_dim1",
        "ops/softmax.py",
        "torch.softmax(dim=1) of a 3-D tensor",
        NOINIT,
        "softmax(x, 1)",
        "torch.softmax(x, 1)",
        "[torch.randn(B, N, K)]",
        sizes={"cpu": {"B": 4, "N": 20, "K": 24}, "gpu": {"B": 64, "N": 512, "K": 512}},
        gpu=CUDA_PROPS,
    ),
    fgm(
        "flaggems_log_softmax",
        "ops/log_softmax.py",
        "torch.log_softmax(dim=-1)",
        NOINIT,
        "log_softmax(x, -1)",
        "torch.log_softmax(x, -1)",
        X,
    ),
    fgm(
        "flaggems_layer_norm",
        "ops/layernorm.py",
        "torch.nn.LayerNorm",
        (", n", "self.norm = nn.LayerNorm(n)"),
        "layer_norm(x, [x.shape[-1]], self.norm.weight, self.norm.bias, self.norm.eps)[0]",
        "self.norm(x)",
        X,
        "[N]",
    ),
    fgm(
        "flaggems_rms_norm",
        "ops/rms_norm.py",
        "torch.nn.RMSNorm",
        (", n", "self.norm = nn.RMSNorm(n, eps=1e-6)"),
        "rms_norm(x, [x.shape[-1]], self.norm.weight, self.norm.eps)",
        "self.norm(x)",
        X,
        "[N]",
    ),
    fgm(
        "flaggems_group_norm",
        "ops/groupnorm.py",
        "torch.nn.GroupNorm",
        (", c", "self.norm = nn.GroupNorm(4, c)"),
        "group_norm(x, self.norm.weight, self.norm.bias, x.shape[0], x.shape[1], x.shape[2] * x.shape[3], 4, "
        "self.norm.eps)[0]",
        "self.norm(x)",
        "[torch.randn(B, C, H, W)]",
        "[C]",
        sizes=IMG,
    ),
    fgm(
        "flaggems_batch_norm",
        "ops/batch_norm.py",
        "torch.nn.BatchNorm2d (eval)",
        (", c", "self.bn = nn.BatchNorm2d(c).eval()"),
        "batch_norm(x, self.bn.weight, self.bn.bias, self.bn.running_mean, self.bn.running_var, False, 0.1, "
        "self.bn.eps)[0]",
        "F.batch_norm(x, self.bn.running_mean, self.bn.running_var, self.bn.weight, self.bn.bias, "
        "False, 0.1, self.bn.eps)",
        "[torch.randn(B, C, H, W)]",
        "[C]",
        sizes=IMG,
    ),
    fgm("flaggems_sum", "ops/sum.py", "torch.sum", NOINIT, "sum(x)", "torch.sum(x)", X),
    fgm("flaggems_sum_dim", "ops/sum.py", "torch.sum(dim=1)", NOINIT, "sum_dim(x, [1])", "torch.sum(x, 1)", X),
    fgm("flaggems_mean", "ops/mean.py", "torch.mean", NOINIT, "mean(x)", "torch.mean(x)", X),
    fgm("flaggems_mean_dim", "ops/mean.py", "torch.mean(dim=1)", NOINIT, "mean_dim(x, [1])", "torch.mean(x, 1)", X),
    fgm("flaggems_max", "ops/max.py", "torch.max", NOINIT, "max(x)", "torch.max(x)", X),
    fgm(
        "flaggems_max_dim",
        "ops/max.py",
        "torch.max(dim=1)",
        NOINIT,
        "tuple(max_dim(x, 1))",
        "tuple(torch.max(x, 1))",
        X,
    ),
    fgm("flaggems_min", "ops/min.py", "torch.min", NOINIT, "min(x)", "torch.min(x)", X),
    fgm(
        "flaggems_min_dim",
        "ops/min.py",
        "torch.min(dim=1)",
        NOINIT,
        "tuple(min_dim(x, 1))",
        "tuple(torch.min(x, 1))",
        X,
    ),
    fgm("flaggems_amax", "ops/amax.py", "torch.amax(dim=1)", NOINIT, "amax(x, [1])", "torch.amax(x, 1)", X),
    fgm(
        "flaggems_argmax",
        "ops/argmax.py",
        "torch.argmax(dim=1)",
        NOINIT,
        "argmax(x, 1)",
        "torch.argmax(x, 1)",
        X,
    ),
    fgm(
        "flaggems_argmin",
        "ops/argmin.py",
        "torch.argmin(dim=1)",
        NOINIT,
        "argmin(x, 1)",
        "torch.argmin(x, 1)",
        X,
    ),
    fgm(
        "flaggems_prod_dim",
        "ops/prod.py",
        "torch.prod(dim=1)",
        NOINIT,
        "prod_dim(x, 1)",
        "torch.prod(x, 1)",
        "[torch.rand(M, N) * 0.2 + 0.9]",
    ),
    fgm("flaggems_cumsum", "ops/cumsum.py", "torch.cumsum(dim=1)", NOINIT, "cumsum(x, 1)", "torch.cumsum(x, 1)", X),
    fgm(
        "flaggems_var_mean",
        "ops/var_mean.py",
        "torch.var_mean(dim=1)",
        NOINIT,
        "var_mean(x, [1], correction=1)",
        "torch.var_mean(x, 1, correction=1)",
        X,
    ),
    fgm("flaggems_std", "ops/std.py+ops/var_mean.py", "torch.std(dim=1)", NOINIT, "std(x, [1])", "torch.std(x, 1)", X),
    fgm(
        "flaggems_vector_norm",
        "ops/vector_norm.py",
        "torch.linalg.vector_norm(dim=1)",
        NOINIT,
        "vector_norm(x, 2, [1])",
        "torch.linalg.vector_norm(x, 2, 1)",
        X,
    ),
    fgm(
        "flaggems_all_dim",
        "ops/all.py",
        "torch.all(dim=1)",
        NOINIT,
        "all_dim(x, 1)",
        "torch.all(x, 1)",
        "[torch.rand(M, N) < 0.99]",
    ),
    fgm(
        "flaggems_any_dim",
        "ops/any.py",
        "torch.any(dim=1)",
        NOINIT,
        "any_dim(x, 1)",
        "torch.any(x, 1)",
        "[torch.rand(M, N) < 0.01]",
    ),
    fgm(
        "flaggems_count_nonzero",
        "ops/count_nonzero.py",
        "torch.count_nonzero(dim=1)",
        NOINIT,
        "count_nonzero(x, 1)",
        "torch.count_nonzero(x, 1)",
        "[torch.relu(torch.randn(M, N))]",
    ),
    fgm(
        "flaggems_mm",
        "ops/mm.py",
        "torch.mm",
        NOINIT,
        "mm(a, b)",
        "torch.mm(a, b)",
        "[torch.randn(M, K), torch.randn(K, N)]",
        sizes=MM,
        args="a, b",
        gpu=CUDA_PROPS,
    ),
    fgm(
        "flaggems_bmm",
        "ops/bmm.py",
        "torch.bmm",
        NOINIT,
        "bmm(a, b)",
        "torch.bmm(a, b)",
        "[torch.randn(B, M, K), torch.randn(B, K, N)]",
        sizes=BMM,
        args="a, b",
    ),
    fgm(
        "flaggems_addmm",
        "ops/addmm.py",
        "torch.addmm",
        NOINIT,
        "addmm(c, a, b, beta=0.5, alpha=2.0)",
        "torch.addmm(c, a, b, beta=0.5, alpha=2.0)",
        "[torch.randn(N), torch.randn(M, K), torch.randn(K, N)]",
        sizes=MM,
        args="c, a, b",
    ),
    fgm(
        "flaggems_mv",
        "ops/mv.py",
        "torch.mv",
        NOINIT,
        "mv(a, v)",
        "torch.mv(a, v)",
        "[torch.randn(M, N), torch.randn(N)]",
        args="a, v",
    ),
    fgm(
        "flaggems_dot",
        "ops/dot.py",
        "torch.dot",
        NOINIT,
        "dot(a, b)",
        "torch.dot(a, b)",
        "[torch.randn(M * N), torch.randn(M * N)]",
        args="a, b",
    ),
    fgm(
        "flaggems_vdot",
        "ops/vdot.py",
        "torch.vdot",
        NOINIT,
        "vdot(a, b)",
        "torch.vdot(a, b)",
        "[torch.randn(M * N), torch.randn(M * N)]",
        args="a, b",
    ),
    fgm(
        "flaggems_addr",
        "ops/addr.py",
        "torch.addr",
        NOINIT,
        "addr(c, a, b, beta=0.5, alpha=2.0)",
        "torch.addr(c, a, b, beta=0.5, alpha=2.0)",
        "[torch.randn(M, N), torch.randn(M), torch.randn(N)]",
        args="c, a, b",
    ),
    fgm(
        "flaggems_outer",
        "ops/mul.py+fused/outer.py",
        "torch.outer",
        NOINIT,
        "outer(a, b)",
        "torch.outer(a, b)",
        "[torch.randn(M), torch.randn(N)]",
        args="a, b",
    ),
    fgm(
        "flaggems_nll_loss",
        "ops/nllloss.py",
        "torch.nn.functional.nll_loss",
        NOINIT,
        "nll_loss_forward(x, t)[0]",
        "F.nll_loss(x, t)",
        "[torch.log_softmax(torch.randn(M, N), -1), torch.randint(0, N, (M,))]",
        args="x, t",
    ),
    fgm(
        "flaggems_embedding",
        "ops/embedding.py",
        "torch.nn.Embedding",
        (", v, d", "self.emb = nn.Embedding(v, d)"),
        "embedding(self.emb.weight, idx)",
        "self.emb(idx)",
        "[torch.randint(0, N, (M, 8))]",
        "[N, 64]",
        args="idx",
    ),
    fgm(
        "flaggems_index_select",
        "ops/index_select.py",
        "torch.index_select(dim=0)",
        NOINIT,
        "index_select(x, 0, i)",
        "torch.index_select(x, 0, i)",
        "[torch.randn(M, N), torch.randint(0, M, (M // 2,))]",
        args="x, i",
    ),
    fgm("flaggems_triu", "ops/triu.py", "torch.triu", NOINIT, "triu(x, 1)", "torch.triu(x, 1)", X),
    fgm(
        "flaggems_diag",
        "ops/diag.py",
        "torch.diag (vector to matrix)",
        NOINIT,
        "diag(x, 1)",
        "torch.diag(x, 1)",
        "[torch.randn(N)]",
    ),
    fgm("flaggems_trace", "ops/trace.py", "torch.trace", NOINIT, "trace(x)", "torch.trace(x)", X),
    fgm(
        "flaggems_kron",
        "ops/kron.py",
        "torch.kron",
        NOINIT,
        "kron(a, b)",
        "torch.kron(a, b)",
        "[torch.randn(M // 4, N // 4), torch.randn(8, 8)]",
        args="a, b",
    ),
    fgm("flaggems_topk", "ops/topk.py", "torch.topk", NOINIT, "tuple(topk(x, 8))", "tuple(torch.topk(x, 8))", X),
    fgm(
        "flaggems_cummax",
        "ops/cummax.py",
        "torch.cummax(dim=1)",
        NOINIT,
        "tuple(cummax(x, 1))",
        "tuple(torch.cummax(x, 1))",
        X,
        gpu=LIMITS,
    ),
    fgm(
        "flaggems_avg_pool2d",
        "ops/avg_pool2d.py",
        "torch.nn.functional.avg_pool2d",
        NOINIT,
        "avg_pool2d(x, 3, 2, 1)",
        "F.avg_pool2d(x, 3, 2, 1)",
        "[torch.randn(B, C, H, W)]",
        sizes=IMG,
    ),
    fgm(
        "flaggems_max_pool2d",
        "ops/max_pool2d_with_indices.py",
        "torch.nn.functional.max_pool2d",
        NOINIT,
        "max_pool2d_with_indices(x, 3, 2, 1)[0]",
        "F.max_pool2d(x, 3, 2, 1)",
        "[torch.randn(B, C, H, W)]",
        sizes=IMG,
    ),
    fgm(
        "flaggems_upsample_nearest2d",
        "ops/upsample_nearest2d.py",
        "torch.nn.functional.interpolate(nearest)",
        NOINIT,
        "upsample_nearest2d(x, (2 * x.shape[2], 2 * x.shape[3]))",
        "F.interpolate(x, scale_factor=2, mode='nearest')",
        "[torch.randn(B, C, H, W)]",
        sizes=IMG,
        gpu=HOSTDEV,
    ),
    fgm(
        "flaggems_cat",
        "ops/cat.py",
        "torch.cat(dim=1)",
        NOINIT,
        "cat([a, b], 1)",
        "torch.cat([a, b], 1)",
        "[torch.randn(M, N), torch.randn(M, N // 2)]",
        args="a, b",
    ),
    fgm(
        "flaggems_stack",
        "ops/stack.py",
        "torch.stack",
        NOINIT,
        "stack([a, b], 0)",
        "torch.stack([a, b], 0)",
        TWO,
        args="a, b",
    ),
    fgm(
        "flaggems_silu_and_mul",
        "fused/silu_and_mul.py",
        "silu(a) * b",
        NOINIT,
        "silu_and_mul(a, b)",
        "F.silu(a) * b",
        TWO,
        args="a, b",
    ),
    fgm(
        "flaggems_gelu_and_mul",
        "fused/gelu_and_mul.py",
        "gelu(a) * b",
        NOINIT,
        "gelu_and_mul(a, b)",
        "F.gelu(a) * b",
        TWO,
        args="a, b",
    ),
    fgm(
        "flaggems_skip_layernorm",
        "fused/skip_layernorm.py",
        "LayerNorm(x + residual)",
        (", n", "self.norm = nn.LayerNorm(n)"),
        "skip_layer_norm(x, r, [x.shape[-1]], self.norm.weight, self.norm.bias, self.norm.eps)",
        "self.norm(x + r)",
        TWO,
        "[N]",
        args="x, r",
    ),
    fgm(
        "flaggems_fused_add_rms_norm",
        "fused/fused_add_rms_norm.py",
        "RMSNorm(x + residual), x + residual",
        (", n", "self.norm = nn.RMSNorm(n, eps=1e-6)"),
        "fused_add_rms_norm(x.clone(), r.clone(), [x.shape[-1]], self.norm.weight, self.norm.eps)",
        "(self.norm(x + r), x + r)",
        TWO,
        "[N]",
        args="x, r",
    ),
    fgm(
        "flaggems_cross_entropy",
        "fused/cross_entropy_loss.py",
        "torch.nn.functional.cross_entropy",
        NOINIT,
        "cross_entropy_loss(x, t)",
        "F.cross_entropy(x, t)",
        "[torch.randn(M, N), torch.randint(0, N, (M,))]",
        args="x, t",
    ),
    fgm(
        "flaggems_weight_norm",
        "ops/weightnorm.py+fused/weight_norm.py",
        "torch._weight_norm(dim=0)",
        NOINIT,
        "weight_norm(v, g, 0)",
        "torch._weight_norm(v, g, 0)",
        "[torch.randn(M, N), torch.rand(M, 1) + 0.5]",
        args="v, g",
    ),
]


def lg(name, file, op, init, call, torch_expr, inputs, init_inputs="[]", sizes=ROWS, args="x", gpu=""):
    paths = [f"src/liger_kernel/ops/{f}" for f in file.split("+")]
    return raw(
        name,
        "liger",
        paths,
        op,
        wrapper(init, call, args),
        module(init, torch_expr, inputs, init_inputs, args),
        sizes,
        gpu,
    )


VOCAB = {"cpu": {"M": 8, "N": 200}, "gpu": {"M": 4096, "N": 32000}}
ROPE = {"cpu": {"B": 2, "H": 4, "S": 8, "D": 16}, "gpu": {"B": 8, "H": 32, "S": 2048, "D": 128}}
LIGER = [
    lg(
        "liger_swiglu",
        "swiglu.py",
        "silu(a) * b",
        NOINIT,
        "swiglu_forward(a, b)[2]",
        "F.silu(a) * b",
        TWO,
        args="a, b",
    ),
    lg(
        "liger_geglu",
        "geglu.py",
        "gelu_tanh(a) * b",
        NOINIT,
        "geglu_forward(a, b)[2]",
        "F.gelu(a, approximate='tanh') * b",
        TWO,
        args="a, b",
    ),
    lg(
        "liger_softmax",
        "softmax.py",
        "torch.softmax(dim=-1)",
        NOINIT,
        "_softmax_forward(x)[0]",
        "torch.softmax(x, -1)",
        X,
    ),
    lg(
        "liger_rms_norm",
        "rms_norm.py",
        "torch.nn.RMSNorm",
        (", n", "self.norm = nn.RMSNorm(n, eps=1e-6)"),
        "rms_norm_forward(x, self.norm.weight, self.norm.eps, 0.0, 'llama', None)[0]",
        "self.norm(x)",
        X,
        "[N]",
    ),
    lg(
        "liger_layer_norm",
        "layer_norm.py",
        "torch.nn.LayerNorm",
        (", n", "self.norm = nn.LayerNorm(n)"),
        "layer_norm_forward(x, self.norm.weight, self.norm.bias, self.norm.eps)[0]",
        "self.norm(x)",
        X,
        "[N]",
    ),
    lg(
        "liger_group_norm",
        "group_norm.py",
        "torch.nn.GroupNorm",
        (", c", "self.norm = nn.GroupNorm(4, c)"),
        "group_norm_forward(x, x.shape[1], 4, self.norm.weight, self.norm.bias, self.norm.eps)[0]",
        "self.norm(x)",
        "[torch.randn(B, C, H, W)]",
        "[C]",
        sizes=IMG,
    ),
    lg(
        "liger_dyt",
        "dyt.py",
        "DyT: gamma * tanh(alpha * x) + beta",
        (
            ", n",
            "self.alpha = nn.Parameter(torch.full((1,), 0.5))\n"
            "            self.gamma = nn.Parameter(torch.rand(n) + 0.5)\n"
            "            self.beta = nn.Parameter(torch.randn(n))",
        ),
        "liger_dyt_fwd(x.contiguous(), self.alpha, self.gamma, self.beta)",
        "self.gamma * torch.tanh(self.alpha * x) + self.beta",
        X,
        "[N]",
    ),
    lg(
        "liger_relu_squared",
        "relu_squared.py",
        "relu(x) ** 2",
        NOINIT,
        "relu_squared_forward(x)",
        "torch.relu(x) ** 2",
        X,
    ),
    lg(
        "liger_kl_div",
        "kl_div.py",
        "torch.nn.functional.kl_div(batchmean)",
        NOINIT,
        "kldiv_forward_triton(p, q, False, 'batchmean', 1e-10)",
        "F.kl_div(p, q, reduction='batchmean')",
        "[torch.log_softmax(torch.randn(M, N), -1), torch.softmax(torch.randn(M, N), -1)]",
        sizes=VOCAB,
        args="p, q",
    ),
    lg(
        "liger_jsd",
        "jsd.py",
        "generalized Jensen-Shannon divergence (beta=0.5), mean over rows",
        NOINIT,
        "jsd_forward(p, q, None, 0.5, -100, False)[0]",
        "(0.5 * (q.exp() * (q - torch.log(0.5 * (p.exp() + q.exp())))).sum() + "
        "0.5 * (p.exp() * (p - torch.log(0.5 * (p.exp() + q.exp())))).sum()) / p.shape[0]",
        "[torch.log_softmax(torch.randn(M, N), -1), torch.log_softmax(torch.randn(M, N), -1)]",
        sizes=VOCAB,
        args="p, q",
    ),
    lg(
        "liger_tvd",
        "tvd.py",
        "total variation distance, mean over rows",
        NOINIT,
        "tv_distance_forward_triton(p, q, None, 'batchmean', -100, False)[0]",
        "0.5 * (p - q).abs().sum() / p.shape[0]",
        "[torch.softmax(torch.randn(M, N), -1), torch.softmax(torch.randn(M, N), -1)]",
        sizes=VOCAB,
        args="p, q",
    ),
    lg(
        "liger_sparsemax",
        "sparsemax.py",
        "sparsemax(dim=-1)",
        NOINIT,
        "_sparsemax_forward(x, -1)[0]",
        "_sparsemax(x)",
        X,
    ),
    lg(
        "liger_rope",
        "rope.py",
        "rotary position embedding (HF apply_rotary_pos_emb)",
        NOINIT,
        "rope_forward(q, k, cos, sin)[:2]",
        "(q * cos.unsqueeze(1) + _rotate_half(q) * sin.unsqueeze(1), "
        "k * cos.unsqueeze(1) + _rotate_half(k) * sin.unsqueeze(1))",
        "[torch.randn(B, H, S, D), torch.randn(B, H, S, D), *_cos_sin()]",
        sizes=ROPE,
        args="q, k, cos, sin",
    ),
    lg(
        "liger_cross_entropy",
        "cross_entropy.py",
        "torch.nn.functional.cross_entropy",
        NOINIT,
        "cross_entropy_forward(x, t, None, -100, 0.0, 0.0, 'mean', None, False)[0]",
        "F.cross_entropy(x, t)",
        "[torch.randn(M, N), torch.randint(0, N, (M,))]",
        sizes=VOCAB,
        args="x, t",
    ),
    lg(
        "liger_fused_add_rms_norm",
        "fused_add_rms_norm.py",
        "RMSNorm(x + residual), x + residual",
        (", n", "self.norm = nn.RMSNorm(n, eps=1e-6)"),
        "fused_add_rms_norm_forward(x, r, self.norm.weight, self.norm.eps, 0.0, 'llama')[:2]",
        "(self.norm(x + r), x + r)",
        TWO,
        "[N]",
        args="x, r",
    ),
]


LIGER_MORE = [
    lg(
        "liger_poly_norm",
        "poly_norm.py",
        "PolyNorm: w0 norm(x^3) + w1 norm(x^2) + w2 norm(x) + b",
        (
            "",
            "self.weight = nn.Parameter(torch.tensor([0.3, 0.5, 0.7]))\n"
            "            self.bias = nn.Parameter(torch.tensor(0.1))",
        ),
        "poly_norm_forward(x, self.weight, self.bias, 1e-6)[0]",
        "self.weight[0] * _rms(x**3) + self.weight[1] * _rms(x**2) + self.weight[2] * _rms(x) + self.bias",
        X,
    ),
    Entry(
        **{
            **lg(
                "liger_selective_log_softmax",
                "grpo_loss.py",
                "log_softmax(logits[:, :-1] / T).gather(ids) (GRPO's per-token log-probabilities)",
                NOINIT,
                "fused_selective_log_softmax(logits, ids, 0.9)",
                "torch.log_softmax(logits[:, :-1].float() / 0.9, -1)"
                ".gather(-1, ids[:, -(logits.shape[1] - 1):, None])[..., 0]",
                "[torch.randn(B, L + 1, V), torch.randint(0, V, (B, L))]",
                sizes={"cpu": {"B": 2, "L": 6, "V": 300}, "gpu": {"B": 8, "L": 1024, "V": 32000}},
                args="logits, ids",
            ).__dict__,
            "select": ("_selective_log_softmax_kernel", "fused_selective_log_softmax"),
        }
    ),
]


def at(
    name, files, op, new_init, call, init, torch_expr, inputs=X, init_inputs="[]", sizes=ELEMENTWISE, args="x", gpu=""
):
    """An attorch kernel: its files (dependencies first, as `from .x import` orders them) and a ModelNew holding the
    library's layer, as attorch's users hold it (`attorch.LayerNorm(n)` in place of `nn.LayerNorm(n)`)."""
    paths = [f"attorch/{f}.py" for f in ("utils", "types", *files)]
    return raw(
        name,
        "attorch",
        paths,
        op,
        wrapper(new_init, call, args),
        module(init, torch_expr, inputs, init_inputs, args),
        sizes,
        gpu,
    )


ACT = ("dropout_kernels", "act_kernels", "act_layers")
NOT_ON_CPU_TF32 = "asks torch.cuda for the device capability (TF32) on the host"


def at_act(name, layer, torch_expr, op):
    return at(name, ACT, op, ("", f"self.act = {layer}"), "self.act(x)", NOINIT, torch_expr)


ATTORCH = [
    at_act("attorch_sigmoid", "Sigmoid()", "torch.sigmoid(x)", "torch.sigmoid"),
    at_act("attorch_tanh", "Tanh()", "torch.tanh(x)", "torch.tanh"),
    at_act("attorch_gelu_tanh", "GELU(approximate='tanh')", "F.gelu(x, approximate='tanh')", "F.gelu(tanh)"),
    at_act("attorch_silu", "SiLU()", "F.silu(x)", "torch.nn.functional.silu"),
    at_act("attorch_relu6", "ReLU6()", "F.relu6(x)", "torch.nn.functional.relu6"),
    at_act("attorch_hardsigmoid", "Hardsigmoid()", "F.hardsigmoid(x)", "torch.nn.functional.hardsigmoid"),
    at_act("attorch_hardtanh", "Hardtanh()", "F.hardtanh(x)", "torch.nn.functional.hardtanh"),
    at_act("attorch_hardswish", "Hardswish()", "F.hardswish(x)", "torch.nn.functional.hardswish"),
    at_act("attorch_selu", "SELU()", "F.selu(x)", "torch.nn.functional.selu"),
    at_act("attorch_mish", "Mish()", "F.mish(x)", "torch.nn.functional.mish"),
    at_act("attorch_softsign", "Softsign()", "F.softsign(x)", "torch.nn.functional.softsign"),
    at_act("attorch_tanhshrink", "Tanhshrink()", "F.tanhshrink(x)", "torch.nn.functional.tanhshrink"),
    at_act(
        "attorch_leaky_relu",
        "LeakyReLU(negative_slope=0.1)",
        "F.leaky_relu(x, 0.1)",
        "torch.nn.functional.leaky_relu",
    ),
    at_act("attorch_hardshrink", "Hardshrink(0.5)", "F.hardshrink(x, 0.5)", "torch.nn.functional.hardshrink"),
    at_act("attorch_softshrink", "Softshrink(0.5)", "F.softshrink(x, 0.5)", "torch.nn.functional.softshrink"),
    at(
        "attorch_softmax",
        ("softmax_kernels", "softmax_layers"),
        "torch.softmax(dim=-1)",
        ("", "self.softmax = Softmax(dim=-1)"),
        "self.softmax(x)",
        NOINIT,
        "torch.softmax(x, -1)",
        sizes=ROWS,
    ),
    at(
        "attorch_log_softmax",
        ("softmax_kernels", "softmax_layers"),
        "torch.log_softmax(dim=-1)",
        ("", "self.log_softmax = LogSoftmax(dim=-1)"),
        "self.log_softmax(x)",
        NOINIT,
        "torch.log_softmax(x, -1)",
        sizes=ROWS,
    ),
    at(
        "attorch_softmin",
        ("softmax_kernels", "softmax_layers"),
        "torch.nn.functional.softmin(dim=-1)",
        ("", "self.softmin = Softmin(dim=-1)"),
        "self.softmin(x)",
        NOINIT,
        "F.softmin(x, -1)",
        sizes=ROWS,
    ),
    at(
        "attorch_layer_norm",
        ("softmax_kernels", "layer_norm_kernels", "layer_norm_layer"),
        "torch.nn.LayerNorm",
        (", n", "self.norm = LayerNorm(n, device=None)"),
        "self.norm(x)",
        (", n", "self.norm = nn.LayerNorm(n)"),
        "self.norm(x)",
        init_inputs="[N]",
        sizes=ROWS,
    ),
    at(
        "attorch_rms_norm",
        ("softmax_kernels", "rms_norm_kernels", "rms_norm_layer"),
        "torch.nn.RMSNorm",
        (", n", "self.norm = RMSNorm(n, eps=1e-6, device=None)"),
        "self.norm(x)",
        (", n", "self.norm = nn.RMSNorm(n, eps=1e-6)"),
        "self.norm(x)",
        init_inputs="[N]",
        sizes=ROWS,
    ),
    at(
        "attorch_batch_norm",
        ("dropout_kernels", "act_kernels", "batch_norm_kernels", "batch_norm_layer"),
        "torch.nn.BatchNorm2d (eval)",
        (", c", "self.bn = BatchNorm2d(c, device=None)"),
        "self.bn(x)",
        (", c", "self.bn = nn.BatchNorm2d(c)"),
        "self.bn(x)",
        "[torch.randn(B, C, H, W)]",
        init_inputs="[C]",
        sizes=IMG,
        gpu="allocates its placeholder residual on device 'cuda'",
    ),
    at(
        "attorch_glu",
        ("dropout_kernels", "act_kernels", "glu_kernels", "glu_layer"),
        "torch.nn.functional.glu(dim=-1)",
        ("", "self.glu = GLU(dim=-1)"),
        "self.glu(x)",
        NOINIT,
        "F.glu(x, -1)",
        sizes=ROWS,
    ),
    at(
        "attorch_cross_entropy",
        ("softmax_kernels", "cross_entropy_loss_kernels", "cross_entropy_loss_layer"),
        "torch.nn.functional.cross_entropy",
        ("", "self.loss = CrossEntropyLoss()"),
        "self.loss(x, t)",
        NOINIT,
        "F.cross_entropy(x, t)",
        "[torch.randn(M, N), torch.randint(0, N, (M,))]",
        sizes=VOCAB,
        args="x, t",
    ),
    at(
        "attorch_nll_loss",
        ("nll_loss_kernels", "nll_loss_layer"),
        "torch.nn.functional.nll_loss",
        ("", "self.loss = NLLLoss()"),
        "self.loss(x, t)",
        NOINIT,
        "F.nll_loss(x, t)",
        "[torch.log_softmax(torch.randn(M, N), -1), torch.randint(0, N, (M,))]",
        sizes=VOCAB,
        args="x, t",
    ),
    at(
        "attorch_l1_loss",
        ("p_loss_kernels", "p_loss_layers"),
        "torch.nn.functional.l1_loss",
        ("", "self.loss = L1Loss()"),
        "self.loss(x, y)",
        NOINIT,
        "F.l1_loss(x, y)",
        TWO,
        args="x, y",
    ),
    at(
        "attorch_mse_loss_sum",
        ("p_loss_kernels", "p_loss_layers"),
        "torch.nn.functional.mse_loss(reduction='sum')",
        ("", "self.loss = MSELoss(reduction='sum')"),
        "self.loss(x, y)",
        NOINIT,
        "F.mse_loss(x, y, reduction='sum')",
        TWO,
        args="x, y",
    ),
    at(
        "attorch_smooth_l1_loss",
        ("p_loss_kernels", "p_loss_layers"),
        "torch.nn.functional.smooth_l1_loss(reduction='none')",
        ("", "self.loss = SmoothL1Loss(reduction='none', beta=0.5)"),
        "self.loss(x, y)",
        NOINIT,
        "F.smooth_l1_loss(x, y, reduction='none', beta=0.5)",
        TWO,
        args="x, y",
    ),
    at(
        "attorch_huber_loss",
        ("p_loss_kernels", "p_loss_layers"),
        "torch.nn.functional.huber_loss",
        ("", "self.loss = HuberLoss(delta=0.7)"),
        "self.loss(x, y)",
        NOINIT,
        "F.huber_loss(x, y, delta=0.7)",
        TWO,
        args="x, y",
    ),
    at(
        "attorch_linear_gelu",
        ("dropout_kernels", "act_kernels", "linear_kernels", "linear_layer"),
        "gelu(torch.nn.Linear)",
        (", k, n", "self.fc = nn.Linear(k, n)"),
        "LinearAutoGrad.apply(x, self.fc.weight.t(), self.fc.bias, 'gelu')",
        (", k, n", "self.fc = nn.Linear(k, n)"),
        "F.gelu(self.fc(x))",
        "[torch.randn(M, K)]",
        init_inputs="[K, N]",
        sizes=MM,
        gpu=NOT_ON_CPU_TF32,
    ),
    at(
        "attorch_conv2d",
        ("conv_kernels", "conv_layer"),
        "torch.nn.Conv2d(3x3, padding 1)",
        (", c", "self.conv = Conv2d(c, 2 * c, 3, padding=1, device=None)"),
        "self.conv(x)",
        (", c", "self.conv = nn.Conv2d(c, 2 * c, 3, padding=1)"),
        "self.conv(x)",
        "[torch.randn(B, C, H, W)]",
        init_inputs="[C]",
        sizes=IMG,
        gpu=NOT_ON_CPU_TF32,
    ),
]


def un(name, file, op, select, init, call, torch_expr, inputs, init_inputs="[]", sizes=ROWS, args="x", gpu=""):
    """An unsloth kernel: the named top-level definitions of its file (the rest patches transformers) and a
    ModelNew calling the library's entry point."""
    entry = raw(
        name,
        "unsloth",
        [f"unsloth/kernels/{file}"],
        op,
        wrapper(init, call, args),
        module(init, torch_expr, inputs, init_inputs, args),
        sizes,
        gpu,
    )
    return Entry(**{**entry.__dict__, "select": tuple(select)})


SEQ = {"cpu": {"B": 2, "S": 8, "N": 100}, "gpu": {"B": 8, "S": 2048, "N": 4096}}
SEQ2 = "[torch.randn(B, S, N), torch.randn(B, S, N)]"
INT32 = ("NUM_INT32_ELEMENTS", "SAFE_INT32_BUFFER_MULTIPLIER", "BLOCK_SIZE", "INT32_SAFETY_BUFFER")
UNSLOTH_RMS = ("_rms_layernorm_forward", "_gemma_rms_layernorm_forward", "Fast_RMS_Layernorm", "fast_rms_layernorm")
UNSLOTH = [
    un(
        "unsloth_rms_layernorm",
        "rms_layernorm.py",
        "LlamaRMSNorm (torch.nn.RMSNorm)",
        UNSLOTH_RMS,
        (", n", "self.norm = nn.RMSNorm(n, eps=1e-6)"),
        "fast_rms_layernorm(self.norm, x)",
        "self.norm(x)",
        X,
        "[N]",
    ),
    un(
        "unsloth_gemma_rms_layernorm",
        "rms_layernorm.py",
        "GemmaRMSNorm: x * rsqrt(mean(x^2) + eps) * (1 + w)",
        UNSLOTH_RMS,
        (", n", "self.norm = nn.RMSNorm(n, eps=1e-6)"),
        "fast_rms_layernorm(self.norm, x, gemma=True)",
        "x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * (1 + self.norm.weight)",
        X,
        "[N]",
    ),
    un(
        "unsloth_layernorm",
        "layernorm.py",
        "torch.nn.LayerNorm",
        ("layernorm_forward", "Fast_Layernorm", "fast_layernorm"),
        (", n", "self.norm = nn.LayerNorm(n)"),
        "fast_layernorm(self.norm, x)",
        "self.norm(x)",
        X,
        "[N]",
    ),
    un(
        "unsloth_swiglu",
        "swiglu.py",
        "silu(e) * g",
        (*INT32, "_fg_kernel", "swiglu_fg_kernel"),
        NOINIT,
        "swiglu_fg_kernel(e, g)",
        "F.silu(e) * g",
        SEQ2,
        sizes=SEQ,
        args="e, g",
    ),
    un(
        "unsloth_geglu_exact",
        "geglu.py",
        "gelu(gate) * up",
        (*INT32, "_exact_forward_kernel", "geglu_exact_forward_kernel"),
        NOINIT,
        "geglu_exact_forward_kernel(gate, up)",
        "F.gelu(gate) * up",
        SEQ2,
        sizes=SEQ,
        args="gate, up",
    ),
    un(
        "unsloth_geglu_approx",
        "geglu.py",
        "gelu_tanh(gate) * up",
        (*INT32, "_approx_forward_kernel", "geglu_approx_forward_kernel"),
        NOINIT,
        "geglu_approx_forward_kernel(gate, up)",
        "F.gelu(gate, approximate='tanh') * up",
        SEQ2,
        sizes=SEQ,
        args="gate, up",
    ),
    un(
        "unsloth_rope",
        "rope_embedding.py",
        "rotary position embedding (HF apply_rotary_pos_emb)",
        ("ROPE_GROUP_SIZE", "_rope_embedding", "Fast_RoPE_Embedding", "fast_rope_embedding"),
        NOINIT,
        "fast_rope_embedding(q, k, cos, sin)",
        "(q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin)",
        "[torch.randn(B, H, S, D), torch.randn(B, H, S, D), *_cos_sin()]",
        sizes=ROPE,
        args="q, k, cos, sin",
    ),
    un(
        "unsloth_cross_entropy",
        "cross_entropy_loss.py",
        "torch.nn.functional.cross_entropy over (batch, seq) tokens",
        (
            "_cross_entropy_forward",
            "_chunked_cross_entropy_forward",
            "Fast_CrossEntropyLoss",
            "fast_cross_entropy_loss",
        ),
        NOINIT,
        "fast_cross_entropy_loss(logits, labels)",
        "F.cross_entropy(logits.flatten(0, 1), labels.flatten())",
        "[torch.randn(B, S, V), torch.randint(0, V, (B, S))]",
        sizes={"cpu": {"B": 2, "S": 4, "V": 200}, "gpu": {"B": 8, "S": 1024, "V": 32000}},
        args="logits, labels",
    ),
]

ENTRIES: list[Entry] = FLAGGEMS_POINTWISE + FLAGGEMS_OTHER + LIGER + LIGER_MORE + ATTORCH + UNSLOTH

PROBLEM_HELPERS = {
    "liger_sparsemax": '''
def _sparsemax(x):
    """Sparsemax over the last dimension (Martins & Astudillo, 2016), sorted-threshold form."""
    z, _ = torch.sort(x, dim=-1, descending=True)
    k = torch.arange(1, x.shape[-1] + 1, dtype=x.dtype, device=x.device)
    cumsum = z.cumsum(-1)
    support = (1 + k * z) > cumsum
    k_z = support.sum(-1, keepdim=True)
    tau = (cumsum.gather(-1, k_z - 1) - 1) / k_z.to(x.dtype)
    return torch.clamp(x - tau, min=0)
''',
    "liger_rope": """
def _rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def _cos_sin():
    inv_freq = 1.0 / (10000 ** (torch.arange(0, D, 2, dtype=torch.float32) / D))
    angles = torch.outer(torch.arange(S, dtype=torch.float32), inv_freq)
    emb = torch.cat((angles, angles), dim=-1)
    return [emb.cos()[None].expand(B, S, D).contiguous(), emb.sin()[None].expand(B, S, D).contiguous()]
""",
    "liger_poly_norm": """
def _rms(u):
    return u * torch.rsqrt(u.pow(2).mean(-1, keepdim=True) + 1e-6)
""",
    "unsloth_rope": """
def _rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def _cos_sin():
    inv_freq = 1.0 / (10000 ** (torch.arange(0, D, 2, dtype=torch.float32) / D))
    angles = torch.outer(torch.arange(S, dtype=torch.float32), inv_freq)
    emb = torch.cat((angles, angles), dim=-1)
    return [emb.cos(), emb.sin()]
""",
}
