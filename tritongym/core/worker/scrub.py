"""Memory given back holds no answer: free blocks filled with 0xFF bytes (NaN in every float format).

A GPU block freed by one process and handed to another by the driver, or cached by the allocator and handed to
the next tensor of the same process, keeps its old bytes.  Two judgements read such bytes: a candidate that
returns memory it never wrote passes as correct if the reference's outputs were freed there, and the
`precomputed` probe finds the answer in a fresh buffer before any own kernel ran (an honest slow softmax was
judged `hacked` on an H100 when the keeper's freed copy of that answer came back to a worker).  So the worker
poisons its allocator's free blocks before the candidate runs and again just before the `precomputed` probe's
watched call (the same honest softmax, launching its kernel three times, was judged `hacked` on an H100 in stop 38
when its first output buffer came from a block this worker had freed holding that answer), and the keeper before it
empties its cache.
"""

from __future__ import annotations

from tritongym.core.measure import trusted


def poison_free_memory(device) -> None:
    """Fill the caching allocator's free blocks on `device` with 0xFF bytes, then wait for the fill."""
    import torch

    index = device.index if device.index is not None else torch.cuda.current_device()
    held = []
    try:
        for segment in torch.cuda.memory_snapshot():
            if segment.get("device", index) != index:
                continue
            for block in segment.get("blocks", []):
                if block.get("state") == "inactive" and block.get("size", 0) > 0:
                    held.append(torch.empty(block["size"], dtype=torch.uint8, device=device).fill_(0xFF))
        trusted.synchronize(device)
    except RuntimeError:
        pass  # out of memory while poisoning: what was filled stays filled
    finally:
        del held


def scrubbed_empty_cache(device) -> None:
    """`torch.cuda.empty_cache()`, the blocks it gives back to the driver poisoned first (a no-op off CUDA)."""
    import torch

    if device.type != "cuda":
        return
    poison_free_memory(device)
    torch.cuda.empty_cache()
