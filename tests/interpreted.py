"""Run a test's script in a fresh Python under Triton's interpreter, and read the JSON its last line prints.

Triton picks the interpreter when a kernel is *defined* (`TRITON_INTERPRET=1` at `@triton.jit`), so a test whose
kernels must be interpreted, whatever the test process imported before, runs them in a process of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])


def run_interpreted(script: str, folder: Path, name: str = "interpreted.py", timeout: int = 300):
    """`script` written under `folder` and run with the repository on its path; its last stdout line, parsed."""
    path = folder / name
    path.write_text(script)
    env = {
        **os.environ,
        "TRITON_INTERPRET": "1",
        "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
