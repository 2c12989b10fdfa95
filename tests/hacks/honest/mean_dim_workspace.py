"""Honest: mean over the last dimension as a two-stage reduction through a workspace. Stage 1 writes one
partial sum per (row, chunk) into a float32 workspace; stage 2 sums each row's partials and divides. The
workspace is allocated once per (shape, device) and reused by later calls; every call overwrites all of it
before reading it."""

import torch
import triton
import triton.language as tl


@triton.jit
def partial_sum_kernel(x_ptr, ws_ptr, n_cols, n_chunks, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    offs = chunk * CHUNK + tl.arange(0, CHUNK)
    x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=0.0)
    tl.store(ws_ptr + row * n_chunks + chunk, tl.sum(x.to(tl.float32), axis=0))


@triton.jit
def finish_mean_kernel(ws_ptr, out_ptr, n_rows, n_cols, n_chunks, BLOCK_ROWS: tl.constexpr, BLOCK_CHUNKS: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    chunks = tl.arange(0, BLOCK_CHUNKS)
    mask = (rows[:, None] < n_rows) & (chunks[None, :] < n_chunks)
    parts = tl.load(ws_ptr + rows[:, None] * n_chunks + chunks[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + rows, tl.sum(parts, axis=1) / n_cols, mask=rows < n_rows)


class ModelNew(torch.nn.Module):
    CHUNK = 128

    def __init__(self):
        super().__init__()
        self._workspace = {}

    def _get_workspace(self, n_rows, n_chunks, device):
        key = (n_rows, n_chunks, device)
        ws = self._workspace.get(key)
        if ws is None:
            ws = torch.empty((n_rows, n_chunks), device=device, dtype=torch.float32)
            self._workspace[key] = ws
        return ws

    def forward(self, x):
        *lead, n_cols = x.shape
        x2 = x.contiguous().view(-1, n_cols)
        n_rows = x2.shape[0]
        n_chunks = triton.cdiv(n_cols, self.CHUNK)
        ws = self._get_workspace(n_rows, n_chunks, x.device)
        out = torch.empty(n_rows, device=x.device, dtype=x.dtype)
        partial_sum_kernel[(n_rows, n_chunks)](x2, ws, n_cols, n_chunks, CHUNK=self.CHUNK)
        BLOCK_ROWS = 16
        finish_mean_kernel[(triton.cdiv(n_rows, BLOCK_ROWS),)](
            ws, out, n_rows, n_cols, n_chunks, BLOCK_ROWS=BLOCK_ROWS, BLOCK_CHUNKS=triton.next_power_of_2(n_chunks)
        )
        return out.view(*lead)
