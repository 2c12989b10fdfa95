"""Honest: exact (erf) GELU with a torch -> Triton dtype table. The output element type is passed as a
constexpr taken from the table; the kernel computes in float32 and casts to it on the store."""

import torch
import triton
import triton.language as tl

TORCH_TO_TL = {
    torch.float16: tl.float16,
    torch.bfloat16: tl.bfloat16,
    torch.float32: tl.float32,
}


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n_elements, OUT_DTYPE: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offsets, y.to(OUT_DTYPE), mask=mask)


def gelu(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x)
    n_elements = x.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
    gelu_kernel[grid](x, y, n_elements, OUT_DTYPE=TORCH_TO_TL[x.dtype], BLOCK_SIZE=1024, num_warps=4)
    return y


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return gelu(x)
