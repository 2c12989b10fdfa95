"""Cold-start SFT examples (`tritongym sft`): reading the conversations SFT learns from, kept apart from the
tokenisation (core/learn/sft_masks.py) and the training (core/learn/sft.py) so the data can be read and checked
before any model loads.

Examples are whole conversations whose assistant messages are the targets.  They come from

- trajectory JSONL files (`tritongym rollouts`, `TurnRecord.to_json`): one example per trajectory, the
  prompt its last turn was shown plus that turn's reply; hacked trajectories are always dropped and, by
  default, so is every trajectory whose last turn is not correct;
- or, with no data, the bundled reference solutions: turn 1's prompt (`Interaction.first_messages`) and the
  solution in a ```python block, so the prompt is exactly the one RL will show.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tritongym.core.errors import ConfigError
from tritongym.core.generation import Message
from tritongym.core.learn.interaction import Interaction
from tritongym.core.learn.run_config import RunConfig

_REQUIRED = {
    "problem": str,
    "trajectory": int,
    "turn": int,
    "messages": list,
    "response": str,
    "correct": bool,
    "hacked": bool,
}


@dataclass
class SFTExample:
    """One conversation to learn from.

    `targets` are the indices of the assistant messages learned; None = every assistant message.  Trajectory
    examples learn only the final reply by default: the earlier replies are the attempts the feedback had to
    correct, and learning them would teach those mistakes.  `source` says where the example came from
    (`file:line` of its last turn, or `solution:NAME`), for messages about it."""

    messages: list[Message]
    targets: tuple[int, ...] | None = None
    source: str = ""

    def target_indices(self) -> list[int]:
        assistant = [i for i, m in enumerate(self.messages) if m.get("role") == "assistant"]
        if self.targets is None:
            return assistant
        wrong = sorted(set(self.targets) - set(assistant))
        if wrong:
            raise ValueError(f"example {self.source or '?'}: targets {wrong} are not assistant messages")
        return sorted(set(self.targets))


@dataclass
class _Line:
    path: Path
    line: int
    record: dict


def _check_record(record: object, where: str) -> dict:
    hint = "expected one turn per line as `tritongym rollouts` writes it"
    if not isinstance(record, dict):
        raise ConfigError(f"{where}: not a JSON object; {hint}")
    missing = [name for name in _REQUIRED if name not in record]
    if missing:
        raise ConfigError(f"{where}: missing field {', '.join(missing)}; {hint}")
    for name, kind in _REQUIRED.items():
        value = record[name]
        # bool is an int in Python: a turn number of `true` is as wrong as a string
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ConfigError(f"{where}: field {name} must be {kind.__name__}, not {type(value).__name__}; {hint}")
    for i, message in enumerate(record["messages"]):
        if not (
            isinstance(message, dict)
            and isinstance(message.get("role"), str)
            and isinstance(message.get("content"), str)
        ):
            raise ConfigError(f"{where}: messages[{i}] must be an object with string role and content; {hint}")
    return record


def _read_lines(path: Path) -> list[_Line]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"SFT data {path}: no such file; pass trajectory JSONL files (`tritongym rollouts`)"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"SFT data {path}: cannot read it: {exc}") from None
    lines = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{where}: not valid JSON ({exc.msg})") from None
        lines.append(_Line(path, number, _check_record(record, where)))
    return lines


def _group(lines: list[_Line]) -> list[list[_Line]]:
    """Trajectories of one file, in order of first appearance.

    A trajectory is keyed by (problem, trajectory).  `tritongym rollouts` appends to its file and numbers
    trajectories from 0 in every invocation, so a key can recur: a turn number already seen under the
    current key starts a new trajectory with that key (within one run a trajectory's turns are written in
    increasing order)."""
    groups: list[list[_Line]] = []
    current: dict[tuple[str, int], dict[int, _Line]] = {}
    index: dict[tuple[str, int], int] = {}
    for line in lines:
        key = (line.record["problem"], line.record["trajectory"])
        turn = line.record["turn"]
        if key not in current or turn in current[key]:
            current[key] = {}
            index[key] = len(groups)
            groups.append([])
        current[key][turn] = line
        groups[index[key]].append(line)
    return [sorted(group, key=lambda item: item.record["turn"]) for group in groups]


@dataclass
class _TrajectoryCounts:
    trajectories: int = 0
    hacked: int = 0
    incorrect: int = 0


def _load_trajectories(
    paths: Sequence[str | Path], only_correct: bool, prefill: str, earlier_turns: bool
) -> tuple[list[SFTExample], _TrajectoryCounts]:
    examples: list[SFTExample] = []
    counts = _TrajectoryCounts()
    for path in map(Path, paths):
        for group in _group(_read_lines(path)):
            counts.trajectories += 1
            last = group[-1]
            if any(item.record["hacked"] for item in group):
                counts.hacked += 1
                continue
            if only_correct and not last.record["correct"]:
                counts.incorrect += 1
                continue
            # the stored messages stop before the reply; the reply was generated after the prefill
            messages = [dict(m) for m in last.record["messages"]]
            messages.append({"role": "assistant", "content": prefill + last.record["response"]})
            targets = None if earlier_turns else (len(messages) - 1,)
            examples.append(SFTExample(messages=messages, targets=targets, source=f"{last.path}:{last.line}"))
    return examples, counts


def read_trajectories(
    paths: Sequence[str | Path], only_correct: bool = True, prefill: str = "", earlier_turns: bool = False
) -> list[SFTExample]:
    """One example per trajectory of the JSONL files: its last turn's `messages` plus that turn's reply.

    Lines are grouped by (file, problem, trajectory) and ordered by turn.  A trajectory with a hacked turn is
    always dropped (its reward was a lie, and its context shows the hack); with `only_correct`, so is one
    whose last turn is not correct.  `prefill` is the run's `assistant_prefill`: a stored response is the
    text generated after it.  `earlier_turns` also learns the earlier replies the prompt shows.  A line that
    is not JSON or lacks a field is a ConfigError naming `file:line`."""
    return _load_trajectories(paths, only_correct, prefill, earlier_turns)[0]


def solution_message(source: str, prefill: str = "") -> str:
    """A reply holding `source` as one ```python block, started with the prefill when the block does not
    already start with it (so the reply is one the RL engine could have continued)."""
    content = f"```python\n{source.strip()}\n```"
    return content if content.startswith(prefill) else prefill + content


def solution_examples(interaction: Interaction, names: Iterable[str] | None = None) -> list[SFTExample]:
    """Turn 1 of every bundled suite problem that ships a solution (all of them, or those in `names`),
    answered with that solution.

    The prompt is `interaction.first_messages(problem)`, built from the run's own `[interaction]` options,
    so what is learned is an answer to exactly the prompt RL shows."""
    from tritongym.core.problems import suite_names, suite_problem

    wanted = set(names) if names is not None else None
    examples = []
    for name in suite_names():
        if wanted is not None and name not in wanted:
            continue
        problem = suite_problem(name)
        if problem.solution is None:
            continue
        messages = interaction.first_messages(problem)
        messages.append(
            {"role": "assistant", "content": solution_message(problem.solution, interaction.options.assistant_prefill)}
        )
        examples.append(SFTExample(messages=messages, source=f"solution:{name}"))
    return examples


def _solution_names(config: RunConfig) -> list[str] | None:
    """The problems to take solutions of: the RL run's own problems when it draws them from the suite (so
    problems held out of RL stay held out of SFT), else every suite problem."""
    if config.rollout.problem_source not in (None, "", "suite"):
        return None
    return config.rollout.problems


def load_examples(config: RunConfig, data: Sequence[Path] | None = None) -> tuple[list[SFTExample], list[str]]:
    """The run's examples and a description of where they came from; a ConfigError, saying what to pass,
    when there are none."""
    files = list(config.sft.data if data is None else data)
    interaction = Interaction(config.interaction)
    if files:
        examples, counts = _load_trajectories(files, True, interaction.options.assistant_prefill, False)
        if not examples:
            names = ", ".join(map(str, files))
            raise ConfigError(
                f"no SFT examples in {names}: {counts.trajectories} trajectories, {counts.hacked} hacked, "
                f"{counts.incorrect} without a correct last turn; pass trajectory files from `tritongym rollouts` "
                "that hold correct, honest trajectories, or no data ([sft] data = []) to train on the bundled "
                "solutions"
            )
        return examples, [str(f) for f in files]
    names = _solution_names(config)
    examples = solution_examples(interaction, names)
    if not examples:
        raise ConfigError(
            f"no bundled solution for the problems [rollout] names ({', '.join(names or [])}); pass trajectory "
            "JSONL files from `tritongym rollouts` as SFT data ([sft] data or --data)"
        )
    return examples, ["bundled solutions"]
