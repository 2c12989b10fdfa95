"""Memory a candidate is handed holds no answer: fresh and free memory filled with 0xFF bytes (NaN in every float
format, -1 in every signed integer one).

A GPU block freed by one process and handed to another by the driver, or cached by the allocator and handed to
the next tensor of the same process, keeps its old bytes.  Two judgements read such bytes: a candidate that
returns memory it never wrote passes as correct if the reference's outputs were freed there, and the
`precomputed` probe finds the answer in a fresh buffer before any own kernel ran.  So:

* the worker poisons its allocator's free blocks before the candidate runs, and the keeper before it empties its
  cache (`poison_free_memory`, `scrubbed_empty_cache`): memory that held the reference's answers never reaches a
  candidate unpoisoned, in any call;
* during the `precomputed` probe's watched call every tensor the candidate allocates starts poisoned
  (`poisoned_allocations`): memory is poisoned where it is handed out, not guessed at by allocating the sizes of the
  allocator's free blocks just before that call, which missed small-pool blocks, other streams, graph pools,
  blocks freed during the call and memory fresh from the driver (an honest three-kernel softmax and two large-K
  GEMMs had their fresh `torch.empty` output hold an earlier call's answer and were judged `hacked` on H100s and
  H200s, every time).  See ARCHITECTURE.md §3.
"""

from __future__ import annotations

from tritongym.core.measure import trusted


def poison_free_memory(device) -> None:
    """Fill the caching allocator's free blocks on `device` with 0xFF bytes where they lie, then wait for the fill.

    Each free block is written through its own address (`handouts.wrap`: a tensor over raw memory, no allocation),
    so every one is reached: a block cached for another stream, a graph's private pool, a large-pool remainder
    smaller than the small pool's limit.  Allocating each free block's size instead (as this did) gets back only
    blocks of the current stream and pool: on an H100 a block a side stream had freed stayed unpoisoned
    (`test_gpu::test_memory_given_back_by_the_keeper_holds_no_answer`), and a request is new memory, not the block,
    wherever none of its size is free.  Segments of expandable segments (`expandable_segments:True`) may have
    unmapped pages behind their free blocks: those are reached by allocation as before."""
    import torch

    from tritongym.core.worker.handouts import wrap

    index = device.index if device.index is not None else torch.cuda.current_device()
    held = []
    try:
        with torch.cuda.device(index):
            trusted.synchronize(device)  # every stream's work done: nothing still reads or writes a free block
            for segment in torch.cuda.memory_snapshot():
                if segment.get("device", index) != index:
                    continue
                for block in segment.get("blocks", []):
                    size = int(block.get("size", 0))
                    if block.get("state") != "inactive" or size <= 0:
                        continue
                    if segment.get("is_expandable"):
                        held.append(torch.empty(size, dtype=torch.uint8, device=device).fill_(0xFF))
                    else:
                        wrap(int(block["address"]), size, torch.uint8, [size]).fill_(0xFF)
            trusted.synchronize(device)
    except RuntimeError:
        pass  # out of memory while poisoning an expandable segment: what was filled stays filled
    finally:
        del held


def scrubbed_empty_cache(device) -> None:
    """`torch.cuda.empty_cache()`, the blocks it gives back to the driver poisoned first (a no-op off CUDA)."""
    import torch

    if device.type != "cuda":
        return
    poison_free_memory(device)
    torch.cuda.empty_cache()


ALLOCATIONS = (
    "empty.memory_format",
    "empty_strided.default",
    "empty_like.default",
    "empty_permuted.default",
    "new_empty.default",
    "new_empty_strided.default",
)
"""The aten allocations that hand out memory without writing it (what `torch.empty*` and `Tensor.new_empty*` reach);
`resize_` too, for the bytes it adds.  Ops that write what they allocate (`zeros`, `full`, `clone`, every compute
op) need nothing: their bytes are theirs."""


def poison(tensor, start: int = 0) -> None:
    """Fill `tensor`'s storage from byte `start` on with 0xFF, on the current stream (stream order: before any use)."""
    import torch

    if type(tensor) is not torch.Tensor or tensor.device.type == "meta":
        return
    storage = tensor.untyped_storage()
    if storage.nbytes() <= start:
        return
    if start == 0:
        storage.fill_(0xFF)
        return
    tail = torch.empty(0, dtype=torch.uint8, device=tensor.device)
    tail.set_(storage, start, (storage.nbytes() - start,), (1,)).fill_(0xFF)


def poisoned_allocations():
    """A dispatch mode under which every tensor allocated by `ALLOCATIONS` starts as 0xFF bytes.

    A mode, not a scrub of the allocator's free blocks: it poisons what is handed out, whichever pool, stream or
    driver call the memory came from, on the CPU and on CUDA alike.  Only the top-level op is seen (an op's own
    temporaries are not: they are its to write), and each fill is one memset in stream order.

    The candidate runs under it and could leave the mode (pop it, or push one of its own above it).  That gains it
    nothing: the mode only ever makes a fresh buffer hold no answer, which keeps an honest kernel from being
    judged `hacked`; a candidate that gets stale memory back by leaving it makes the `precomputed` probe's case
    against itself, not for itself.  Laundering an answer through a freed block is not hidden either: the ghost
    replay, which runs without this mode, still finds it (`ghost.py`)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from tritongym.core.worker.custom_ops import python_body, through

    aten = torch.ops.aten
    allocations = {getattr(getattr(aten, name.split(".")[0]), name.split(".")[1]) for name in ALLOCATIONS}
    resize = aten.resize_.default

    class PoisonedAllocations(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            return False  # as `op_trace.op_tracer` says: no torch._dynamo import, which replaces torch.manual_seed

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            body = python_body(func, args, kwargs)
            if body is not None:  # a candidate's `triton_op`: what its kernel allocates is poisoned too
                return through(self, body, args, kwargs)
            if func is resize:
                had = args[0].untyped_storage().nbytes()
                out = func(*args, **kwargs)
                poison(out, had)
                return out
            out = func(*args, **kwargs)
            if func in allocations:
                poison(out)
            return out

    return PoisonedAllocations()
