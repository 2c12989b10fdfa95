"""The RL trainer: rollouts through the gym, advantages from the configured estimator and filters, the
PPO loss, AdamW, and the new weights pushed to the engine after every step.

Data parallel with accelerate: each process rolls out its share of the step's prompts (whole prompt
groups, so leave-one-out baselines stay local), and every loss is normalised by the *global* number of
sequences (or tokens) of the step, so the gradient does not depend on how rows are split into processes
or micro-batches: `accelerate launch --num_processes N` gives the same update as one process.

On a GPU the policy trains and generates where `[placement]` puts it (`core/learn/placement.py`).  When the judge
shares that GPU, rollouts do not overlap generation with judging (`RolloutRunner.for_run`), and the trainer tells
the judge's pool how much of the GPU it holds (`core/learn/gpu_memory.py`): an estimate before the first rollout,
raised to the measured peak after each step.  Each step's metrics split its time (`time/generate_s`,
`time/judge_s`: waiting for the judge, `time/update_s`: old log-probs, advantages and the update, `time/push_s`)
and, on CUDA, the trainer's peak memory per phase (`memory/*_mb`, torch's reserved memory).
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import torch

from tritongym.core.learn.accelerated import clipped_step, global_sum, make_accelerator
from tritongym.core.learn.gpu_memory import ModelShape, TrainerMemory, estimate_mb, measured_mb
from tritongym.core.learn.policy_loss import policy_loss
from tritongym.core.learn.rollouts import RolloutBatch, RolloutRunner, TurnRecord
from tritongym.core.learn.run_config import RunConfig
from tritongym.core.learn.run_setup import RunParts
from tritongym.core.learn.spans import code_token_mask
from tritongym.core.learn.token_rows import TokenRow, sequence_logprobs
from tritongym.core.turn_batch import TurnBatch, TurnRow


@dataclass
class StepResult:
    step: int
    loss: float
    metrics: dict[str, float] = field(default_factory=dict)


def turn_rows(
    records: list[TurnRecord],
    old_logprobs: list[list[float]],
    group_offset: int = 0,
    code_masks: list[list[bool]] | None = None,
) -> list[TurnRow]:
    """The estimator's view of a step's turns (one row per turn); `code_masks` marks each turn's code tokens."""
    rows = []
    for index, (record, old) in enumerate(zip(records, old_logprobs)):
        result = record.result
        rows.append(
            TurnRow(
                group=record.group + group_offset,
                trajectory=record.trajectory,
                turn=record.turn,
                reward=record.reward.total,
                components=dict(record.reward.components),
                correct=record.correct,
                hacked=record.hacked,
                has_code=record.code is not None,
                pr=result.pr if result is not None else None,
                rollout_logprobs=list(record.generation.logprobs),
                train_logprobs=list(old),
                code_mask=None if code_masks is None else code_masks[index],
            )
        )
    return rows


def step_metrics(records: list[TurnRecord]) -> dict[str, float]:
    """Reward, its components and the verdict rates, overall and per turn (Fast@p as the field defines it:
    correct, not hacked, and at least p times faster than the reference)."""
    out: dict[str, float] = {}
    if not records:
        return out
    out["reward"] = sum(r.reward.total for r in records) / len(records)
    names = sorted({n for r in records for n in r.reward.components})
    for name in names:
        values = [r.reward.components[name] for r in records if name in r.reward.components]
        if values:
            out[f"reward/{name}"] = sum(values) / len(values)
    for turn in sorted({r.turn for r in records}):
        at = [r for r in records if r.turn == turn]
        n = len(at)
        out[f"turn{turn + 1}/correct"] = sum(r.correct for r in at) / n
        out[f"turn{turn + 1}/hacked"] = sum(r.hacked for r in at) / n
        out[f"turn{turn + 1}/no_code"] = sum(r.code is None for r in at) / n
        for p in (1.0, 1.2):
            fast = sum(r.correct and (r.result.speedup or 0.0) >= p for r in at)
            out[f"turn{turn + 1}/fast@{p:g}"] = fast / n
    prs = [r.result.pr for r in records if r.correct and r.result.pr is not None]
    if prs:
        out["pr"] = sum(prs) / len(prs)
    return out


