"""`benchmarks/keep_out.sh`: what a device command wrote comes back through $OUT even when the call's limit stops it
(stop 48 lost a finished corpus repeat that way)."""

import subprocess
import sys
import time
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "keep_out.sh"


def test_a_command_stopped_by_its_limit_leaves_what_it_wrote_in_out(tmp_path):
    out, runs = tmp_path / "out", tmp_path / "runs"
    out.mkdir()
    runs.mkdir()
    writer = f"{sys.executable} -c \"open('runs/repeat.json', 'w').write('3 repeats')\"; sleep 60"
    began = time.monotonic()
    done = subprocess.run(
        ["timeout", "2", "bash", str(SCRIPT), "runs/repeat.json", "--", "bash", "-c", writer],
        cwd=tmp_path,
        env={"OUT": str(out), "KEEP_OUT_EVERY": "30", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 124 and time.monotonic() - began < 30  # stopped at its limit, not at the sleep's end
    assert (out / "repeat.json").read_text() == "3 repeats"  # the last copy, made when the limit stopped it


def test_the_commands_exit_status_is_kept_and_a_missing_out_is_a_usage_error(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    done = subprocess.run(["bash", str(SCRIPT), "nothing", "--", "bash", "-c", "exit 3"], env={"OUT": str(out)})
    assert done.returncode == 3
    usage = subprocess.run(["bash", str(SCRIPT), "x", "--", "true"], env={}, capture_output=True, text=True)
    assert usage.returncode == 2 and "usage" in usage.stderr
