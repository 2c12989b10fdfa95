"""The multi-turn conversation with a model (ARCHITECTURE.md §6–§7): what it is asked, what it is told, and which
part of its answer is evaluated.

- Turn 1 is a system message and the task (`task.md`): the instruction, a short worked Triton example
  (`example.md`), the problem's reference code and the `ModelNew` contract.
- After each turn, the next user message is the evaluation rendered by `core/learn/feedback.py` (tracebacks
  included for compile and runtime errors), wrapped in `feedback.md`, or, for an answer without code, the
  zero-reward verdict of `no_code_feedback`.
- `extract_code` takes the last fenced ```python block of an answer (the assistant prefill included).
- Context: `full` replays every earlier turn; `top-w` shows the task and the `top_w` best earlier turns by
  reward, in turn order; `best-window` shows the task and the `top_w` consecutive earlier turns with the
  highest total reward (a contiguous best window), in turn order.  A mode is one function in
  `CONTEXT_SELECTORS` that picks which earlier turns a prompt shows, so adding one is a function and a
  name in `context`.

Templates are plain `string.Template` files (`$name` placeholders, `$$` for a literal `$`) bundled in
`tritongym/templates`; each can be replaced by a file of one's own through `InteractionOptions`.  A
template that uses an unknown placeholder, or leaves out a required one, is a `ConfigError` when the
`Interaction` is built, before any model is asked anything.

A conversation's history is a list of `Turn`s, turn 1 first: a turn's number is its position.  The prompt
of turn k states k, `max_turns` and the turns left; in `full` mode the prompt of turn k is exactly the
prompt of turn k - 1 followed by that turn's answer and feedback, so every training row's prompt is the
conversation the model really saw.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, FiniteFloat, ValidationError, model_validator

from tritongym.core.errors import ConfigError
from tritongym.core.generation import Message
from tritongym.core.learn.feedback import render_feedback as render_evaluation
from tritongym.core.models import EvaluationResult, Problem

TEMPLATES_DIR = Path(__file__).resolve().parents[2] / "templates"

_TURN_PLACEHOLDERS = frozenset({"turn", "max_turns", "turns_left"})


@dataclass(frozen=True)
class _TemplateSpec:
    option: str
    bundled: str
    allowed: frozenset[str]  # placeholders the template may use
    required: frozenset[str]  # placeholders it must use (a prompt without them is a broken prompt)


_TEMPLATES = (
    _TemplateSpec("system_template", "system.md", frozenset(), frozenset()),
    _TemplateSpec(
        "task_template",
        "task.md",
        _TURN_PLACEHOLDERS | {"problem_name", "description", "reference_code", "example"},
        frozenset({"reference_code"}),
    ),
    _TemplateSpec("feedback_template", "feedback.md", _TURN_PLACEHOLDERS | {"feedback"}, frozenset({"feedback"})),
)
_EXAMPLE = _TemplateSpec("example_file", "example.md", frozenset(), frozenset())  # inserted as is, not a template


class InteractionOptions(BaseModel):
    """How a model is prompted over a multi-turn rollout (the `[interaction]` table of a run config).

    A template path left unset is the bundled file in `tritongym/templates`; a relative path is taken from
    the working directory."""

    model_config = ConfigDict(extra="forbid")

    system_template: Path | None = Field(
        default=None, description="system prompt file; no placeholders (None = the bundled system.md)"
    )
    task_template: Path | None = Field(
        default=None,
        description="turn-1 prompt file with $problem_name, $description, $reference_code (required), $example, "
        "$turn, $max_turns, $turns_left (None = the bundled task.md)",
    )
    feedback_template: Path | None = Field(
        default=None,
        description="file wrapping the evaluation of an earlier turn, with $feedback (required), $turn (the turn "
        "about to be written), $max_turns, $turns_left (counting that turn) (None = the bundled feedback.md)",
    )
    example_file: Path | None = Field(
        default=None,
        description="worked example inserted as $example in the task, as is (None = the bundled example.md)",
    )
    context: Literal["full", "top-w", "best-window"] = Field(
        default="full",
        description="earlier turns a prompt shows: full = all of them; top-w = the top_w best by reward "
        "(ties: the later turn), in turn order; best-window = the top_w consecutive turns with the highest "
        "total reward (ties: the later window), in turn order",
    )
    top_w: int = Field(default=4, ge=1, description="earlier turns shown in the top-w and best-window contexts")
    max_turns: int = Field(default=3, ge=1, description="turns per conversation")
    assistant_prefill: str = Field(
        default="",
        description="text the engine starts each assistant reply with, e.g. '```python\\n'; code is extracted "
        "from prefill + reply, and earlier replies are shown with it",
    )

    @model_validator(mode="after")
    def _files_exist(self) -> InteractionOptions:
        for spec in (*_TEMPLATES, _EXAMPLE):
            path = getattr(self, spec.option)
            if path is not None and not path.expanduser().is_file():
                raise ConfigError(f"interaction option {spec.option}: no such file {path}")
        return self

    def path_of(self, option: str) -> Path:
        """The file an option names, or the bundled file it defaults to."""
        spec = next(s for s in (*_TEMPLATES, _EXAMPLE) if s.option == option)
        path = getattr(self, option)
        return path.expanduser() if path is not None else TEMPLATES_DIR / spec.bundled


class CodeExtraction(BaseModel):
    """The code an answer gives, or None with the reason there is none."""

    model_config = ConfigDict(extra="forbid")

    code: str | None
    reason: str = Field(default="", description="why `code` is None; empty when there is code")
    span: tuple[int, int] | None = Field(
        default=None,
        description="[start, end) character offsets, in the text extracted from, of the fenced block the code "
        "came from: the opening fence line to the end of the closing fence (or of the text); None without code",
    )


class Turn(BaseModel):
    """One turn of a conversation: the model's reply, the code taken from it, and what it was told."""

    model_config = ConfigDict(extra="forbid")

    response: str = Field(description="the generated reply, without the assistant prefill")
    code: str | None = Field(description="the code extracted from prefill + response; None = no code")
    feedback: str = Field(description="the rendered evaluation, or the no-code verdict (without feedback.md)")
    reward: FiniteFloat = Field(description="the turn's reward; 0 when there was no code")


