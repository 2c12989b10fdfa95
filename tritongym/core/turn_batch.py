"""The typed input of every advantage estimator and sample filter, and the typed outputs they return.

A `TurnBatch` is one row per turn: which prompt group and trajectory it belongs to, its turn index, its
reward (and the reward's components, so an estimator such as TritonRL's HRD can weigh them differently),
the verdict flags and PR, and per generated token the rollout engine's log-prob, the trainer's log-prob
and a policy-token mask.  PR is NaN where the backend did not profile, and so is a component a row lacks
because the backend did not measure it: absent, never a zero that looks like a judgement.  Tool output
and feedback tokens sit in the same padded token arrays as the model's own tokens but are never policy
tokens, so nothing downstream can learn from text the model did not write.

Rows are turns rather than trajectories because every turn is its own training row (ARCHITECTURE.md §6), and
because TRLOO's groups are prompt × turn: a trajectory that ended early simply has no row for later
turns.  Estimators and filters get plain tensors so that their arithmetic is the formula and nothing
else; the `TurnRow` model is how the trainer, the CLI and tests build a batch without getting shapes
wrong.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:  # torch is imported where it is used: loading the plugin stays cheap
    import torch

Level = Literal["token", "turn", "trajectory", "group"]
"""What a filter's decision applies to: single tokens, whole turns, all turns of a trajectory, or all
trajectories of a prompt group."""


class TurnRow(BaseModel):
    """One turn as plain Python values: what rollouts produce and what `TurnBatch.from_rows` packs."""

    model_config = ConfigDict(extra="forbid")

    group: int = Field(description="prompt group: trajectories sampled from the same prompt share it")
    trajectory: int = Field(description="trajectory id, unique in the batch")
    turn: int = Field(ge=0, description="turn index within the trajectory, 0 for the first")
    reward: float
    components: dict[str, float] = Field(default_factory=dict, description="reward components, by reward name")
    valid: bool = Field(default=True, description="False for a row that is padding, not a turn the model took")
    correct: bool = False
    hacked: bool = False
    has_code: bool = True
    pr: float | None = Field(default=None, description="profiling reward; None when the backend did not profile")
    rollout_logprobs: list[float] = Field(default_factory=list, description="engine log-prob per generated token")
    train_logprobs: list[float] | None = Field(default=None, description="trainer log-prob per generated token")
    policy_mask: list[bool] | None = Field(
        default=None, description="True for tokens the model generated; None = every token is a policy token"
    )
    code_mask: list[bool] | None = Field(
        default=None,
        description="True for tokens of the fenced code block the extractor took (HRD's code span; the rest "
        "are plan tokens); None = not known",
    )

    @model_validator(mode="after")
    def _lengths_agree(self) -> TurnRow:
        n = len(self.rollout_logprobs)
        for name in ("train_logprobs", "policy_mask", "code_mask"):
            value = getattr(self, name)
            if value is not None and len(value) != n:
                raise ValueError(f"{name} has {len(value)} entries but rollout_logprobs has {n}")
        if not math.isfinite(self.reward):
            raise ValueError(f"reward must be finite, got {self.reward}")
        return self


@dataclass(frozen=True)
class TurnBatch:
    """Turns of one training step as tensors; rows of one trajectory may come in any order.

    Per row (shape [R]): `group`, `trajectory`, `turn` (int64), `reward` (float), `valid`, `correct`,
    `hacked`, `has_code` (bool), `pr` (float, NaN where not profiled) and `baseline` (bool: the row counts
    in the baselines of its group; the host clears it for rejected rows when the run says rejected rows
    do not count).  Per token (shape [R, L], right-padded): `rollout_logprobs`, `train_logprobs` (None
    until the trainer has recomputed them), `policy_mask` and `code_mask` (True for the tokens of the code
    block the gym evaluated, the rest being reasoning: the spans TritonRL's HRD weighs differently; None
    when the rows do not say).  `components` maps a reward name to its per-row values.
    """

    group: torch.Tensor
    trajectory: torch.Tensor
    turn: torch.Tensor
    reward: torch.Tensor
    valid: torch.Tensor
    correct: torch.Tensor
    hacked: torch.Tensor
    has_code: torch.Tensor
    pr: torch.Tensor
    rollout_logprobs: torch.Tensor
    policy_mask: torch.Tensor
    train_logprobs: torch.Tensor | None = None
    baseline: torch.Tensor | None = None
    components: dict[str, torch.Tensor] = field(default_factory=dict)
    code_mask: torch.Tensor | None = None

    def __post_init__(self) -> None:
        import torch

        rows = self.reward.shape[0] if self.reward.dim() == 1 else -1
        if rows < 0:
            raise ValueError(f"reward must have shape [rows], got {tuple(self.reward.shape)}")
        for name in ("group", "trajectory", "turn", "valid", "correct", "hacked", "has_code", "pr", "baseline"):
            value = getattr(self, name)
            if value is not None and tuple(value.shape) != (rows,):
                raise ValueError(f"{name} must have shape [{rows}] like reward, got {tuple(value.shape)}")
        for name, value in self.components.items():
            if tuple(value.shape) != (rows,):
                raise ValueError(f"component '{name}' must have shape [{rows}], got {tuple(value.shape)}")
        tokens = tuple(self.rollout_logprobs.shape)
        if len(tokens) != 2 or tokens[0] != rows:
            raise ValueError(f"rollout_logprobs must have shape [{rows}, tokens], got {tokens}")
        for name in ("policy_mask", "train_logprobs", "code_mask"):
            value = getattr(self, name)
            if value is not None and tuple(value.shape) != tokens:
                raise ValueError(
                    f"{name} must have shape {list(tokens)} like rollout_logprobs, got {tuple(value.shape)}"
                )
        for name in ("valid", "correct", "hacked", "has_code", "policy_mask", "baseline", "code_mask"):
            value = getattr(self, name)
            if value is not None and value.dtype != torch.bool:
                raise ValueError(f"{name} must be a bool tensor, got {value.dtype}")
        if self.baseline is None:
            object.__setattr__(self, "baseline", self.valid.clone())
        self._check_ids()

    def _check_ids(self) -> None:
        seen: dict[tuple[int, int], int] = {}
        group_of: dict[int, int] = {}
        for row, (g, tr, t, ok) in enumerate(
            zip(self.group.tolist(), self.trajectory.tolist(), self.turn.tolist(), self.valid.tolist())
        ):
            if not ok:
                continue
            if (tr, t) in seen:
                raise ValueError(f"rows {seen[(tr, t)]} and {row} are both turn {t} of trajectory {tr}")
            seen[(tr, t)] = row
            if group_of.setdefault(tr, g) != g:
                raise ValueError(f"trajectory {tr} appears in groups {group_of[tr]} and {g}; one prompt per trajectory")

    # --- construction ---------------------------------------------------------------------------------

    @classmethod
    def from_rows(cls, rows: Sequence[TurnRow | dict]) -> TurnBatch:
        """Pack rows (models or dicts) into padded tensors; padding tokens are never policy tokens."""
        import torch

        parsed = [r if isinstance(r, TurnRow) else TurnRow.model_validate(r) for r in rows]
        if not parsed:
            raise ValueError("a TurnBatch needs at least one row")
        width = max((len(r.rollout_logprobs) for r in parsed), default=0)
        has_train = [r.train_logprobs is not None for r in parsed]
        if any(has_train) and not all(has_train):
            raise ValueError("train_logprobs must be given for every row or for none")
        has_code_mask = [r.code_mask is not None for r in parsed]
        if any(has_code_mask) and not all(has_code_mask):
            raise ValueError("code_mask must be given for every row or for none")

        def pad(values: list[float], fill: float) -> list[float]:
            return list(values) + [fill] * (width - len(values))

        names = sorted({name for r in parsed for name in r.components})
        return cls(
            group=torch.tensor([r.group for r in parsed], dtype=torch.int64),
            trajectory=torch.tensor([r.trajectory for r in parsed], dtype=torch.int64),
            turn=torch.tensor([r.turn for r in parsed], dtype=torch.int64),
            reward=torch.tensor([r.reward for r in parsed], dtype=torch.float64),
            valid=torch.tensor([r.valid for r in parsed], dtype=torch.bool),
            correct=torch.tensor([r.correct for r in parsed], dtype=torch.bool),
            hacked=torch.tensor([r.hacked for r in parsed], dtype=torch.bool),
            has_code=torch.tensor([r.has_code for r in parsed], dtype=torch.bool),
            pr=torch.tensor([math.nan if r.pr is None else r.pr for r in parsed], dtype=torch.float64),
            rollout_logprobs=torch.tensor([pad(r.rollout_logprobs, 0.0) for r in parsed], dtype=torch.float64).reshape(
                len(parsed), width
            ),
            policy_mask=torch.tensor(
                [
                    pad([True] * len(r.rollout_logprobs) if r.policy_mask is None else r.policy_mask, False)
                    for r in parsed
                ],
                dtype=torch.bool,
            ).reshape(len(parsed), width),
            train_logprobs=(
                torch.tensor([pad(r.train_logprobs or [], 0.0) for r in parsed], dtype=torch.float64).reshape(
                    len(parsed), width
                )
                if all(has_train)
                else None
            ),
            components={
                n: torch.tensor([r.components.get(n, math.nan) for r in parsed], dtype=torch.float64) for n in names
            },
            code_mask=(
                torch.tensor([pad(r.code_mask or [], False) for r in parsed], dtype=torch.bool).reshape(
                    len(parsed), width
                )
                if all(has_code_mask)
                else None
            ),
        )

    def with_(self, **changes) -> TurnBatch:
        """A copy with some fields replaced (validated again)."""
        return replace(self, **changes)

    # --- views estimators and filters share -------------------------------------------------------------

    @property
    def rows(self) -> int:
        return int(self.reward.shape[0])

    @property
    def tokens(self) -> torch.Tensor:
        """Policy tokens of valid rows: the only tokens any loss or statistic may look at."""
        return self.policy_mask & self.valid[:, None]

    def index_groups(self, keys: Sequence[torch.Tensor], mask: torch.Tensor | None = None) -> list[torch.Tensor]:
        """Row indices of each distinct combination of `keys` among rows where `mask` (default: valid)."""
        import torch

        mask = self.valid if mask is None else mask
        buckets: dict[tuple[int, ...], list[int]] = {}
        columns = [k.tolist() for k in keys]
        for row, ok in enumerate(mask.tolist()):
            if ok:
                buckets.setdefault(tuple(c[row] for c in columns), []).append(row)
        return [torch.tensor(v, dtype=torch.int64) for _, v in sorted(buckets.items())]

    def returns(self, gamma: float = 1.0) -> torch.Tensor:
        """Reward-to-go G(i,t) = Σ_{t' ≥ t} γ^(t'−t) R(i,t') over the valid turns of each trajectory.

        Exponents count turn indices, so a gap in a trajectory's turns discounts like the turns were there."""
        import torch

        out = torch.zeros_like(self.reward)
        for rows in self.index_groups([self.trajectory]):
            order = rows[torch.argsort(self.turn[rows], descending=True)]
            running, next_turn = 0.0, None
            for row in order.tolist():
                t = int(self.turn[row])
                if next_turn is not None:
                    running *= gamma ** (next_turn - t)
                running += float(self.reward[row])
                out[row] = running
                next_turn = t
        return out

    def describe(self) -> str:
        return (
            f"{self.rows} rows ({int(self.valid.sum())} valid) in {len(set(self.group.tolist()))} groups, "
            f"{self.rollout_logprobs.shape[1]} token columns"
        )


def fraction(part: torch.Tensor, whole: torch.Tensor) -> float:
    """Share of the True entries of `whole` that are also True in `part`; NaN when `whole` has none (a
    rate over nothing is undefined, not 0, so step logs do not show a filter that saw no rows as idle)."""
    total = int(whole.sum())
    return float(int((part & whole).sum()) / total) if total else math.nan


@dataclass(frozen=True)
class Advantages:
    """An estimator's answer: one advantage per row, broadcast to the row's policy tokens, or (for an
    estimator that gives spans of one response different advantages, such as HRD) one per token."""

    per_row: torch.Tensor
    per_token: torch.Tensor | None = None
    metrics: dict[str, float] = field(default_factory=dict)

    def token_advantages(self, batch: TurnBatch) -> torch.Tensor:
        """[R, L] advantages, exactly zero wherever `batch.tokens` is False."""
        import torch

        if tuple(self.per_row.shape) != (batch.rows,):
            raise ValueError(f"per_row advantages must have shape [{batch.rows}], got {tuple(self.per_row.shape)}")
        values = self.per_row[:, None].expand_as(batch.rollout_logprobs)
        if self.per_token is not None:
            if self.per_token.shape != batch.rollout_logprobs.shape:
                raise ValueError(
                    f"per_token advantages must have shape {list(batch.rollout_logprobs.shape)}, "
                    f"got {tuple(self.per_token.shape)}"
                )
            values = self.per_token
        return torch.where(batch.tokens, values, torch.zeros_like(values))


@dataclass(frozen=True)
class FilterDecision:
    """A sample filter's answer.

    `keep` has shape [R] for decisions at the turn, trajectory or group level (constant within a
    trajectory or group at those levels) and [R, L] at the token level.  `weights`, when given, has the
    same shape and scales the kept samples' gradient (token-level truncation is a weight, not a keep).
    `metrics` are numbers for the step log, named without the filter's name (the host prefixes it).
    """

    keep: torch.Tensor
    level: Level
    weights: torch.Tensor | None = None
    metrics: dict[str, float] = field(default_factory=dict)

    def validate(self, batch: TurnBatch, filter_name: str) -> None:
        import torch

        if self.level not in get_args(Level):
            raise ValueError(
                f"filter '{filter_name}' returned level '{self.level}'; valid levels: {', '.join(get_args(Level))}"
            )
        expected = tuple(batch.rollout_logprobs.shape) if self.level == "token" else (batch.rows,)
        for name in ("keep", "weights"):
            value = getattr(self, name)
            if value is not None and tuple(value.shape) != expected:
                raise ValueError(
                    f"filter '{filter_name}' returned {name} of shape {tuple(value.shape)} at level "
                    f"'{self.level}'; expected {list(expected)}"
                )
        if self.keep.dtype != torch.bool:
            raise ValueError(f"filter '{filter_name}' returned a keep mask of dtype {self.keep.dtype}, not bool")
        if self.weights is not None:
            judged = batch.tokens if self.level == "token" else batch.valid  # padding may hold anything
            bad = judged & ~(torch.isfinite(self.weights) & (self.weights >= 0))
            if bool(bad.any()):
                raise ValueError(f"filter '{filter_name}' returned negative or non-finite weights")
        if self.level in ("trajectory", "group"):
            key = batch.trajectory if self.level == "trajectory" else batch.group
            for rows in batch.index_groups([key]):
                if len(set(self.keep[rows].tolist())) > 1:
                    raise ValueError(
                        f"filter '{filter_name}' acts at level '{self.level}' but kept only some rows of "
                        f"{self.level} {int(key[rows[0]])}"
                    )

    def row_keep(self, batch: TurnBatch) -> torch.Tensor:
        """[R]: a row is kept unless rejected at its level (a token-level filter never drops a whole row)."""
        import torch

        return torch.ones(batch.rows, dtype=torch.bool) if self.level == "token" else self.keep

    def token_keep(self, batch: TurnBatch) -> torch.Tensor:
        """[R, L] keep mask, broadcast from the row level where needed."""
        return self.keep if self.level == "token" else self.keep[:, None].expand_as(batch.policy_mask)
