"""Where every process of a run spends its wall time: a sampling profiler needing no tool on the machine.

The GPU machines have no py-spy, and a pool's time hides in processes the driver only waits on (the keeper,
the GPU workers, forked from the zygote).  Put this directory first on PYTHONPATH and name an output
directory; every Python process that starts then samples its threads' stacks ten times a second, and so does
each process forked from one (the keeper and the workers), but not the candidates' children forked from those
(a thread there would be the candidate's side work).  Each process rewrites `<pid>.txt` every two seconds:
its command line, then its most frequent stacks with their sample counts.

    echo $OUT/prof > /tmp/stack_sample_dir    # the sandbox strips the workers' environment
    PYTHONPATH=$PWD/benchmarks/stack_sampler:$PYTHONPATH STACK_SAMPLE_DIR=$OUT/prof python benchmarks/...
    rm /tmp/stack_sample_dir

Stop 33 found this way that a full-size ReLU's record spent a minute parking outputs in host memory.
"""

import collections
import os
import sys
import threading
import time

DIR = os.environ.get("STACK_SAMPLE_DIR")
if not DIR and os.path.exists("/tmp/stack_sample_dir"):  # the sandbox strips the environment
    with open("/tmp/stack_sample_dir") as _named:
        DIR = _named.read().strip()
INTERVAL_S = 0.1
DEPTH = 14
_forks = 0


def _sample_forever() -> None:
    counts: collections.Counter = collections.Counter()
    path = os.path.join(DIR, f"{os.getpid()}.txt")
    samples = 0
    while True:
        time.sleep(INTERVAL_S)
        try:
            me = threading.get_ident()
            for tid, frame in sys._current_frames().items():
                if tid == me:
                    continue
                stack = []
                while frame is not None and len(stack) < DEPTH:
                    code = frame.f_code
                    stack.append(f"{os.path.basename(code.co_filename)}:{frame.f_lineno}:{code.co_name}")
                    frame = frame.f_back
                counts[" <- ".join(stack)] += 1
            samples += 1
            if samples % 20 == 0:
                with open(path + ".tmp", "w") as out:
                    out.write(f"{' '.join(sys.argv)[:300]} samples={samples}\n")
                    out.writelines(f"{n}\t{stack}\n" for stack, n in counts.most_common(80))
                os.replace(path + ".tmp", path)
        except Exception:  # noqa: BLE001 - a profiler never takes its process down
            pass


def _start() -> None:
    threading.Thread(target=_sample_forever, name="stack-sampler", daemon=True).start()


def _forked() -> None:
    global _forks
    _forks += 1
    if _forks == 1:  # the zygote's children (keeper, workers), not the workers' candidate children
        _start()


if DIR:
    os.makedirs(DIR, exist_ok=True)
    _start()
    os.register_at_fork(after_in_child=_forked)