class Trainer:
    """One policy, one engine, one plugin set: `run()` trains for `optim.steps` steps."""

    def __init__(self, parts: RunParts, registry=None, run_id: int | None = None, accelerator=None) -> None:
        from tritongym.core.learn.model_loading import load_model, load_tokenizer

        self.parts = parts
        self.config: RunConfig = parts.config
        self.registry = registry
        self.run_id = run_id
        placement = parts.placement
        self.accelerator = accelerator or make_accelerator(self.config.optim.precision, placement.policy_device)
        # the policy's GPU, where its memory is measured (None on the CPU)
        self.gpu = torch.device(placement.policy_device) if placement.policy_device.startswith("cuda") else None
        self.declared_mb = 0.0  # what the judge's pool was told this process holds on the GPU they share
        self.estimate: TrainerMemory | None = None
        torch.manual_seed(self.config.seed + self.accelerator.process_index)
        self.tokenizer = load_tokenizer(self.config.model)
        model = load_model(self.config.model, device="cpu", dtype="float32")
        optim = self.config.optim
        optimizer = torch.optim.AdamW(
            model.parameters(), lr=optim.lr, betas=optim.betas, weight_decay=optim.weight_decay
        )
        self.model, self.optimizer = self.accelerator.prepare(model, optimizer)
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        world = self.accelerator.num_processes
        if self.config.rollout.prompts_per_step % world:
            raise ValueError(
                f"[rollout] prompts_per_step = {self.config.rollout.prompts_per_step} must be a multiple of the "
                f"{world} processes, so each process rolls out whole prompt groups"
            )
        self.runner = RolloutRunner.for_run(parts, registry, run_id)
        self.step = 0
        self.metrics_path = Path(self.config.output_dir) / "metrics.jsonl"

    # --- pieces -------------------------------------------------------------------------------------------

    def _token_rows(self, records: list[TurnRecord]) -> list[TokenRow]:
        return [TokenRow(list(r.generation.prompt_token_ids), list(r.generation.token_ids)) for r in records]

    def code_masks(self, records: list[TurnRecord]) -> list[list[bool]]:
        """Per turn, which sampled tokens lie in the code block the gym evaluated (`core/learn/spans.py`):
        what an estimator that splits plan from code (HRD) reads as `TurnBatch.code_mask`."""
        prefill = self.parts.interaction.options.assistant_prefill

        def decode(ids) -> str:
            return self.tokenizer.decode(list(ids), skip_special_tokens=True, clean_up_tokenization_spaces=False)

        return [code_token_mask(decode, r.generation.token_ids, prefill) for r in records]

    @torch.no_grad()
    def old_logprobs(self, rows: list[TokenRow]) -> list[list[float]]:
        """The trainer's log-probs of the sampled tokens before the update (MRS's π_train, PPO's π_old)."""
        self.model.eval()
        out: list[list[float]] = []
        size = self.config.optim.micro_batch
        for start in range(0, len(rows), size):
            chunk = rows[start : start + size]
            logprobs, _, _ = sequence_logprobs(self.model, chunk, self.pad_id)
            out += [logprobs[i, : len(r.response_ids)].tolist() for i, r in enumerate(chunk)]
        return out

    def _all_reduce_gradients(self, params: list[torch.nn.Parameter]) -> None:
        """Sum gradients over processes in one flat all-reduce.  The backward passes ran under `no_sync`, so
        a process with fewer micro-batches than another never leaves DDP waiting for a missing hook."""
        if self.accelerator.num_processes == 1:
            return
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
        flat = self.accelerator.reduce(torch.cat([g.reshape(-1) for g in grads]), reduction="sum")
        offset = 0
        for p in params:
            n = p.numel()
            p.grad = flat[offset : offset + n].view_as(p).clone()
            offset += n

    def update(self, rows: list[TokenRow], batch: TurnBatch, signal, global_units: float) -> dict[str, float]:
        """One optimiser step on this process's rows (all epochs).  Every micro-batch's loss is its share of
        the step's *global* mean (`global_units`: sequences or tokens over all processes) and gradients are
        summed over processes, so the update equals one process's on the whole batch."""
        loss_options = self.config.loss
        mask = signal.mask
        by_tokens = loss_options.aggregation == "token-mean"
        old = batch.train_logprobs.to(torch.float32)
        size = self.config.optim.micro_batch
        epochs = self.config.optim.epochs
        totals = {"loss": 0.0, "clipped": 0.0, "tokens": 0.0, "entropy": 0.0}
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.model.train()
        with self.accelerator.no_sync(self.model):
            for _epoch in range(epochs):
                for start in range(0, len(rows), size):
                    idx = slice(start, start + size)
                    chunk, chunk_mask = rows[idx], mask[idx]
                    units = float(chunk_mask.sum()) if by_tokens else float(chunk_mask.any(dim=1).sum())
                    if units == 0:
                        continue
                    width = chunk_mask.shape[1]
                    logprobs, _, entropy = sequence_logprobs(self.model, chunk, self.pad_id, with_entropy=True)
                    logprobs = _fit(logprobs, width)
                    device = logprobs.device
                    out = policy_loss(
                        logprobs,
                        _fit(old[idx], width).to(device),
                        signal.advantages[idx].to(device, torch.float32),
                        chunk_mask.to(device),
                        loss_options,
                        weights=signal.weights[idx].to(device, torch.float32),
                    )
                    loss = out.loss * (units / global_units) / epochs
                    self.accelerator.backward(loss)
                    totals["loss"] += float(loss.detach())
                    totals["clipped"] += out.clip_fraction * out.tokens
                    totals["tokens"] += float(chunk_mask.sum())
                    totals["entropy"] += float(_fit(entropy.detach(), width)[chunk_mask.to(device)].sum())
        self._all_reduce_gradients(params)
        grad_norm = clipped_step(self.accelerator, self.optimizer, params, self.config.optim.grad_clip)
        tokens = max(global_sum(self.accelerator, totals["tokens"]), 1.0)
        return {
            "loss": global_sum(self.accelerator, totals["loss"]),
            "grad_norm": grad_norm,
            "entropy": global_sum(self.accelerator, totals["entropy"]) / tokens,
            "clip_fraction": global_sum(self.accelerator, totals["clipped"]) / tokens,
        }

    def push_weights(self) -> None:
        state = self.accelerator.unwrap_model(self.model).state_dict()
        self.parts.engine.load_weights(state)

    # --- the GPU the judge shares -------------------------------------------------------------------------

    def estimate_memory(self) -> TrainerMemory:
        """This process's GPU memory as `gpu_memory.estimate_mb` weighs it, from the policy, the engine's copy
        (if on the same GPU), the run's longest first prompt and its batch sizes."""
        from tritongym.core.learn.model_loading import render_prompt

        config = self.config
        policy = self.accelerator.unwrap_model(self.model)
        engine = self.parts.engine
        engine_model = getattr(engine, "model", None)
        engine_bytes = 0
        if isinstance(engine_model, torch.nn.Module):
            first = next(engine_model.parameters(), None)
            if first is not None and first.device == _indexed(self.gpu):
                engine_bytes = first.element_size()
        interaction = self.parts.interaction
        prompt = max(
            len(render_prompt(self.tokenizer, interaction.next_messages(problem, [], ())))
            for problem in self.parts.problems
        )
        prompt += len(self.tokenizer(interaction.options.assistant_prefill, add_special_tokens=False)["input_ids"])
        conversations = config.rollout.prompts_per_step * config.rollout.samples // self.accelerator.num_processes
        batch = min(getattr(engine.options, "batch_size", None) or conversations, conversations)
        return estimate_mb(
            ModelShape.from_model(policy),
            engine_bytes=engine_bytes,
            prompt_tokens=prompt,
            max_tokens=config.sampling.max_tokens,
            max_turns=interaction.options.max_turns,
            generation_batch=max(batch, 1),
            micro_batch=config.optim.micro_batch,
            activation_bytes=4 if self.accelerator.mixed_precision == "no" else 2,
        )

    def declare_memory(self, mb: float) -> None:
        """Tell the judge's pool this process holds `mb` MiB of the GPU they share (only there), if more than told."""
        placement = self.parts.placement
        if not placement.shared or mb <= self.declared_mb:
            return
        self.declared_mb = mb
        self.parts.evaluator.hold_outside(placement.policy_gpu, mb)

    @contextlib.contextmanager
    def _phase(self, name: str, metrics: dict[str, float]) -> Iterator[None]:
        """Time a phase of the step (`time/NAME_s`) and, on CUDA, the peak of torch's reserved memory during it
        (`memory/NAME_mb`)."""
        if self.gpu is not None:
            torch.cuda.synchronize(self.gpu)
            torch.cuda.reset_peak_memory_stats(self.gpu)
        started = time.perf_counter()
        try:
            yield
        finally:
            if self.gpu is not None:
                torch.cuda.synchronize(self.gpu)
                metrics[f"memory/{name}_mb"] = torch.cuda.max_memory_reserved(self.gpu) / 2**20
            metrics[f"time/{name}_s"] = time.perf_counter() - started

    # --- the loop -----------------------------------------------------------------------------------------

    def my_problems(self, step: int) -> tuple[list, int]:
        """This process's contiguous share of the step's problems, and the index of its first one."""
        problems = self.parts.problems_for_step(step)
        share = len(problems) // self.accelerator.num_processes
        first = self.accelerator.process_index * share
        return problems[first : first + share], first

    def learn(self, records: list[TurnRecord], step: int) -> tuple[dict[str, float], TurnBatch]:
        """Advantages, filters and one optimiser step from this process's turns.

        The turn rows of every process are gathered and put in a canonical order (group, trajectory, turn),
        and the learning signal is built on that whole batch, identically on every process: estimators see
        whole groups, filters draw the same numbers, and metrics describe the whole step.  Each process then
        trains on its own rows."""
        from accelerate.utils import gather_object

        rows = self._token_rows(records)
        old = self.old_logprobs(rows)
        local = turn_rows(records, old, code_masks=self.code_masks(records))
        everyone = gather_object(local) if self.accelerator.num_processes > 1 else local
        order = sorted(
            range(len(everyone)), key=lambda i: (everyone[i].group, everyone[i].trajectory, everyone[i].turn)
        )
        batch = TurnBatch.from_rows([everyone[i] for i in order])
        signal = self.parts.learning.build(batch, step)
        by_tokens = self.config.loss.aggregation == "token-mean"
        global_units = float(signal.mask.sum()) if by_tokens else float(signal.mask.any(dim=1).sum())
        # rows of this process, in its own order: position in the gathered list -> position in the batch
        offset = self._rows_before_me(len(local))
        where = {original: position for position, original in enumerate(order)}
        mine = torch.tensor([where[offset + i] for i in range(len(local))], dtype=torch.long)
        local_batch = TurnBatch.from_rows(local)
        local_signal = _select(signal, mine)
        learned = self.update(rows, local_batch, local_signal, max(global_units, 1.0))
        if self.registry is not None:
            for i, record in enumerate(records):
                if record.turn_id is not None:
                    self.registry.update_turn(
                        record.turn_id,
                        advantage=float(local_signal.row_advantages[i]),
                        kept=bool(local_signal.row_keep[i]),
                    )
        metrics = {k: v for k, v in signal.metrics.items() if not math.isnan(v)}
        metrics.update(learned)
        policy = batch.tokens
        if bool(policy.any()):
            log_ratio = (batch.train_logprobs - batch.rollout_logprobs)[policy]
            metrics["mismatch_kl"] = float((log_ratio.exp() - 1 - log_ratio).mean())
        return metrics, batch

    def _rows_before_me(self, count: int) -> int:
        """How many gathered rows the processes before this one contributed."""
        if self.accelerator.num_processes == 1:
            return 0
        from accelerate.utils import gather_object

        counts = gather_object([count])
        return sum(counts[: self.accelerator.process_index])

    def train_step(self, progress: Callable[[str], None] | None = None) -> StepResult:
        step = self.step
        problems, first = self.my_problems(step)
        samples = self.config.rollout.samples
        per_step = self.config.rollout.prompts_per_step * samples
        started = time.perf_counter()
        if self.gpu is not None and self.estimate is None:  # before the judge's pool sizes the GPU
            self.estimate = self.estimate_memory()
            self.declare_memory(self.estimate.total_mb)  # where the judge shares the GPU
        timings: dict[str, float] = {}
        with self._phase("generate", timings):  # the policy waits while the judge works: its memory is generation's
            rollout: RolloutBatch = self.runner.collect(
                problems, samples, step, progress, first_group=first, first_trajectory=step * per_step + first * samples
            )
        records = rollout.turns
        with self._phase("update", timings):
            learned, _ = self.learn(records, step)
        with self._phase("push", timings):
            self.push_weights()
        timings["time/generate_s"] = rollout.generate_s  # the collection's own seconds: generation, then the wait
        timings["time/judge_s"] = rollout.wait_s
        if self.gpu is not None:
            timings["memory/held_mb"] = torch.cuda.memory_reserved(self.gpu) / 2**20  # what judging sees beside it
            peak = max(v for k, v in timings.items() if k.startswith("memory/"))
            self.declare_memory(measured_mb(peak))
            timings["memory/estimate_mb"] = self.estimate.total_mb
            if self.parts.placement.shared:
                timings["memory/declared_mb"] = self.declared_mb
            for device, budget in self.parts.evaluator.memory_budgets().items():
                for key in ("capacity_mb", "peak_reserved_mb", "outside_mb"):
                    timings[f"judge/{device}/{key}"] = budget[key]
        everyone = records
        if self.accelerator.num_processes > 1:
            from accelerate.utils import gather_object

            everyone = gather_object(records)
        metrics = step_metrics(everyone)
        metrics.update(learned)
        metrics["tokens_per_s"] = rollout.generated_tokens / rollout.generate_s if rollout.generate_s else 0.0
        metrics["evaluations_per_s"] = rollout.evaluations / rollout.evaluate_s if rollout.evaluate_s else 0.0
        metrics.update(timings)
        metrics["step_s"] = time.perf_counter() - started
        self.step += 1
        if self.accelerator.is_main_process:
            self.metrics_path.parent.mkdir(parents=True, exist_ok=True)
            with self.metrics_path.open("a") as f:
                f.write(json.dumps({"step": step, **metrics}) + "\n")
        return StepResult(step=step, loss=learned["loss"], metrics=metrics)

    def run(
        self,
        steps: int | None = None,
        on_step: Callable[[StepResult], None] | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> list[StepResult]:
        """Train until `steps` (default `optim.steps`) steps are done, counting steps a resumed run already
        did; checkpoint every `optim.checkpoint_every` steps and at the end."""
        total = steps if steps is not None else self.config.optim.steps
        results = []
        while self.step < total:
            result = self.train_step(progress)
            results.append(result)
            if on_step is not None:
                on_step(result)
            if self.step % self.config.optim.checkpoint_every == 0 or self.step == total:
                self.save_checkpoint()
        return results

    def save_checkpoint(self) -> Path:
        """Model, optimiser and step under OUTPUT_DIR/checkpoints/step-N (accelerate's state format)."""
        path = Path(self.config.output_dir) / "checkpoints" / f"step-{self.step}"
        self.accelerator.save_state(str(path))
        if self.accelerator.is_main_process:
            (path / "trainer_state.json").write_text(json.dumps({"step": self.step}))
        return path

    def resume(self) -> int | None:
        """Load the latest checkpoint, if any; returns the step training continues from."""
        root = Path(self.config.output_dir) / "checkpoints"
        found = sorted(
            (p for p in root.glob("step-*") if (p / "trainer_state.json").exists()),
            key=lambda p: int(p.name.split("-")[1]),
        )
        if not found:
            return None
        self.accelerator.load_state(str(found[-1]))
        self.step = json.loads((found[-1] / "trainer_state.json").read_text())["step"]
        self.push_weights()
        return self.step

    def save_model(self, path: Path | None = None) -> Path:
        path = path or Path(self.config.output_dir) / "model"
        if self.accelerator.is_main_process:
            self.accelerator.unwrap_model(self.model).save_pretrained(path)
            self.tokenizer.save_pretrained(path)
        return path


def _indexed(device: torch.device | None) -> torch.device | None:
    """A CUDA device with its index (torch.device("cuda") is the current one)."""
    if device is None or device.type != "cuda" or device.index is not None:
        return device
    return torch.device("cuda", torch.cuda.current_device())


def _row_key(row: TurnRow) -> tuple[int, int, int]:
    return (row.group, row.trajectory, row.turn)


def _select(signal, rows: torch.Tensor):
    """The learning signal of some rows (by index)."""
    from tritongym.core.learn.learning import LearningSignal

    return LearningSignal(
        advantages=signal.advantages[rows],
        mask=signal.mask[rows],
        weights=signal.weights[rows],
        row_advantages=signal.row_advantages[rows],
        row_keep=signal.row_keep[rows],
        metrics=signal.metrics,
    )


def _fit(tensor: torch.Tensor, width: int) -> torch.Tensor:
    """Pad or cut [B, W] to [B, width] (a micro-batch's longest response may be shorter than the step's)."""
    if tensor.shape[1] == width:
        return tensor
    if tensor.shape[1] > width:
        return tensor[:, :width]
    pad = torch.zeros((tensor.shape[0], width - tensor.shape[1]), dtype=tensor.dtype, device=tensor.device)
    return torch.cat([tensor, pad], dim=1)
