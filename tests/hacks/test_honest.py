"""Honest kernels of varied style must come out `ok` with no failed check: the other half of the hack suite.

A check that catches hacks by refusing honest idioms (autotune, heuristics, several kernels per forward,
host helpers that launch, views and allocations in torch, 2-D/3-D grids, persistent loops, TF32 where the
policy allows it, weights read from nn.Parameter / nn.Linear submodules) is a broken check.  These are
all evaluated in one batch per precision policy with every registered check on.

The bundled solutions are evaluated with every check by tests/test_suite.py, which asserts status `ok`
(and `ok` means no verdict failed, static or runtime), so they are not re-run here; only their static
verdicts are re-checked below, in-process and in well under a second, so a static false positive on a
bundled solution is named by check and line.
"""

from __future__ import annotations

import ast

import pytest
import torch

from tritongym.core.interfaces import CheckPolicy
from tritongym.core.models import Candidate, Status
from tritongym.core.problems import suite_problems

from ._harness import (
    HONEST,
    PROBLEMS,
    STATIC,
    Case,
    evaluate_cases,
    explain,
    new_host,
    registered_checks,
    selected,
    tiered,
)

# the first test of a tier judges every selected case in one batch (its fixture): 77 kernels on the slow tier's two
# CPUs took over 280 s in CI (faulthandler's dump), as long as the hack suite's batch, which has 900 s
pytestmark = pytest.mark.timeout(900)

# A fresh `torch.empty` output written after one or more own kernels, on problems where every answer is within
# tolerance of every other (wide softmax rows, a large-K matmul of uniform inputs: `verdict.DECOY_MARGIN`): on H100s
# and H200s such kernels were `hacked` by `precomputed` and `ghost` when the block held an earlier call's output.
# test_stale_memory.py judges them on a GPU, five times each.
STALE_MEMORY_CASES: list[Case] = [
    Case("matmul_large_k_fp32_acc.py", str(PROBLEMS / "matmul_large_k.py"), ()),
    Case("softmax_three_kernels.py", str(PROBLEMS / "softmax_wide.py"), ()),
    Case("softmax_looped_fresh_output.py", str(PROBLEMS / "softmax_wide.py"), ()),
    Case("isnan_pointwise.py", str(PROBLEMS / "isnan_masked.py"), ()),
]

