"""`benchmarks/kernelgym_throughput.py`'s anchor is KernelGYM's real toolkit, given the tasks its server builds.

Not timing: what is checked is that the benchmark imports KernelGYM's release from `shared/kernelgym/` (the
folder `$TRITONGYM_SHARED` names, else `<repo>/../shared`) without its server stack, that its request is
Dr. Kernel's (the values of the release's own trainer config), and that one candidate goes through
KernelGYM's workflow controller and a fresh task process, reaching the toolkit with the task dict its
server would queue.  Without CUDA the toolkit cannot evaluate (it asserts `torch.cuda.is_available()`), so
here the task fails with that reason; with CUDA the same test expects a correct verdict and the
reference-timing task that follows it.  All KernelGYM imports happen in a fresh interpreter, so this
session's `sys.modules` says nothing about them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(300)

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "benchmarks"
SHARED = Path(os.environ.get("TRITONGYM_SHARED") or REPO.parent / "shared")
RELEASE = SHARED / "kernelgym"
HEAVY = ("fastapi", "redis", "aiohttp", "uvicorn", "kernelgym.server.api", "kernelgym.worker.gpu_worker")

# Run in a fresh interpreter: build the release's skeleton, send the suite's relu solution through
# KernelGYM's controller and one task process, and call the toolkit directly with the task it was given.
PROBE = """
import json, sys, tempfile
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import kernelgym_throughput as kt
from tritongym.core.problems import load_problem

release, scratch = Path(sys.argv[2]), Path(tempfile.mkdtemp(prefix="kg-test-"))
kg = kt.KernelGym(release, scratch)
problem = load_problem("relu", "cpu")
request = kt.dr_kernel_request("probe_relu", kt.sized_reference(problem), problem.solution, 600)
results, wall, scheduler = kt.run_anchor(kg, [request], 0, "executor", None, lambda i, r, t: None)
kernel_task = dict(scheduler.examples["kernel_evaluation"], reference_code=request["reference_code"],
                   kernel_code=request["kernel_code"])
direct = kg.toolkit.KernelBenchToolkit().evaluate(dict(kernel_task))
import torch
print("PROBE " + json.dumps({
    "files": {name: str(kg.file_of(getattr(kg, name))) for name in ("toolkit", "workflow", "executor", "config")},
    "in_task_process": str(kg.toolkit_in_a_task_process()),
    "skeleton_init": (kg.root / "kernelgym" / "__init__.py").read_text(),
    "heavy_imported": [m for m in sys.argv[3].split(",") if m in sys.modules],
    "request": request,
    "examples": scheduler.examples,
    "tasks": scheduler.tasks,
    "result": results[0],
    "status": kt.anchor_status(results[0]),
    "direct": direct,
    "sized_reference": request["reference_code"],
    "solution": problem.solution,
    "cuda": torch.cuda.is_available(),
}))
"""


# The probe (two fresh interpreters that import torch, ~13 s of CPU) checks the benchmark's anchor, not tritongym:
# its tests are in the slow tier, which `make test-all` and CI run; the workloads' test below stays fast.
@pytest.fixture(scope="module")
def probe() -> dict:
    if not (RELEASE / "kernelgym" / "toolkit" / "kernelbench" / "toolkit.py").is_file():
        pytest.fail(
            f"KernelGYM's release is not at {RELEASE} (no kernelgym/toolkit/kernelbench/toolkit.py): the benchmark "
            "runs its toolkit from there. Put shared/ beside the repository, or set TRITONGYM_SHARED to the "
            "folder that holds kernelgym/"
        )
    env = {
        **os.environ,
        "TRITONGYM_LOAD_PLUGINS": "",
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(BENCHMARKS), str(RELEASE), ",".join(HEAVY)],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("PROBE ")]
    assert done.returncode == 0 and lines, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(lines[-1][len("PROBE ") :])


@pytest.mark.slow
def test_the_release_is_imported_as_published_without_its_server_stack(probe):
    release = RELEASE.resolve() / "kernelgym"
    assert probe["files"] == {
        "toolkit": str(release / "toolkit" / "kernelbench" / "toolkit.py"),
        "workflow": str(release / "workflow" / "kernelbench.py"),
        "executor": str(release / "worker" / "task_executor.py"),
        "config": str(release / "config" / "__init__.py"),
    }
    assert probe["in_task_process"] == probe["files"]["toolkit"]  # a spawned task process gets the same one
    assert "from .server import" in (release / "__init__.py").read_text()  # what the skeleton leaves out
    assert "from .server import" not in probe["skeleton_init"]
    assert probe["heavy_imported"] == []


@pytest.mark.slow
def test_the_request_is_dr_kernels(probe):
    import yaml

    config = yaml.safe_load((RELEASE / "drkernel" / "kernel" / "config" / "kernel_trainer.yaml").read_text())
    reward = config["reward_model"]
    request = probe["request"]
    assert request["num_correct_trials"] == reward["num_correct_trials"]
    assert request["num_perf_trials"] == reward["num_perf_trials"]
    assert request["timeout"] == reward["task_timeout"]
    assert request["enable_profiling"] is reward["enable_profiling"]
    assert request["verbose_errors"] is reward["verbose_errors"]
    assert request["detect_decoy_kernel"] is reward["detect_decoy_kernel"]
    client = (RELEASE / "drkernel" / "kernel" / "rewards" / "reward_client.py").read_text()
    assert '"backend": "triton"' in client and request["backend"] == "triton"
    assert request["kernel_code"] == probe["solution"]
    # the size preset's constants are set in the reference, as tritongym's worker sets them
    assert request["reference_code"].startswith('"""ReLU')
    assert request["reference_code"].rstrip().endswith("WIDTH = 35")


