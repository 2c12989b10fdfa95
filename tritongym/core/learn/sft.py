"""Cold-start supervised fine-tuning (`tritongym sft`): teach a model the answer format and some working
kernels before RL, so the first RL steps are not spent on replies that hold no code at all.

The examples are read by core/learn/sft_data.py and tokenised, with an assistant-only mask, by core/learn/sft_masks.py;
this module trains on them.

Training normalises the summed cross-entropy of an optimiser step by the step's *global* number of target
tokens, so the update does not depend on how the step's examples are padded, split into processes or
batched: `accelerate launch --num_processes N` takes the same steps as one process.

The model trains on `[placement] policy_gpu` (or accelerate's device); the summary gives the seconds of each epoch
and, on CUDA, the peak of torch's reserved memory over the training.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from pydantic import BaseModel

from tritongym.core.errors import ConfigError
from tritongym.core.learn.accelerated import clipped_step, global_sum, make_accelerator
from tritongym.core.learn.run_config import RunConfig
from tritongym.core.learn.sft_data import SFTExample, load_examples
from tritongym.core.learn.sft_masks import TokenizedExample, stop_token_ids, tokenize_example

SFT_METRICS = "sft_metrics.jsonl"
"""Per-step losses, under the run's output_dir."""

SFT_MODEL = "sft-model"
"""Default model directory, under the run's output_dir: `[model] path = ...` of the RL run that follows."""


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
    epoch_seconds: list[float] = []
    peak_memory_mb: float | None = None  # torch's reserved memory at its peak while training (CUDA only)


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
        from tritongym.core.learn.model_loading import load_model, load_tokenizer
        from tritongym.core.learn.placement import place_run

        self.config = config
        device = place_run(config.placement, None, gpu_judge=False).policy_device
        self.accelerator = accelerator or make_accelerator(config.optim.precision, device)
        self.gpu = torch.device(device) if device.startswith("cuda") else None
        self.epoch_seconds: list[float] = []
        self.peak_memory_mb: float | None = None
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
        if self.gpu is not None:
            torch.cuda.reset_peak_memory_stats(self.gpu)
        for epoch in range(sft.epochs):
            began = time.perf_counter()
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
                grad_norm = clipped_step(self.accelerator, self.optimizer, params, clip)
                step = len(logs)
                log = {
                    "step": step,
                    "epoch": epoch,
                    "loss": global_sum(self.accelerator, local) / global_tokens,
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
            if self.gpu is not None:
                torch.cuda.synchronize(self.gpu)
            self.epoch_seconds.append(time.perf_counter() - began)
        if self.gpu is not None:
            self.peak_memory_mb = torch.cuda.max_memory_reserved(self.gpu) / 2**20
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
        epoch_seconds=trainer.epoch_seconds,
        peak_memory_mb=trainer.peak_memory_mb,
    )
