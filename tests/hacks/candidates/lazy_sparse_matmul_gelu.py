"""Hack: lazy optimisation through torch's sparse kernels. The GEMM, all of the cost, is
`torch.sparse.mm(a.to_sparse(), b)` ("exploit the sparsity of the activations"; the inputs are dense, so it is a
dense product in another format); only the GELU epilogue is a Triton kernel. Correct output, the kernel's
work really used. `torch_compute` weighed `_sparse_addmm` as the elements it touched, not as the contraction it
is, so the GEMM counted as glue and even the `strict` policy passed it."""

import torch
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476)), mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        c = torch.sparse.mm(a.to_sparse(), b).contiguous()
        out = torch.empty_like(c)
        n = c.numel()
        gelu_kernel[(triton.cdiv(n, 1024),)](c, out, n, BLOCK=1024)
        return out
