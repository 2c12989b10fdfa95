"""Cold-start supervised fine-tuning (`tritongym sft`): teach a model the answer format and some working
kernels before RL, so the first RL steps are not spent on replies that hold no code at all.

Examples are whole conversations whose assistant messages are the targets.  They come from

- trajectory JSONL files (`tritongym rollouts`, `TurnRecord.to_json`): one example per trajectory, the
  prompt its last turn was shown plus that turn's reply; hacked trajectories are always dropped and, by
  default, so is every trajectory whose last turn is not correct;
- or, with no data, the bundled reference solutions: turn 1's prompt (`Interaction.first_messages`) and the
  solution in a ```python block, so the prompt is exactly the one RL will show.

Only assistant text is learned.  The mask comes from rendering prefixes of the conversation with the
tokenizer's own chat template (`render(messages[:i], add_generation_prompt=True)` is where reply i starts,
`render(messages[:i + 1])` is where it ends), so it holds for any template, not only ChatML: role headers,
system and user text are context; each reply's text and the end-of-turn token after it (so the model learns
to stop) are targets.  The rendered conversation is tokenised once, as a whole, as the RL engine tokenises
a prompt, and targets are picked by character offsets.

Training normalises the summed cross-entropy of an optimiser step by the step's *global* number of target
tokens, so the update does not depend on how the step's examples are padded, split into processes or
batched: `accelerate launch --num_processes N` takes the same steps as one process.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from pydantic import BaseModel

from tritongym.core.errors import ConfigError
from tritongym.core.generation import Message
from tritongym.core.interaction import Interaction
from tritongym.core.run_config import RunConfig

SFT_METRICS = "sft_metrics.jsonl"
"""Per-step losses, under the run's output_dir."""

SFT_MODEL = "sft-model"
"""Default model directory, under the run's output_dir: `[model] path = ...` of the RL run that follows."""

_REQUIRED = {
    "problem": str,
    "trajectory": int,
    "turn": int,
    "messages": list,
    "response": str,
    "correct": bool,
    "hacked": bool,
}


# --- examples --------------------------------------------------------------------------------------------


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


# --- tokenisation ----------------------------------------------------------------------------------------


@dataclass
class TokenizedExample:
    """Token ids of a rendered conversation and a 0/1 mask of the tokens learned."""

    input_ids: list[int]
    mask: list[int]
    truncated: bool = False
    source: str = ""

    @property
    def targets(self) -> int:
        """Tokens the loss counts; the first token is never one (nothing predicts it)."""
        return sum(self.mask[1:])


@dataclass
class _Span:
    """Characters of one learned reply in the rendered text: its content [start, content_end), then the
    template's text after it up to `end`, learned up to the first stop token.  `exact_end`: `end` is
    where the template ends this message (prefix rendering), so a tail without a stop token is the turn's
    end marker and is learned whole."""

    start: int
    content_end: int
    end: int
    exact_end: bool


def _render(tokenizer, messages: list[Message], generation_prompt: bool) -> str:
    if not messages and not generation_prompt:
        return ""
    try:
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation_prompt)
    except Exception:  # some templates index messages[0]: an empty conversation renders as nothing
        if messages:
            raise
        return ""


def _prefix_spans(tokenizer, messages: list[Message], targets: list[int], full: str) -> list[_Span] | None:
    """Spans from prefix renderings, or None when the template does not render prefixes as prefixes."""
    spans = []
    done = ""
    for i in targets:
        head = _render(tokenizer, messages[:i], generation_prompt=True)
        upto = _render(tokenizer, messages[: i + 1], generation_prompt=False)
        if not (head.startswith(done) and upto.startswith(head) and full.startswith(upto)):
            return None
        segment = upto[len(head) :]
        content = messages[i]["content"]
        # a template that rewrites the reply (trims it, say) leaves no verbatim content: the whole segment is
        # then learned up to its stop token
        content_end = len(head) + len(content) if segment.startswith(content) else len(head)
        spans.append(_Span(len(head), content_end, len(upto), exact_end=True))
        done = upto
    return spans


