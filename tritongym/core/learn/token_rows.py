"""Training rows as tokens: one row per turn, prompt = the rendered history, response = the turn's tokens.

The rollout engine already returned the exact token ids it conditioned on and sampled
(`Generation.prompt_token_ids`, `Generation.token_ids`), so the trainer never re-tokenises text: what it
scores is what was sampled.  Feedback and tool text only ever appear in prompts, so they are never
policy tokens.  `sequence_logprobs` is the one place log-probs of response tokens are computed, for the
"old" (no grad) pass MRS compares with the engine's and for the policy-gradient pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class TokenRow:
    prompt_ids: list[int]
    response_ids: list[int]


def pad_rows(rows: Sequence[TokenRow], pad_id: int, device: torch.device | str = "cpu"):
    """Right-padded [B, L] input ids and attention mask, plus each row's prompt length."""
    lengths = [len(r.prompt_ids) + len(r.response_ids) for r in rows]
    width = max(lengths)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        seq = r.prompt_ids + r.response_ids
        ids[i, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        mask[i, : len(seq)] = 1
    return ids.to(device), mask.to(device), [len(r.prompt_ids) for r in rows]


def sequence_logprobs(
    model, rows: Sequence[TokenRow], pad_id: int, with_entropy: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Log-probs [B, R] of each row's response tokens under `model` (float32), the response mask [B, R],
    and optionally the entropy of the model's distribution at each response position."""
    device = next(model.parameters()).device
    ids, attention, prompt_lengths = pad_rows(rows, pad_id, device)
    logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1].float()
    log_probs = torch.log_softmax(logits, dim=-1)
    width = max((len(r.response_ids) for r in rows), default=0)
    out = torch.zeros((len(rows), width), dtype=torch.float32, device=device)
    mask = torch.zeros((len(rows), width), dtype=torch.bool, device=device)
    entropy = torch.zeros((len(rows), width), dtype=torch.float32, device=device) if with_entropy else None
    for i, r in enumerate(rows):
        n = len(r.response_ids)
        if n == 0:
            continue
        start = prompt_lengths[i] - 1  # logits at position p predict token p + 1
        positions = torch.arange(start, start + n, device=device)
        targets = ids[i, start + 1 : start + 1 + n]
        out[i, :n] = log_probs[i, positions].gather(-1, targets[:, None]).squeeze(-1)
        mask[i, :n] = True
        if entropy is not None:
            lp = log_probs[i, positions]
            entropy[i, :n] = -(lp.exp() * lp).sum(-1)
    return out, mask, entropy