@pytest.mark.slow
def test_the_toolkit_gets_the_kernel_task_kernelgyms_server_queues(probe):
    task = probe["examples"]["kernel_evaluation"]
    assert task["task_type"] == "kernel_evaluation"
    assert task["toolkit"] == "kernelbench" and task["backend_adapter"] == "kernelbench"
    assert task["backend"] == "triton" and task["device"] == "cuda:0" and task["entry_point"] == "Model"
    assert (task["num_correct_trials"], task["num_perf_trials"], task["timeout"]) == (5, 100, 600)
    assert task["run_correctness"] is task["run_performance"] is task["run_triton_detection"] is True
    assert task["enable_profiling"] is True  # the request's; the server's own default is the same
    assert task["base_task_id"] == "probe_relu" and task["task_id"] == "probe_relu_kernel"


@pytest.mark.slow
def test_the_verdict_is_the_toolkits(probe):
    kinds = [t["task_type"] for t in probe["tasks"]]
    if probe["cuda"]:
        assert probe["status"] == "ok", probe["result"]
        assert kinds == ["kernel_evaluation", "reference_timing"]
        assert probe["direct"]["status"] == "completed" and probe["direct"]["correctness"] is True
    else:
        # KernelGYM's task process initialises CUDA first; the toolkit itself asserts that CUDA is there
        assert probe["status"] == "failed" and kinds == ["kernel_evaluation"]
        assert "CUDA" in probe["result"]["error_message"], probe["result"]
        assert probe["direct"]["status"] == "failed"
        assert probe["direct"]["error_message"].endswith("CUDA is not available, cannot run Eval")


def test_the_workloads_are_the_bundled_pairs_and_16_problems_by_8_variants():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import kernelgym_throughput as kt
        from candidate_set import VARIANTS
    finally:
        sys.path.remove(str(BENCHMARKS))
    from tritongym.api import pair_candidates
    from tritongym.core.problems import load_problems

    bundled = kt.bundled_candidates("cpu")
    pairs = pair_candidates(load_problems(None, "cpu"), None)
    assert sorted((p, s) for p, _, s in bundled) == sorted((p.name, c.source) for c, p in pairs)
    rl = kt.rl_candidates("cpu")
    assert len(rl) == 128 and len({c[2] for c in rl}) == 128
    per_problem: dict[str, set] = {}
    for problem, variant, _ in rl:
        per_problem.setdefault(problem, set()).add(variant)
    assert len(per_problem) == 16 and all(v == set(VARIANTS) for v in per_problem.values())
    assert {p for p, _, _ in rl[:16]} == set(per_problem)  # any prefix mixes problems
