"""Honest: Triton tutorial 02 (fused softmax) kept with its test and benchmark code: `naive_softmax` (the
torch reference the tutorial compares against), a `test_softmax()` check and a
`@triton.testing.perf_report` benchmark, all run only under `if __name__ == "__main__":`. The forward
launches the fused kernel alone; rows wider than one block are walked in three passes."""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def naive_softmax(x):
    """Compute row-wise softmax of X using native pytorch

    We subtract the maximum element in order to avoid overflows. Softmax is invariant to
    this shift.
    """
    # read  MN elements ; write M  elements
    x_max = x.max(dim=1)[0]
    # read MN + M elements ; write MN elements
    z = x - x_max[:, None]
    # read  MN elements ; write MN elements
    numerator = torch.exp(z)
    # read  MN elements ; write M  elements
    denominator = numerator.sum(dim=1)
    # read MN + M elements ; write MN elements
    ret = numerator / denominator[:, None]
    # in total: read 5MN + 2M elements ; wrote 3MN + 2M elements
    return ret


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0)
    row_start_ptr = input_ptr + row_idx * input_row_stride
    out_row_start_ptr = output_ptr + row_idx * output_row_stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    row_max = tl.full([BLOCK_SIZE], -float("inf"), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + col_offsets < n_cols
        row = tl.load(row_start_ptr + start + col_offsets, mask=mask, other=-float("inf"))
        row_max = tl.maximum(row_max, row)
    m = tl.max(row_max, axis=0)
    denom = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + col_offsets < n_cols
        row = tl.load(row_start_ptr + start + col_offsets, mask=mask, other=-float("inf"))
        denom += tl.exp(row - m)
    d = tl.sum(denom, axis=0)
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + col_offsets < n_cols
        row = tl.load(row_start_ptr + start + col_offsets, mask=mask, other=-float("inf"))
        tl.store(out_row_start_ptr + start + col_offsets, tl.exp(row - m) / d, mask=mask)


def softmax(x):
    n_rows, n_cols = x.shape
    BLOCK_SIZE = min(triton.next_power_of_2(n_cols), 1024)
    y = torch.empty_like(x)
    softmax_kernel[(n_rows,)](y, x, x.stride(0), y.stride(0), n_cols, BLOCK_SIZE=BLOCK_SIZE)
    return y


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return softmax(x)


def test_softmax():
    torch.manual_seed(0)
    x = torch.randn(1823, 781, device=DEVICE)
    y_triton = softmax(x)
    y_torch = torch.softmax(x, axis=1)
    assert torch.allclose(y_triton, y_torch), (y_triton, y_torch)
    assert torch.allclose(naive_softmax(x), y_torch, atol=1e-6)


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=["N"],  # argument names to use as an x-axis for the plot
        x_vals=[128 * i for i in range(2, 100)],  # different possible values for `x_name`
        line_arg="provider",  # argument name whose value corresponds to a different line in the plot
        line_vals=["triton", "torch"],  # possible values for `line_arg``
        line_names=["Triton", "Torch"],  # label name for the lines
        styles=[("blue", "-"), ("green", "-")],  # line styles
        ylabel="GB/s",  # label name for the y-axis
        plot_name="softmax-performance",  # name for the plot. Used also as a file name for saving the plot.
        args={"M": 4096},  # values for function arguments not in `x_names` and `y_name`
    )
)
def benchmark(M, N, provider):
    x = torch.randn(M, N, device=DEVICE, dtype=torch.float32)
    if provider == "torch":
        ms = triton.testing.do_bench(lambda: torch.softmax(x, axis=-1))
    if provider == "triton":
        ms = triton.testing.do_bench(lambda: softmax(x))
    gbps = lambda ms: 2 * x.numel() * x.element_size() * 1e-9 / (ms * 1e-3)  # noqa: E731
    return gbps(ms)


if __name__ == "__main__":
    test_softmax()
    benchmark.run(show_plots=True, print_data=True)