def _search_spans(messages: list[Message], targets: list[int], full: str, source: str) -> list[_Span]:
    """Spans found by looking for each message's text, in order, in the full rendering: for templates whose
    rendering of a message depends on what follows it (a system prompt moved into the last user message,
    say), where prefixes are not prefixes."""
    spans: list[_Span] = []
    wanted = set(targets)
    position = 0
    for i, message in enumerate(messages):
        content = message["content"]
        if not content:
            continue
        found = full.find(content, position)
        if found < 0:
            if i in wanted:
                raise ConfigError(
                    f"example {source or '?'}: the chat template neither renders conversations prefix by prefix "
                    f"nor keeps assistant message {i} verbatim, so its tokens cannot be located"
                )
            continue
        if spans and spans[-1].end == len(full):
            spans[-1].end = found  # the previous reply's tail ends where the next message's text starts
        if i in wanted:
            spans.append(_Span(found, found + len(content), len(full), exact_end=False))
        position = found + len(content)
    return spans


def _pieces(text: str, spans: list[_Span]) -> list[tuple[str, str]]:
    """(kind, text) pieces covering `text`: context, content and tail."""
    out, position = [], 0
    for span in spans:
        out += [("context", text[position : span.start]), ("content", text[span.start : span.content_end])]
        out.append(("tail", text[span.content_end : span.end]))
        position = span.end
    out.append(("context", text[position:]))
    return [(kind, piece) for kind, piece in out if piece or kind == "tail"]


def _mark_tail(mask: list[int], ids: list[int], tail: list[int], stop_ids: set[int], exact_end: bool) -> None:
    stop = next((k for k, t in enumerate(tail) if ids[t] in stop_ids), None)
    if stop is not None:
        learned = tail[: stop + 1]
    else:
        learned = tail if exact_end else []
    for t in learned:
        mask[t] = 1


def _offset_tokens(tokenizer, text: str, spans: list[_Span], stop_ids: set[int]) -> tuple[list[int], list[int]]:
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = list(encoded["input_ids"]), encoded["offset_mapping"]
    mask = [0] * len(ids)
    for span in spans:
        tail = []
        for t, (start, _end) in enumerate(offsets):
            # a token that starts in the header and runs into the reply is context: the model never writes it
            if span.start <= start < span.content_end:
                mask[t] = 1
            elif span.content_end <= start < span.end:
                tail.append(t)
        _mark_tail(mask, ids, tail, stop_ids, span.exact_end)
    return ids, mask


def _piece_tokens(tokenizer, text: str, spans: list[_Span], stop_ids: set[int]) -> tuple[list[int], list[int]]:
    """For tokenizers without offsets: tokenise piece by piece, which is how the engine splits a prompt and
    the reply it generates."""
    ids: list[int] = []
    mask: list[int] = []
    exact = iter(span.exact_end for span in spans)
    for kind, piece in _pieces(text, spans):
        piece_ids = list(tokenizer(piece, add_special_tokens=False)["input_ids"]) if piece else []
        first = len(ids)
        ids += piece_ids
        mask += [1 if kind == "content" else 0] * len(piece_ids)
        if kind == "tail":
            _mark_tail(mask, ids, list(range(first, len(ids))), stop_ids, next(exact))
    return ids, mask


def stop_token_ids(tokenizer, model=None) -> set[int]:
    """Tokens that end a reply: the tokenizer's eos and the model's generation eos ids (Llama 3 ends a turn
    with <|eot_id|>, which is not its tokenizer's eos)."""
    ids: set[int] = set()
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(eos, int):
        ids.add(eos)
    elif isinstance(eos, (list, tuple)):
        ids.update(int(e) for e in eos)
    return ids


def tokenize_example(
    tokenizer, example: SFTExample, max_length: int | None = None, stop_ids: Iterable[int] | None = None
) -> TokenizedExample:
    """The conversation rendered with the tokenizer's chat template, tokenised, with mask = 1 exactly on the
    learned replies' tokens and the end-of-turn token after each.

    Kept to its first `max_length` tokens (the prompt comes first and must stay whole for the reply to
    mean anything; a reply cut short still teaches its start)."""
    stop = set(stop_ids) if stop_ids is not None else stop_token_ids(tokenizer)
    messages = example.messages
    targets = example.target_indices()
    full = _render(tokenizer, messages, generation_prompt=False)
    spans = _prefix_spans(tokenizer, messages, targets, full)
    if spans is None:
        spans = _search_spans(messages, targets, full, example.source)
    if getattr(tokenizer, "is_fast", False):
        ids, mask = _offset_tokens(tokenizer, full, spans, stop)
    else:  # a slow tokenizer has no character offsets
        ids, mask = _piece_tokens(tokenizer, full, spans, stop)
    truncated = max_length is not None and len(ids) > max_length
    if truncated:
        ids, mask = ids[:max_length], mask[:max_length]
    return TokenizedExample(input_ids=ids, mask=mask, truncated=truncated, source=example.source)


