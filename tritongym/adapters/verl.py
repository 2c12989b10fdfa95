"""verl reward functions: `compute_score` for verl's default reward manager, `compute_score_batch` for its
`batch` manager.

verl calls a custom reward function (`custom_reward_function.path` = a file, `.name` = the function) as

    compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=..., **reward_kwargs)

once per response, and the `batch` reward manager calls `compute_score_batch(data_sources=...,
solution_strs=..., ground_truths=..., extra_infos=..., **reward_kwargs)` once per batch (one evaluation
batch: parallel sandboxes, or Ray actors).  The problem is `extra_info["problem"]` when the row has it,
else `ground_truth` (put the tritongym problem spec, e.g. "relu", in the parquet's
`reward_model.ground_truth`).  Each returns a dict: `score` is the reward, the other keys (`status`,
`correct`, `hacked`, `speedup`, `kernel_id`, `message`: the same keys for every response) are what verl
collects as `reward_extra_info` and logs (numbers averaged, strings kept per sample).

`reward_kwargs` may name `config` (an eval TOML path), `registry` (a registry.db path) and
`assistant_prefill`; the in-process Evaluator they describe is built once per process and reused.  With
`service` (a `tritongym serve` URL; the token from TRITONGYM_SERVICE_TOKEN) the kernels are judged by that
service instead (`ServiceClient`).  Any other client: call `use_client(client)` first, or build a
`TritonGymScore(client)` and point verl at a function of your own that calls it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from tritongym.adapters.scoring import EvaluationClient, InProcessClient, ServiceClient, score_completions

_clients: dict[tuple, EvaluationClient] = {}
_lock = threading.Lock()
_default: EvaluationClient | None = None


class TritonGymScore:
    """verl's reward function bound to one client (see the module doc for the call conventions)."""

    def __init__(self, client: EvaluationClient, assistant_prefill: str = "") -> None:
        self.client = client
        self.assistant_prefill = assistant_prefill

    def __call__(self, data_source, solution_str: str, ground_truth, extra_info: dict | None = None, **_) -> dict:
        return self.batch([data_source], [solution_str], [ground_truth], [extra_info])[0]

    def batch(
        self,
        data_sources: Sequence,
        solution_strs: Sequence[str],
        ground_truths: Sequence,
        extra_infos: Sequence[dict | None] | None = None,
    ) -> list[dict]:
        infos = list(extra_infos) if extra_infos is not None else [None] * len(solution_strs)
        problems = [_problem_of(truth, info) for truth, info in zip(ground_truths, infos)]
        scored = score_completions(self.client, list(solution_strs), problems, self.assistant_prefill)
        return [s.extras() for s in scored]


def _problem_of(ground_truth, extra_info: dict | None) -> str:
    if isinstance(extra_info, dict) and extra_info.get("problem"):
        return str(extra_info["problem"])
    return ground_truth if isinstance(ground_truth, str) else ""


def use_client(client: EvaluationClient | None) -> None:
    """Judge every later `compute_score` call of this process with `client` (None: back to in-process)."""
    global _default
    _default = client


def _client(config: str | None, registry: str | None, service: str | None = None) -> EvaluationClient:
    if _default is not None:
        return _default
    key = (config, registry, service)
    with _lock:
        if key not in _clients:
            _clients[key] = ServiceClient(service) if service else InProcessClient(config=config, registry=registry)
        return _clients[key]


def compute_score(
    data_source,
    solution_str: str,
    ground_truth,
    extra_info: dict | None = None,
    *,
    config: str | None = None,
    registry: str | None = None,
    service: str | None = None,
    assistant_prefill: str = "",
    **_,
) -> dict:
    """verl's per-response reward: {"score": reward, "status": ..., ...} for one response."""
    score = TritonGymScore(_client(config, registry, service), assistant_prefill)
    return score(data_source, solution_str, ground_truth, extra_info)


def compute_score_batch(
    data_sources: Sequence,
    solution_strs: Sequence[str],
    ground_truths: Sequence,
    extra_infos: Sequence[dict | None] | None = None,
    *,
    config: str | None = None,
    registry: str | None = None,
    service: str | None = None,
    assistant_prefill: str = "",
    **_,
) -> list[dict]:
    """verl's batch reward (`reward_model.reward_manager=batch`): one dict per response, judged together."""
    score = TritonGymScore(_client(config, registry, service), assistant_prefill)
    return score.batch(data_sources, solution_strs, ground_truths, extra_infos)