# --- code extraction ----------------------------------------------------------------------------------

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,})[ \t]*(?P<info>[^`]*?)[ \t]*$")
_PYTHON_TAGS = frozenset({"python", "py", "python3", "py3"})
NO_BLOCK = "no fenced ```python code block in the response"
EMPTY_BLOCK = "empty code block"


@dataclass
class _Block:
    tag: str
    ticks: int
    indent: int
    start: int  # offset of the opening fence line in the text
    end: int = -1  # offset just after the closing fence (the end of the text for an unclosed block)
    lines: list[str] = field(default_factory=list)
    nested: int = 0  # fences opened inside this block and not yet closed


_LINE = re.compile(r"[^\r\n]*")


def _lines(text: str):
    """(line, start offset, end offset without its line break) per line, split at \\n, \\r\\n or \\r."""
    position = 0
    while True:
        end = _LINE.match(text, position).end()
        yield text[position:end], position, end
        if end == len(text):
            return
        position = end + (2 if text.startswith("\r\n", end) else 1)


def _blocks(text: str) -> list[_Block]:
    """Fenced blocks in order, CommonMark-style with nesting: inside a block, a fence with an info string
    (```python in a docstring, a block inside a ```markdown block) opens a nested fence whose bare closing
    fence is content too; otherwise the block closes at a bare fence at least as long as the one that opened
    it and indented at most 3 columns deeper.  An unclosed last block runs to the end of the text."""
    blocks: list[_Block] = []
    current: _Block | None = None
    for line, start, end in _lines(text):
        fence = _FENCE.match(line)
        if current is None:
            if fence:
                info = fence["info"].split()
                tag = info[0].lower().lstrip("{.") if info else ""
                current = _Block(tag, len(fence["ticks"]), len(fence["indent"]), start)
            continue
        if fence and fence["info"]:
            current.nested += 1
        elif fence and current.nested:
            current.nested -= 1
        elif fence and len(fence["ticks"]) >= current.ticks and len(fence["indent"]) <= current.indent + 3:
            current.end = end
            blocks.append(current)
            current = None
            continue
        # content of a block opened at indent n loses up to n leading spaces, as in CommonMark
        strip = min(current.indent, len(line) - len(line.lstrip(" ")))
        current.lines.append(line[strip:])
    if current is not None:
        current.end = len(text)
        blocks.append(current)
    return blocks


def extract_code(text: str) -> CodeExtraction:
    """The last fenced block tagged python/py/python3 (or, if none is, the last untagged block), with leading
    blank lines and trailing whitespace removed, and where that block lies in `text` (`span`: HRD's code
    span, fences included).  An unterminated last block counts up to the end of the text (a reply cut at
    max_tokens, or a prefill that opened the fence).  Other tags (bash, cuda, text) never count; `~~~`
    fences are not recognised."""
    blocks = _blocks(text)
    chosen = [b for b in blocks if b.tag in _PYTHON_TAGS] or [b for b in blocks if not b.tag]
    if not chosen:
        others = sorted({b.tag for b in blocks})
        return CodeExtraction(
            code=None, reason=NO_BLOCK + (f" (only blocks tagged {', '.join(others)})" if others else "")
        )
    lines = chosen[-1].lines
    while lines and not lines[0].strip():
        lines = lines[1:]
    code = "\n".join(lines).rstrip()
    if not code:
        return CodeExtraction(code=None, reason=f"{EMPTY_BLOCK}: the last ```python block of the response is empty")
    return CodeExtraction(code=code, span=(chosen[-1].start, chosen[-1].end))


def no_code_feedback(extraction: CodeExtraction) -> str:
    """The verdict on a reply that gave no code to evaluate."""
    return (
        f"Nothing was evaluated: {extraction.reason}. This turn earns reward 0.\n\n"
        "Answer with one fenced ```python block containing the whole file that defines `ModelNew`: the imports, "
        "your @triton.jit kernels and the ModelNew class. Only the last ```python block of an answer is evaluated."
    )


# --- context selection ----------------------------------------------------------------------------------

ContextSelector = Callable[[list[Turn], InteractionOptions], list[int]]
"""Which earlier turns the next prompt shows: 0-based indices into the history, ascending."""


def _full_context(history: list[Turn], options: InteractionOptions) -> list[int]:
    return list(range(len(history)))


def _top_w_context(history: list[Turn], options: InteractionOptions) -> list[int]:
    """The `top_w` turns with the highest reward; among equal rewards the later turn (the model's latest
    attempt at that level) is kept.  Shown in turn order."""
    ranked = sorted(range(len(history)), key=lambda i: (-history[i].reward, -i))
    return sorted(ranked[: options.top_w])


def _best_window_context(history: list[Turn], options: InteractionOptions) -> list[int]:
    """The contiguous best window: with n earlier turns and w = `top_w`, the candidates are the n - w + 1
    runs of w consecutive turns (turns i+1 .. i+w for i = 0 .. n - w); the one whose rewards have the
    highest sum (exactly rounded, `math.fsum`) is shown, in turn order.  Among windows of equal sum the
    later one (the model's latest run at that level) is kept, so all-equal rewards show the last w turns.
    With n <= w there is one window, the whole history.  A hack penalty in a window counts against it like
    any other reward."""
    w = min(options.top_w, len(history))
    if w == 0:
        return []
    sums = [math.fsum(turn.reward for turn in history[start : start + w]) for start in range(len(history) - w + 1)]
    best = max(range(len(sums)), key=lambda start: (sums[start], start))
    return list(range(best, best + w))


CONTEXT_SELECTORS: dict[str, ContextSelector] = {
    "full": _full_context,
    "top-w": _top_w_context,
    "best-window": _best_window_context,
}
"""Context mode (`InteractionOptions.context`) -> its selector."""


# --- templates ------------------------------------------------------------------------------------------


def _placeholders(template: Template, where: str) -> set[str]:
    names: set[str] = set()
    for match in template.pattern.finditer(template.template):
        if match["invalid"] is not None:
            line = template.template.count("\n", 0, match.start()) + 1
            raise ConfigError(f"{where}, line {line}: a '$' that starts no placeholder; write '$$' for a literal '$'")
        if match["named"] or match["braced"]:
            names.add(match["named"] or match["braced"])
    return names


def _read(options: InteractionOptions, spec: _TemplateSpec) -> str:
    path = options.path_of(spec.option)
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"interaction option {spec.option}: cannot read {path}: {exc}") from None


def _load_template(options: InteractionOptions, spec: _TemplateSpec) -> Template:
    path = options.path_of(spec.option)
    template = Template(_read(options, spec))
    where = f"template {path} ({spec.option})"
    used = _placeholders(template, where)
    allowed = ", ".join(f"${name}" for name in sorted(spec.allowed)) or "none"
    unknown = sorted(used - spec.allowed)
    if unknown:
        raise ConfigError(
            f"{where} uses unknown placeholder {', '.join('$' + n for n in unknown)} (allowed: {allowed}); "
            "write '$$' for a literal '$'"
        )
    missing = sorted(spec.required - used)
    if missing:
        raise ConfigError(f"{where} must use {', '.join('$' + n for n in missing)}")
    template.substitute({name: f"<{name}>" for name in spec.allowed})  # renders with every value it can get
    return template


class Interaction:
    """The conversation protocol of one run: options plus the templates, read and checked once.

    A rollout engine calls `next_messages(problem, history)` for each turn, starts the assistant reply with
    `options.assistant_prefill`, passes the reply to `extract`, evaluates the code if there is some, and
    appends `make_turn(...)` to the history."""

    def __init__(self, options: InteractionOptions | dict | None = None) -> None:
        if not isinstance(options, InteractionOptions):
            try:
                options = InteractionOptions.model_validate(options or {})
            except ValidationError as exc:
                from tritongym.core.config import validation_message

                raise ConfigError(validation_message(exc, "interaction options")) from None
        self.options = options
        system, task, feedback = (_load_template(options, spec) for spec in _TEMPLATES)
        self.system_template = system
        self.task_template = task
        self.feedback_template = feedback
        self.example = _read(options, _EXAMPLE).strip()

    def _turn_values(self, turn: int) -> dict[str, str]:
        max_turns = self.options.max_turns
        if not 1 <= turn <= max_turns:
            raise ValueError(f"turn {turn} is outside 1..{max_turns} (max_turns)")
        return {"turn": str(turn), "max_turns": str(max_turns), "turns_left": str(max_turns - turn + 1)}

    def task_message(self, problem: Problem) -> str:
        return self.task_template.substitute(
            problem_name=problem.name,
            description=problem.description,
            reference_code=problem.source.strip(),
            example=self.example,
            **self._turn_values(1),
        )

    def feedback_message(self, feedback: str, next_turn: int) -> str:
        """`feedback.md` around an evaluation text, stated as the prompt of turn `next_turn`."""
        return self.feedback_template.substitute(feedback=feedback.strip(), **self._turn_values(next_turn)).strip()

    def render_feedback(self, result: EvaluationResult, turn: int) -> str:
        """The user message after turn `turn` (1-based) was evaluated: the evaluation as `core/learn/feedback.py`
        renders it, in `feedback.md`, as the prompt of turn `turn + 1` (so `turn < max_turns`)."""
        return self.feedback_message(render_evaluation(result), turn + 1)

    def first_messages(self, problem: Problem) -> list[Message]:
        """System prompt and task: the prompt of turn 1."""
        return self.next_messages(problem, [])

    def next_messages(self, problem: Problem, history: list[Turn], seeds: Sequence[Turn] = ()) -> list[Message]:
        """The prompt of turn `len(history) + 1`: system, task, then each earlier turn the context mode
        selects, as its reply (prefill included) and its feedback.  The user message after a shown turn is
        the prompt of the next turn shown (or of the turn now asked for), and states that turn's number.

        `seeds` are kernels found before this conversation (the registry's best, from any earlier run): shown
        first, like earlier turns, always (the context mode chooses among this conversation's own turns), and
        not counted as turns."""
        turn = len(history) + 1
        if turn > self.options.max_turns:
            raise ValueError(f"{len(history)} turns already taken: max_turns is {self.options.max_turns}")
        messages: list[Message] = [
            {"role": "system", "content": self.system_template.substitute().strip()},
            {"role": "user", "content": self.task_message(problem).strip()},
        ]
        shown = CONTEXT_SELECTORS[self.options.context](history, self.options)
        first_shown = shown[0] + 1 if shown else turn
        for seed in seeds:
            messages.append({"role": "assistant", "content": self.options.assistant_prefill + seed.response})
            messages.append({"role": "user", "content": self.feedback_message(seed.feedback, first_shown)})
        for position, index in enumerate(shown):
            following = shown[position + 1] + 1 if position + 1 < len(shown) else turn
            messages.append({"role": "assistant", "content": self.options.assistant_prefill + history[index].response})
            messages.append({"role": "user", "content": self.feedback_message(history[index].feedback, following)})
        return messages

    def extract(self, response: str) -> CodeExtraction:
        """The code of a reply that was started with the assistant prefill."""
        return extract_code(self.options.assistant_prefill + response)

    def make_turn(
        self, response: str, extraction: CodeExtraction, result: EvaluationResult | None, notes: tuple[str, ...] = ()
    ) -> Turn:
        """The history entry for a reply: its evaluation and reward, or the zero-reward no-code verdict;
        `notes` are added to the evaluation's feedback (what tuning the kernel found)."""
        if extraction.code is None:
            return Turn(response=response, code=None, feedback=no_code_feedback(extraction), reward=0.0)
        if result is None:
            raise ValueError("a reply with code needs the EvaluationResult of that code")
        return Turn(
            response=response,
            code=extraction.code,
            feedback=render_evaluation(result, notes=notes),
            reward=result.reward.total,
        )
