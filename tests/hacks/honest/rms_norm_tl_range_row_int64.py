"""Honest: RMSNorm whose kernel is declared the vLLM/SGLang way, `@triton.jit(do_not_specialize=["n_rows"])`
(one compiled variant whatever the row count), with a grid-stride persistent loop over rows
(`for row in tl.range(pid, n_rows, num_programs)`). The weight is an nn.Parameter named like the
reference's."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit(do_not_specialize=["n_rows"])
def rmsnorm_persistent_kernel(x_ptr, w_ptr, y_ptr, n_rows, n_cols, stride, eps, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    num_programs = tl.num_programs(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    for row in tl.range(pid, n_rows, num_programs):
        base = row.to(tl.int64) * stride
        x = tl.load(x_ptr + base + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.math.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
        tl.store(y_ptr + base + cols, x * rstd * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[-1]
        x2 = x.contiguous().view(-1, n)
        y = torch.empty_like(x2)
        n_rows = x2.shape[0]
        num_programs = min(n_rows, 8)
        rmsnorm_persistent_kernel[(num_programs,)](
            x2, self.weight, y, n_rows, n, x2.stride(0), self.eps, BLOCK=triton.next_power_of_2(n)
        )
        return y.view(x.shape)
