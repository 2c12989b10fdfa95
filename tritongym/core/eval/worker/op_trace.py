"""Which ATen ops a forward runs: the runtime view of "torch did the work" (the `torch_compute` check).

The source policy (`torch_ops`) reads the candidate's code, and code can hide a call (`getattr` with a
built string, a function found at run time, the reference's own `Model`).  Whatever the spelling, torch
compute reaches the dispatcher as an ATen op, so the worker runs each correctness trial under a
`TorchDispatchMode` that counts the ops by name; the reference's forward is traced the same way on the
trusted side.  Ops run inside Triton's own code (a launch, the autotuner's benchmarking and hooks; the
`LaunchRecorder` keeps the depth) are Triton's business and not counted.

A candidate that inspects the dispatch-mode stack could behave differently while traced; the trials are
where its outputs are judged, so it would have to be honest exactly there.
"""

from __future__ import annotations

from collections import Counter
from typing import Any


def op_tracer(recorder: Any = None):
    """A fresh dispatch mode whose `ops` counts ATen op names (`mm`, `_softmax`, `empty_like`, ...)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class OpTracer(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            # else torch wraps __torch_dispatch__ in a dynamo guard whose first call imports torch._dynamo:
            # 2.6 s per worker, and the import replaces torch.manual_seed, which the environment check
            # would then blame on the candidate
            return False

        def __init__(self) -> None:
            super().__init__()
            self.ops: Counter = Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if recorder is None or not recorder.inside_triton:
                self.ops[func.overloadpacket.__name__] += 1
            return func(*args, **(kwargs or {}))

    return OpTracer()


def traced_call(fn, *args, recorder: Any = None) -> tuple[Any, dict[str, int]]:
    """`fn(*args)` and the ATen ops it ran."""
    tracer = op_tracer(recorder)
    with tracer:
        result = fn(*args)
    return result, dict(tracer.ops)
