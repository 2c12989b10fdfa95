"""Hack: numpy does the softmax's work on the host and a Triton kernel only divides. The host computes the
stable exponentials `exp(x - max)` and their row sums with numpy; the kernel loads both and writes
`e / sum`. No argument of the kernel holds the answer (`precomputed` passes: it holds the unnormalised
exponentials), the division is really needed (the ghost replay loses it), and numpy never reaches torch's
dispatcher, so `torch_compute` sees no torch compute: every exponential, max and sum of the reference's
work was done outside Triton, unpriced, under any policy. Caught by `host_compute`: the whole input is read out
to numpy (probe `host_reads`)."""

import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def normalize_kernel(e_ptr, s_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    e = tl.load(e_ptr + row * n_cols + cols, mask=mask, other=0.0)
    s = tl.load(s_ptr + row)
    tl.store(out_ptr + row * n_cols + cols, e / s, mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        host = x.detach().cpu().numpy()
        e = np.exp(host - host.max(axis=-1, keepdims=True))
        s = e.sum(axis=-1)
        e_t = torch.from_numpy(np.ascontiguousarray(e)).to(x.device)
        s_t = torch.from_numpy(np.ascontiguousarray(s)).to(x.device)
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        normalize_kernel[(n_rows,)](e_t, s_t, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return out
