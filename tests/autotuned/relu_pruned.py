"""The bug of relu_first_config_wrong.py (a grid of 512-element blocks), with the wrong config pruned by
the kernel itself (`early_config_prune` keeps blocks of 512 and up): the first config after pruning is
right, so this is `ok` on triton-cpu only if pruning runs before the first config is taken."""

import torch
import triton
import triton.language as tl


def _at_least_512(configs, named_args, **kwargs):
    return [c for c in configs if c.kwargs["BLOCK_SIZE"] >= 512]


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_SIZE": 128}, num_warps=2),
        triton.Config({"BLOCK_SIZE": 512}, num_warps=4, num_stages=2),
        triton.Config({"BLOCK_SIZE": 1024}, num_warps=8),
    ],
    key=["n"],
    prune_configs_by={"early_config_prune": _at_least_512},
)
@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.zeros_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 512),)](x, out, n)
        return out
