"""KernelGYM's own reward client, as Dr. Kernel's trainer drives it, against `tritongym serve` on the CPU.

The client is KernelGYM's release read unmodified from `shared/kernelgym/` beside the repository (the folder
`$TRITONGYM_SHARED` names, else `<repo>/../shared`); only the verl names it imports are stood in for
(`verl_standins.py`).  Its trainer config is the release's `kernel_trainer.yaml`, loaded with OmegaConf as
Hydra would, with the server's address and smaller limits.  The test runs, as `main_kernel.py` does before
training, `_check_kernel_server_health` (taken from that file: the module itself needs the whole trainer),
builds `compute_score` with its `get_custom_reward_fn` and the reward manager of `kernel_async.py`, and scores
a correct and a wrong candidate for the suite's relu; the verdicts must be those of `tritongym eval`.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pytest
from conftest import RELU_KERNEL
from test_service import RELU_REFERENCE, Served, relu_with

pytestmark = pytest.mark.timeout(420)

REPO = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("TRITONGYM_SHARED") or REPO.parent / "shared")
RELEASE = SHARED / "kernelgym"
DRKERNEL = RELEASE / "drkernel"
WRONG_KERNEL = relu_with("return x * 2")


def _release() -> Path:
    if not (DRKERNEL / "kernel" / "rewards" / "reward_client.py").is_file():
        pytest.fail(
            f"KernelGYM's release is not at {RELEASE} (no drkernel/kernel/rewards/reward_client.py): this test "
            "runs its client unmodified from there. Put shared/ beside the repository, or set TRITONGYM_SHARED "
            "to the folder that holds kernelgym/"
        )
    return DRKERNEL


def _functions(path: Path, *names: str) -> dict:
    """Functions of a KernelGYM file, as written there, without importing the file (main_kernel.py imports the
    whole trainer: hydra, verl's workers, a kernel_trainer module the release does not ship)."""
    tree = ast.parse(path.read_text())
    wanted = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name in names]
    assert sorted(f.name for f in wanted) == sorted(names), f"{path} no longer defines {names}"
    namespace: dict = {}
    exec(compile(ast.Module(body=wanted, type_ignores=[]), str(path), "exec"), namespace)
    return namespace


@pytest.fixture(scope="module")
def ray_with_standins():
    import ray

    drkernel = _release()
    import verl_standins

    verl_standins.install(str(drkernel))
    path = os.pathsep.join(p for p in (str(TESTS), str(drkernel), os.environ.get("PYTHONPATH", "")) if p)
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        runtime_env={
            "env_vars": {"PYTHONPATH": path, verl_standins.DRKERNEL_ENV: str(drkernel)},
            "worker_process_setup_hook": "verl_standins.install",
        },
    )
    yield drkernel
    ray.shutdown()


def _eval(tmp_path: Path, source: str, trials: int) -> dict:
    """`tritongym eval`'s verdict for a candidate on the suite's relu, on triton-cpu: the CLI app in this process
    (typer's runner; `python -m tritongym` runs the same app), not a fresh interpreter importing torch and Triton
    for each; the verdict is what is compared, not the process."""
    from typer.testing import CliRunner

    from tritongym.cli.app import app

    path = tmp_path / f"candidate-{abs(hash(source))}.py"
    path.write_text(source)
    args = ["eval", str(path), "-p", "relu", "--backend", "triton-cpu"]
    args += ["--trials", str(trials), "--json", "--registry", str(tmp_path / "eval.db")]
    done = CliRunner().invoke(app, args)  # the autouse fixture has set TRITONGYM_LOAD_PLUGINS= for this test
    assert done.exit_code in (0, 1), (done.output, done.exception)
    return json.loads(done.stdout)


# slow tier (Ray, Dr. Kernel's reward manager and a service: ~17 s): the fast tier's KernelGYM-shaped request and
# response are test_service.py's test_the_kernelgym_request_and_response
@pytest.mark.slow
def test_dr_kernels_trainer_scores_through_tritongym_serve(tmp_path, ray_with_standins):
    from omegaconf import OmegaConf

    drkernel = ray_with_standins
    main_kernel = drkernel / "kernel" / "main_kernel.py"
    served = Served(tmp_path / "serve", "--lanes", "1", "--timeout", "60")
    try:
        trainer = _functions(main_kernel, "_check_kernel_server_health", "get_custom_reward_fn")
        trainer["_check_kernel_server_health"](served.url)  # raises unless /health says "healthy"

        config = OmegaConf.load(drkernel / "kernel" / "config" / "kernel_trainer.yaml")
        reward = config.reward_model
        reward.server_url = served.url
        reward.reference_backend = None  # kernel_reward.py reads it; the release's yaml lacks it
        reward.num_correct_trials = 2  # applied by the service (it was started with --trials 1)
        reward.task_timeout = 45  # the candidate's time limit on the server
        reward.update(timeout=240, task_timeout_in_client=240, rate_limit=2, max_concurrent=2, acquire_timeout=60)
        config.custom_reward_function.path = str(drkernel / "kernel" / "rewards" / "kernel_reward.py")
        compute_score = trainer["get_custom_reward_fn"](config)

        from kernel.workers.reward_manager.kernel_async import AsyncKernelRewardManager

        manager = AsyncKernelRewardManager(
            tokenizer=None,
            num_examine=5,
            compute_score=compute_score,
            reward_fn_key=None,
            reward_config=config.reward_model,
            is_valid=False,
        )
        scored = {}
        for name, kernel in (("correct", RELU_KERNEL), ("wrong", WRONG_KERNEL)):
            scored[name] = manager(
                response_ids=[11, 12, 13],
                response_str=f"Here is my kernel.\n```python\n{kernel}\n```\n",
                ground_truth=RELU_REFERENCE,
                entry_point="Model",
                uuid="relu",
                return_full_state=True,
            )
    finally:
        served.stop_gracefully()

    expected = {name: _eval(tmp_path, k, trials=2) for name, k in (("correct", RELU_KERNEL), ("wrong", WRONG_KERNEL))}
    assert (expected["correct"]["status"], expected["wrong"]["status"]) == ("ok", "incorrect")
    for name, out in scored.items():
        state, info = out["env_state"], out["reward_extra_info"]
        assert state["status"] == "completed", state  # the server answered; not the client's fallback
        mine = state["metadata"]["tritongym"]
        assert mine["status"] == expected[name]["status"] and mine["kernel_id"] == expected[name]["kernel_id"]
        assert state["correctness"] is expected[name]["correct"] is info["correctness"]
        assert state["compiled"] is True and state["decoy_kernel"] is False
        assert mine["applied"] == {"trials": 2, "timeout_s": 45.0} and mine["trials"] == 2
        assert mine["requested"]["backend"] == "triton" and state["metadata"]["backend"] == "triton-cpu"
        # calculate_reward_weighted: 0.5 * correct + 0.5 * (speedup >= 1.01); the CPU does not time: speedup 0.0
        assert out["reward_tensor"].tolist() == [0.0, 0.0, 0.5 if expected[name]["correct"] else 0.0]


def test_the_health_check_refuses_a_server_that_is_not_there(tmp_path):
    """The other side of the health check: it must be able to fail, or passing it above proves nothing."""
    drkernel = _release()
    check = _functions(drkernel / "kernel" / "main_kernel.py", "_check_kernel_server_health")
    with pytest.raises(RuntimeError, match="not accessible"):
        check["_check_kernel_server_health"]("http://127.0.0.1:9")
