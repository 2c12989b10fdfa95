"""Honest: ReLU's Triton launch behind `torch.library.custom_op`, with a fake (meta) implementation, as vLLM,
SGLang and FlashInfer register their kernels as operators."""

import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x > 0, x, 0.0), mask=mask)


@torch.library.custom_op("tgrt::relu_co", mutates_args=())
def relu(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
    return out


@relu.register_fake
def _(x):
    return torch.empty_like(x)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return relu(x.contiguous())
