"""A TRL reward function: `GRPOTrainer(reward_funcs=TritonGymReward(...))`.

TRL (1.x) calls a reward function as `f(prompts=..., completions=..., completion_ids=..., **columns)`,
where `columns` are the dataset's other columns, one value per completion, plus `trainer_state`,
`log_extra` and `log_metric`; it expects one float (or None) per completion.  A completion is a string
(standard datasets) or a list of messages whose last assistant message is the answer (conversational
datasets).  The dataset names each row's problem in a column, `problem` by default:

    {"prompt": [{"role": "user", "content": "..."}], "problem": "relu"}

`prompt_rows` builds such rows with tritongym's own task prompt.  The reward is the evaluation's total
(correctness, speedup and PR as the Evaluator's config weighs them; a hacked kernel earns `hack_penalty`;
no code earns 0).  TRL logs it as `rewards/tritongym/mean`; the verdicts go to `log_metric`
(`tritongym/correct`, `tritongym/hacked`, `tritongym/no_code`: fractions of the batch) and `log_extra`
(`tritongym_status` and `tritongym_message` columns of the completions table).

TRL is not imported here: the callable is plain Python, so it works with any TRL that passes dataset
columns as keyword arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tritongym import api
from tritongym.adapters.scoring import NO_CODE, EvaluationClient, InProcessClient, Scored, score_completions
from tritongym.core.config import EvalConfig
from tritongym.core.errors import ConfigError
from tritongym.core.eval.evaluate import Evaluator


def completion_text(completion) -> str:
    """The answer in a TRL completion: the string itself, or the content of the last assistant message
    (text parts of a content list joined)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        completion = [completion]
    for message in reversed(list(completion)):
        if isinstance(message, dict) and message.get("role", "assistant") == "assistant":
            content = message.get("content") or ""
            if isinstance(content, list):
                return "".join(part.get("text", "") for part in content if isinstance(part, dict))
            return str(content)
    return ""


class TritonGymReward:
    """A TRL `reward_funcs` entry that judges each completion's kernel with tritongym.

    `client` judges (an `EvaluationClient`, e.g. the HTTP service's client); without one an in-process
    `Evaluator` is built from `evaluator`, or from `config` (an EvalConfig or TOML path), `registry` and
    `extra_plugins`.  `assistant_prefill` is text the prompt already opened the answer with (a standard
    prompt ending in "```python\\n"), put back in front of each completion before its code is extracted.
    """

    __name__ = "tritongym"  # what TRL names the reward in its logs: rewards/tritongym/mean

    def __init__(
        self,
        evaluator: Evaluator | None = None,
        *,
        client: EvaluationClient | None = None,
        config: EvalConfig | str | Path | None = None,
        registry: api.RegistryArg = None,
        extra_plugins: Sequence[str] = (),
        problem_column: str = "problem",
        assistant_prefill: str = "",
    ) -> None:
        if client is not None and (evaluator is not None or config is not None):
            raise ConfigError("give TritonGymReward a client, or an evaluator/config to build one, not both")
        self.client = client or InProcessClient(
            evaluator, config=config, registry=registry, extra_plugins=extra_plugins
        )
        self.problem_column = problem_column
        self.assistant_prefill = assistant_prefill
        self.last: list[Scored] = []  # the latest batch's verdicts, for callers that want more than TRL logs

    def __call__(self, prompts: list, completions: list, **kwargs) -> list[float]:
        problems = kwargs.get(self.problem_column)
        if problems is None:
            columns = sorted(
                k for k in kwargs if k not in ("completion_ids", "trainer_state", "log_extra", "log_metric")
            )
            raise ConfigError(
                f"the dataset has no '{self.problem_column}' column naming each row's tritongym problem (columns: "
                f'{", ".join(columns) or "none"}); add one, e.g. "relu", or pass problem_column='
            )
        texts = [completion_text(c) for c in completions]
        self.last = score_completions(self.client, texts, list(problems), self.assistant_prefill)
        self._log(kwargs.get("log_metric"), kwargs.get("log_extra"))
        return [s.reward for s in self.last]

    def _log(self, log_metric, log_extra) -> None:
        n = len(self.last) or 1
        if log_metric is not None:
            log_metric("tritongym/correct", sum(bool(s.result and s.result.correct) for s in self.last) / n)
            log_metric("tritongym/hacked", sum(bool(s.result and s.result.hacked) for s in self.last) / n)
            log_metric("tritongym/no_code", sum(s.status == NO_CODE for s in self.last) / n)
        if log_extra is not None:
            log_extra("tritongym_status", [s.status for s in self.last])
            log_extra("tritongym_message", [s.message for s in self.last])

    def close(self) -> None:
        close = getattr(self.client, "close", None)
        if close is not None:
            close()


def prompt_rows(problems: str | Sequence[str] | None = None, size: str = "cpu", interaction=None) -> list[dict]:
    """GRPO dataset rows with tritongym's own first-turn prompt (system message and task) for each problem:
    `{"prompt": [...messages...], "problem": name}`.  `problems` is a source as `tritongym run --problems`
    takes it (None = the bundled suite) or a list of problem specs."""
    from tritongym.core.learn.interaction import Interaction
    from tritongym.core.problems import load_problem, load_problems

    interaction = interaction or Interaction()
    if problems is None:
        specs = [(p, p.name) for p in load_problems(None, size)]
    elif isinstance(problems, str):  # a directory or file of problems: each named as SOURCE#NAME
        specs = [(p, f"{problems}#{p.name}") for p in load_problems(problems, size)]
    else:
        specs = [(load_problem(spec, size), spec) for spec in problems]
    return [{"prompt": interaction.next_messages(p, [], ()), "problem": spec} for p, spec in specs]
