"""What the trainer holds on its GPU, for a judge that shares it (`Placement.shared`).

The judge's worker pool admits candidates' workers by GPU memory (`MemoryBudget` in `core/sandbox/gpu_pool.py`);
on the policy's GPU it must leave room for the trainer's process, which the pool cannot see.  Before the first
rollout the trainer declares an estimate (`estimate_mb`), and after every step it raises the declaration to what it
measured (`measured_mb`: torch's peak reserved memory on its device) when that is higher, never lowering it: the
caching allocator keeps what it reserved, and the next step's longest prompt may need it again.

The estimate, per part (bytes):

- the policy: fp32 weights 4P and AdamW's two moments 8P (P parameters), held for the whole run;
- the engine's copy (an in-process engine, e.g. transformers), in its own dtype;
- generation: the KV cache, 2 x layers x kv_heads x head_dim x (prompt + max_tokens) x batch_size x bytes, and the
  raw logits of every generated position that the engine keeps for log-probs (max_tokens x batch x vocab x 4);
- the update: fp32 gradients 4P, the logits of a micro-batch and what log_softmax, the entropy and their backward
  make of them (micro_batch x sequence x vocab x 4 x `LOGITS_COPIES`), and the layers' saved activations.

Generation and the update do not run at once, so the estimate is the held part plus the larger of the two, with a
margin, plus the process's CUDA context (which torch's allocator does not count).
"""

from __future__ import annotations

from dataclasses import dataclass

TRAINER_CONTEXT_MB = 1024.0
"""The trainer process's CUDA context, cuBLAS workspaces and kernels: GPU memory torch's allocator never counts (a
bare context is ~500-800 MiB on an H100, `CONTEXT_MB` in `gpu_pool.py`)."""

MARGIN = 0.10
"""Added to an estimate and to a measured peak: fragmentation, and a later step's longer rows."""

LOGITS_COPIES = 5
"""fp32 copies of a micro-batch's logits the update holds at its peak: the upcast logits, log_softmax's output, the
entropy's probabilities, and the gradients of the first two."""

FEEDBACK_TOKENS = 512
"""Tokens a later turn's prompt gains per earlier turn beyond its response: the judge's feedback."""


@dataclass(frozen=True)
class ModelShape:
    """What the estimate needs of a causal LM (`from_model` reads it from a transformers model)."""

    parameters: int
    layers: int
    hidden: int
    intermediate: int
    kv_heads: int
    head_dim: int
    vocab: int

    @classmethod
    def from_model(cls, model) -> ModelShape:
        config = model.config
        heads = config.num_attention_heads
        return cls(
            parameters=sum(p.numel() for p in model.parameters()),
            layers=config.num_hidden_layers,
            hidden=config.hidden_size,
            intermediate=getattr(config, "intermediate_size", None) or 4 * config.hidden_size,
            kv_heads=getattr(config, "num_key_value_heads", None) or heads,
            head_dim=getattr(config, "head_dim", None) or config.hidden_size // heads,
            vocab=config.vocab_size,
        )


@dataclass(frozen=True)
class TrainerMemory:
    """One estimate, by part, in MiB; `total_mb` is what the trainer declares."""

    policy_mb: float
    engine_mb: float
    generation_mb: float
    update_mb: float

    @property
    def total_mb(self) -> float:
        busiest = self.policy_mb + self.engine_mb + max(self.generation_mb, self.update_mb)
        return busiest * (1 + MARGIN) + TRAINER_CONTEXT_MB


def estimate_mb(
    shape: ModelShape,
    *,
    engine_bytes: int,
    prompt_tokens: int,
    max_tokens: int,
    max_turns: int,
    generation_batch: int,
    micro_batch: int,
    activation_bytes: int = 2,
) -> TrainerMemory:
    """The trainer's GPU memory by part (module docstring).  `engine_bytes`: bytes per parameter of the engine's copy
    on the same GPU (0: none there); `prompt_tokens`: the longest first-turn prompt; `activation_bytes`: 2 under bf16
    or fp16 autocast, 4 without."""
    mib = 2**20
    p = shape.parameters
    prompt = prompt_tokens + (max_turns - 1) * (max_tokens + FEEDBACK_TOKENS)
    sequence = prompt + max_tokens
    generation = 0.0
    if engine_bytes:
        kv = 2 * shape.layers * shape.kv_heads * shape.head_dim * sequence * generation_batch * engine_bytes
        logits = max_tokens * generation_batch * shape.vocab * 4
        generation = kv + logits
    logits = micro_batch * sequence * shape.vocab * 4 * LOGITS_COPIES
    per_token = shape.layers * (10 * shape.hidden + 4 * shape.intermediate) * activation_bytes
    activations = micro_batch * sequence * per_token
    return TrainerMemory(
        policy_mb=12 * p / mib,
        engine_mb=engine_bytes * p / mib,
        generation_mb=generation / mib,
        update_mb=(4 * p + logits + activations) / mib,
    )


def measured_mb(peak_reserved_mb: float) -> float:
    """What to declare after measuring the allocator's peak: with the margin and the context it does not count."""
    return peak_reserved_mb * (1 + MARGIN) + TRAINER_CONTEXT_MB
