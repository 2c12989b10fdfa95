"""Where one evaluation's wall time goes, across processes: marks in a file that `$TRITONGYM_TIMELINE` names.

A result's `phases` say how long each part of *one task* took, measured where it ran; they cannot say what a
user waits for end to end (the CLI's start, the evaluator's imports, the pool's processes starting, the screen,
the task waiting for a worker), nor which parts ran side by side.  With `TRITONGYM_TIMELINE=/path` set, the
trusted processes append one JSON line per mark: wall time (`time.time()`, comparable across processes), pid,
the event and a few fields.  `benchmarks/eval_latency.py --timeline` sets it for its cold runs and prints each
run's marks relative to the command's start.

Only trusted code marks (the CLI, the evaluator, the pool's parent side): the line is written with one
`os.write` on an `O_APPEND` descriptor, whole even when several processes mark at once.  Unset, `mark` costs one
dictionary lookup; nothing is imported, so every layer may use it.
"""

from __future__ import annotations

import json
import os
import time

ENV = "TRITONGYM_TIMELINE"


def mark(event: str, **fields: object) -> None:
    """Append `event` (with `fields`, JSON-able) to the timeline file, when one is named; never raises."""
    path = os.environ.get(ENV)
    if not path:
        return
    line = json.dumps({"t": round(time.time(), 4), "pid": os.getpid(), "event": event, **fields}, default=str)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)
    except OSError:  # a diagnostic: an unwritable file must not fail an evaluation
        pass


def read(path: str | os.PathLike) -> list[dict]:
    """The marks in `path`, in time order (lines that are not whole JSON objects are skipped)."""
    marks = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    found = json.loads(line)
                except ValueError:
                    continue
                if isinstance(found, dict) and isinstance(found.get("t"), (int, float)):
                    marks.append(found)
    except OSError:
        return []
    return sorted(marks, key=lambda m: m["t"])