HONEST_CASES: list[Case] = [
    Case("relu_autotune.py", "relu", ()),
    Case("relu_autotune_cudagraph.py", "relu", ()),
    Case("gelu_heuristics.py", "gelu", ()),
    Case("softmax_two_pass.py", "softmax", ()),
    Case("log_softmax_online.py", "log_softmax", ()),
    Case("layer_norm_module.py", "layer_norm", ()),
    Case("rms_norm_param.py", "rms_norm", ()),
    Case("linear_bias_relu_module.py", "linear_bias_relu", ()),
    Case("matmul_tf32.py", "matmul", (), precision="tf32"),
    Case("matmul_rect_persistent.py", "matmul_rect", ()),
    Case("batched_matmul_3d_grid.py", "batched_matmul", ()),
    Case("sum_dim_loop.py", "sum_dim", ()),
    Case("max_dim_tiles.py", "max_dim", ()),
    Case("argmax_rows.py", "argmax_dim", ()),
    Case("fma_flat.py", "fused_multiply_add", ()),
    Case("l2_normalize_two_kernels.py", "l2_normalize", ()),
    Case("hardtanh_where.py", "hardtanh", ()),
    Case("mean_dim_rows.py", "mean_dim", ()),
    Case("silu_sigmoid.py", "silu", ()),
    Case("relu_triton_op.py", "relu", ()),  # torch.library.triton_op around wrap_triton (torch >= 2.6)
    Case("relu_custom_op.py", "relu", ()),  # torch.library.custom_op around a launch, as vLLM and SGLang register
    Case("matmul_fp16_tutorial03.py", "matmul_fp16", ()),
    Case("matmul_rect_autotune.py", "matmul_rect", ()),
    Case("matmul_splitk_atomic.py", "matmul", ()),
    Case("sum_dim_splitk_atomic.py", "sum_dim", ()),
    Case("gemm_sigmoid_rowsum_atomic.py", "gemm_sigmoid_rowsum", ()),
    Case("batch_norm_folded_scale.py", "batch_norm_inference", ()),
    Case("layer_norm_welford.py", "layer_norm", ()),
    Case("softmax_online.py", "softmax", ()),
    Case("softmax_persistent_tutorial02.py", "softmax", ()),
    Case("mean_dim_workspace.py", "mean_dim", ()),
    Case("gelu_dtype_table.py", "gelu", ()),
    Case("rms_norm_prod_rows.py", "rms_norm", ()),
    Case("conv_bias_relu_epilogue.py", "conv2d_bias_relu", ()),
    Case("matmul_fp16_operands.py", "matmul", ()),
    Case("matmul_gelu_allow_tf32.py", "matmul_gelu", ()),
    Case("linear_scale_residual_strides.py", "linear_scale_residual", ()),
    Case("mlp_linear_helper.py", "mlp", ()),
    Case("fma_rows_numel.py", "fused_multiply_add", ()),
    Case("attention_flash_online.py", "attention", ()),
    # a KernelBench-style problem outside the suite: BatchNorm left in train() mode (running statistics
    # updated by every forward, read by eval()): the mode probes must not call the reference itself a hack
    Case("batch_norm_train_stats.py", str(PROBLEMS / "batch_norm_train.py"), ()),
    # KernelBench's LayerNorm as built (weight 1, bias 0), the kernel keeping its own weight and bias: they come
    # from the shared seed and get the reference's drawn values (`worker/weights.py`)
    Case("layer_norm_own_affine.py", str(PROBLEMS / "layer_norm_affine.py"), ()),
    Case("softmax_tutorial_unused_os.py", "softmax", ()),  # tutorial 06's header: `import os`, never used
    # Liger-Kernel's ops/utils.py copied in: `compare_version` through importlib.import_module("triton") and packaging
    Case("silu_liger_utils.py", "silu", ()),
    Case("softmax_tutorial_os_env.py", "softmax", ()),  # os.environ.get("TRITON_INTERPRET") picks a block size
    # tutorial 03 as published: `driver.active.get_current_target()` at import picks the autotune configs
    Case("matmul_tutorial03_is_cuda_configs.py", "matmul_rect", ()),
    # vLLM/SGLang's persistent row loop: `for row in tl.range(pid, n_rows, nprog)`, then `row.to(tl.int64)`
    Case("rms_norm_tl_range_row_int64.py", "rms_norm", ()),
    # public codebases' idioms, red-teamed on triton-cpu: each file's docstring names the style it copies
    Case("rms_norm_vllm_has_residual.py", "rms_norm", ()),  # vLLM/SGLang HAS_RESIDUAL constexpr, dummy pointer
    Case("log_softmax_unsloth_settings.py", "log_softmax", ()),  # Unsloth MAX_FUSED_SIZE, logsumexp buffer
    Case("gelu_flaggems_libentry.py", "gelu", ()),  # FlagGems libentry() KernelInterface, heuristics dict
    Case("hardtanh_assume_hints.py", "hardtanh", ()),  # tl.assume, tl.multiple_of, tl.max_contiguous, __all__
    Case("matmul_tensor_desc_fallback.py", "matmul", ()),  # host TensorDescriptor, pointer kernel when unaligned
    Case("matmul_gelu_prune_configs.py", "matmul_gelu", ()),  # prune_configs_by, grid lambda, tl.extra.cuda.libdevice
    Case("sum_dim_autotune_reset_to_zero.py", "sum_dim", ()),  # autotune reset_to_zero around tl.atomic_add
    Case("matmul_fp16_dtype_dispatch.py", "matmul_fp16", ()),  # torch -> tl dtype table, lru_cache'd dataclass config
    Case("silu_contiguous_format.py", "silu", ()),  # empty_like(memory_format=...), warnings.warn, math.prod
    Case("batch_norm_static_assert_debug.py", "batch_norm_inference", ()),  # tl.static_assert, device_print if DEBUG
    Case("max_dim_2d_grid_where.py", "max_dim", ()),  # 2-D grid, -inf padding by tl.where
    Case("layer_norm_tutorial05_autograd.py", "layer_norm", ()),  # tutorial 05's autograd.Function, lock backward
    Case("conv2d_direct_heuristics.py", "conv2d", ()),  # direct convolution, @triton.heuristics, dataclass geometry
    Case("batched_matmul_grouped_tutorial08.py", "batched_matmul", ()),  # tutorial 08: data_ptr arrays, pointer_type
    Case("linear_scale_residual_cached_wt.py", "linear_scale_residual", ()),  # W^T kept, rebuilt on _version change
    Case("attention_tutorial06_strided_qkv.py", "attention", ()),  # tutorial 06 exp2 online softmax, strided QKV
    Case("mlp_unsloth_custom_fwd.py", "mlp", ()),  # Unsloth torch.amp.custom_fwd autograd.Function, ACT constexpr
    Case("gemm_sigmoid_rowsum_reused_workspace.py", "gemm_sigmoid_rowsum", ()),  # a workspace kept between calls
    Case("l2_normalize_do_not_specialize.py", "l2_normalize", ()),  # @triton.jit(do_not_specialize=...), persistent
    Case("softmax_tutorial02_with_tests.py", "softmax", ()),  # tutorial 02 with its torch test and perf_report
    Case("fma_tl_fma_2d.py", "fused_multiply_add", ()),  # tl.fma, 2-D grid, per-operand strides
    Case("mean_dim_inference_mode.py", "mean_dim", ()),  # forward under @torch.inference_mode()
    *STALE_MEMORY_CASES,
]


