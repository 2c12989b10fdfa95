"""benchmarks/stack_sampler: the diagnostic that found where full-size problems spent their time on the GPU
machine (no py-spy there).  A process and its forked child each write their own stack counts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SAMPLER = Path(__file__).resolve().parent.parent / "benchmarks" / "stack_sampler"

PROGRAM = """
import os, time

def busy_in_child():
    time.sleep(2.6)

def busy_in_parent():
    time.sleep(2.6)

pid = os.fork()
if pid == 0:
    busy_in_child()
    os._exit(0)
busy_in_parent()
os.waitpid(pid, 0)
"""


def test_a_process_and_its_forked_child_each_write_where_they_waited(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(SAMPLER), "STACK_SAMPLE_DIR": str(tmp_path / "prof")}
    subprocess.run([sys.executable, "-c", PROGRAM], env=env, check=True, timeout=60)
    reports = {p.read_text() for p in (tmp_path / "prof").glob("*.txt")}
    assert len(reports) == 2, reports
    assert any("busy_in_child" in r and "busy_in_parent" not in r for r in reports), reports
    assert any("busy_in_parent" in r and "busy_in_child" not in r for r in reports), reports
    for report in reports:
        header, top = report.splitlines()[:2]
        assert "samples=" in header and int(top.split("\t")[0]) >= 15, report