# --- training --------------------------------------------------------------------------------------------


class SFTSummary(BaseModel):
    """What `tritongym sft` did."""

    examples: int
    truncated: int
    dropped: int = 0
    steps: int
    tokens: int
    first_loss: float
    last_loss: float
    losses: list[float]
    model_dir: str
    seconds: float
    data: list[str] = []


def _pad(rows: Sequence[TokenizedExample], pad_id: int, device) -> tuple[torch.Tensor, ...]:
    width = max(len(r.input_ids) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    targets = torch.zeros((len(rows), width), dtype=torch.bool)
    for i, r in enumerate(rows):
        n = len(r.input_ids)
        ids[i, :n] = torch.tensor(r.input_ids, dtype=torch.long)
        attention[i, :n] = 1
        targets[i, :n] = torch.tensor(r.mask, dtype=torch.bool)
    return ids.to(device), attention.to(device), targets.to(device)


def masked_nll(model, rows: Sequence[TokenizedExample], pad_id: int) -> tuple[torch.Tensor, int]:
    """Summed cross-entropy of the rows' target tokens (float32), and how many there are.  A sum, not a
    mean: the caller divides by the optimiser step's global target count."""
    device = next(model.parameters()).device
    ids, attention, targets = _pad(rows, pad_id, device)
    logits = model(input_ids=ids, attention_mask=attention, use_cache=False).logits[:, :-1]
    wanted = targets[:, 1:]
    picked = logits[wanted].float()
    labels = ids[:, 1:][wanted]
    return torch.nn.functional.cross_entropy(picked, labels, reduction="sum"), int(wanted.sum())


class SFTTrainer:
    """The model, tokenizer and optimiser of one SFT run; `run_sft` is the usual way in."""

    def __init__(self, config: RunConfig, accelerator=None) -> None:
        from accelerate import Accelerator

        from tritongym.core.model_loading import load_model, load_tokenizer

        self.config = config
        precision = config.optim.precision
        if precision == "auto":
            precision = "bf16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "no"
        self.accelerator = accelerator or Accelerator(mixed_precision=precision, cpu=not torch.cuda.is_available())
        torch.manual_seed(config.seed)
        self.tokenizer = load_tokenizer(config.model)
        model = load_model(config.model, device="cpu", dtype="float32")
        self.stop_ids = stop_token_ids(self.tokenizer, model)
        optimizer = torch.optim.AdamW(
            model.parameters(), lr=config.sft.lr, betas=config.optim.betas, weight_decay=config.optim.weight_decay
        )
        self.model, self.optimizer = self.accelerator.prepare(model, optimizer)
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0

    def tokenize(self, examples: Sequence[SFTExample]) -> list[TokenizedExample]:
        return [tokenize_example(self.tokenizer, e, self.config.sft.max_length, self.stop_ids) for e in examples]

    def _global_sum(self, value: float) -> float:
        if self.accelerator.num_processes == 1:
            return value
        tensor = torch.tensor([value], dtype=torch.float64, device=self.accelerator.device)
        return float(self.accelerator.reduce(tensor, reduction="sum"))

    def train(
        self,
        rows: Sequence[TokenizedExample],
        progress: Callable[[int, int], None] | None = None,
        metrics_path: Path | None = None,
    ) -> list[dict]:
        """`epochs` passes over the rows in a seeded order, one optimiser step per `micro_batch` rows.

        Every process sees every row and the same order; a step's rows are split across processes
        (rows[rank::world]), and each process's summed loss is divided by the step's global target count and
        multiplied by the world size (data-parallel averaging divides it again), so the update is the one a
        single process would make.  A process left without rows still runs backward, at weight 0, because
        the gradient all-reduce needs every process."""
        sft = self.config.sft
        rank, world = self.accelerator.process_index, self.accelerator.num_processes
        rng = random.Random(self.config.seed)
        total = sft.epochs * math.ceil(len(rows) / sft.micro_batch)
        params = [p for p in self.model.parameters() if p.requires_grad]
        clip = self.config.optim.grad_clip
        logs: list[dict] = []
        if metrics_path is not None and self.accelerator.is_main_process:
            metrics_path.parent.mkdir(parents=True, exist_ok=True)
            metrics_path.write_text("")
        self.model.train()
        for epoch in range(sft.epochs):
            order = list(range(len(rows)))
            rng.shuffle(order)
            for start in range(0, len(order), sft.micro_batch):
                batch = [rows[i] for i in order[start : start + sft.micro_batch]]
                global_tokens = sum(r.targets for r in batch)
                mine = batch[rank::world]
                if mine:
                    summed, _ = masked_nll(self.model, mine, self.pad_id)
                    loss = summed * (world / global_tokens)
                    local = float(summed.detach())
                else:
                    summed, _ = masked_nll(self.model, batch[:1], self.pad_id)
                    loss, local = summed * 0.0, 0.0
                self.accelerator.backward(loss)
                if clip is not None:
                    grad_norm = float(self.accelerator.clip_grad_norm_(params, clip))
                else:
                    norms = [p.grad.norm() for p in params if p.grad is not None]
                    grad_norm = float(torch.norm(torch.stack(norms))) if norms else 0.0
                self.optimizer.step()
                self.optimizer.zero_grad(set_to_none=True)
                step = len(logs)
                log = {
                    "step": step,
                    "epoch": epoch,
                    "loss": self._global_sum(local) / global_tokens,
                    "tokens": global_tokens,
                    "examples": len(batch),
                    "grad_norm": grad_norm,
                }
                logs.append(log)
                if metrics_path is not None and self.accelerator.is_main_process:
                    with metrics_path.open("a") as f:
                        f.write(json.dumps(log) + "\n")
                if progress is not None:
                    progress(step + 1, total)
        self.model.eval()
        return logs

    def save(self, path: Path) -> Path:
        """Model and tokenizer (pad token and chat template included) as a directory `[model] path` loads."""
        self.accelerator.wait_for_everyone()
        if self.accelerator.is_main_process:
            path.mkdir(parents=True, exist_ok=True)
            self.accelerator.unwrap_model(self.model).save_pretrained(path)
            self.tokenizer.save_pretrained(path)
        self.accelerator.wait_for_everyone()
        return path


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


def run_sft(
    config: RunConfig,
    data: list[Path] | None = None,
    output: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
    accelerator=None,
) -> SFTSummary:
    """Fine-tune `config.model` on the examples (`data`, else `config.sft.data`, else the bundled solutions)
    and save it to `output` (default OUTPUT_DIR/sft-model); per-step losses go to OUTPUT_DIR/sft_metrics.jsonl.

    The data is read and checked before the model loads, so a bad file fails in a second."""
    started = time.perf_counter()
    examples, sources = load_examples(config, data)
    trainer = SFTTrainer(config, accelerator)
    tokenized = trainer.tokenize(examples)
    rows = [r for r in tokenized if r.targets > 0]
    if not rows:
        raise ConfigError(
            f"every SFT example was cut before its first assistant token at [sft] max_length = "
            f"{config.sft.max_length}; raise max_length"
        )
    out_dir = Path(config.output_dir)
    logs = trainer.train(rows, progress, out_dir / SFT_METRICS)
    model_dir = trainer.save(Path(output) if output is not None else out_dir / SFT_MODEL)
    losses = [log["loss"] for log in logs]
    return SFTSummary(
        examples=len(rows),
        truncated=sum(r.truncated for r in tokenized),
        dropped=len(tokenized) - len(rows),
        steps=len(logs),
        tokens=sum(log["tokens"] for log in logs),
        first_loss=losses[0],
        last_loss=losses[-1],
        losses=losses,
        model_dir=str(model_dir),
        seconds=time.perf_counter() - started,
        data=sources,
    )