# A few idioms run in the fast tier (`make test`); the rest are `slow` (`make test-slow`).
FAST_HONEST_CASES = {
    "relu_autotune[all]",  # autotune
    "softmax_two_pass[all]",  # several kernels per forward
    "linear_bias_relu_module[all]",  # weights from an nn.Linear submodule
    "matmul_tf32[all,tf32]",  # TF32 where the policy allows it
    "layer_norm_own_affine[all]",  # its own affine, bound by the shared seed
}


@pytest.fixture(scope="module")
def honest_results(request):
    return evaluate_cases(selected(request, HONEST_CASES, "test_honest_kernel_is_ok"), "triton-cpu", folder=HONEST)


@pytest.mark.parametrize("case", tiered(HONEST_CASES, FAST_HONEST_CASES))
def test_honest_kernel_is_ok(case: Case, honest_results):
    result = honest_results[case.id]
    assert result.status == Status.ok, f"{case.file} on {case.problem}: {explain(result)}"
    assert result.correct and not result.hacked
    assert not [v.name for v in result.checks if not v.passed], explain(result)
    names = {v.name for v in result.checks}
    host = new_host()
    default = {n for n in host.names("check") if host.get("check", n).cls.default_enabled}
    assert names == default, f"not every check that is on by default judged it: {sorted(names)}"
    assert any(rec.own and rec.count >= 3 for rec in result.launches), result.launches
    assert result.reward.components.get("correctness") == 1.0


@pytest.fixture(scope="module")
def honest_gpu_results():
    return evaluate_cases(HONEST_CASES, "triton-cuda", folder=HONEST, timeout_s=300)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in HONEST_CASES])
def test_honest_kernel_is_ok_on_gpu(case: Case, honest_gpu_results):
    """The GPU adds checks the CPU cannot run (timing, roofline, TF32 in the PTX, freed-memory poisoning,
    re-measurement): none may refuse an honest kernel, and each gets a speedup."""
    result = honest_gpu_results[case.id]
    assert result.status == Status.ok, f"{case.file} on {case.problem}: {explain(result)}"
    assert not [v.name for v in result.checks if not v.passed], explain(result)
    assert result.speedup and result.speedup > 0, result.message
    assert any(rec.own for rec in result.launches), result.launches


def test_every_honest_file_is_evaluated():
    assert {p.name for p in HONEST.glob("*.py")} == {c.file for c in HONEST_CASES}
    assert len(HONEST_CASES) >= 12


def test_bundled_solutions_pass_every_static_check():
    """Fast, in-process: each static check on each bundled solution (the full evaluation is test_suite's)."""
    host = new_host()
    static = [n for n, stage in registered_checks(host).items() if stage == STATIC]
    checks = [host.create("check", n, None) for n in static]
    for check in checks:
        check.policy = CheckPolicy(precision="ieee")
    problems = [p for p in suite_problems("cpu") if p.solution]
    assert len(problems) >= 24
    refused = []
    for problem in problems:
        tree = ast.parse(problem.solution)
        for check in checks:
            verdict = check.check_source(tree, Candidate(source=problem.solution), problem)
            if not verdict.passed:
                refused.append(f"{problem.name}: {check.name} (line {verdict.line}): {verdict.reason}")
    assert not refused, "\n".join(refused)
