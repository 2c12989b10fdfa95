"""The keeper's `SCRN`: a problem's negative-control screen, run by its GPU's reference keeper.

A screen runs the reference and the negative controls (zeros, a constant, the identity: `controls.py`) and no
candidate code (`task_runner.run_screen`), which is exactly the kind of work the keeper exists for.  Run in a
candidate's worker it waited for that worker's start (a CUDA context and CUPTI's set-up, 5-9 s on an H200) and then
held it, so a one-kernel `tritongym eval` waited for the worker, then the screen, then the candidate (cold: 23 s on
two H200s, the screen 5.4 s of it).  The keeper is up seconds before any worker and idle until the first `PREP`:
the screen runs there while the candidate's worker starts.

The pool holds the GPU shared around the request (`TaskDriver.screen_in_keeper`), reserves the reference's memory
for it as for a build, and the keeper gives back what the controls allocated, scrubbed, before it answers.
"""

from __future__ import annotations

import json
import os
import time

from tritongym.core.models import Evidence
from tritongym.core.timeline import mark
from tritongym.core.worker.protocol import ScreenRequest
from tritongym.core.worker.stages import failures_recorded
from tritongym.core.worker_task import WorkerTask


def screen(keeper, payload: bytes) -> dict:
    """`SCRN`: the screen's evidence (controls, their input transforms, the reference's randomness), or its error."""
    from tritongym.core.measure.gold import exact_reference
    from tritongym.core.worker.scrub import scrubbed_empty_cache
    from tritongym.core.worker.task_runner import configure_precision, run_screen

    task = WorkerTask.model_validate(ScreenRequest.model_validate_json(payload).task)
    task = task.model_copy(update={"device": str(keeper.device)})  # this keeper's GPU, whatever the task says
    workdir = os.path.join(os.getcwd(), f"screen-{keeper.builds}")
    keeper.builds += 1
    os.makedirs(workdir, exist_ok=True)
    evidence = Evidence(stage="problem", fingerprint=keeper.fingerprint)
    last = [time.perf_counter()]

    def lap(part: str) -> None:
        """The timeline's mark for one part of the screen, with its seconds (when `TRITONGYM_TIMELINE` is set)."""
        now = time.perf_counter()
        mark("keeper_screen_part", part=part, seconds=round(now - last[0], 4))
        last[0] = now

    try:
        with failures_recorded(evidence):
            configure_precision(task)
            with exact_reference():
                run_screen(task, workdir, evidence, lap=lap)
    finally:
        # the controls' outputs, on the screen's own inputs, go back to the driver poisoned, as a worker's would
        scrubbed_empty_cache(keeper.device)
    return {"evidence": json.loads(evidence.model_dump_json())}
