"""From a batch of scored turns to what the policy loss needs: advantages, a keep mask and weights.

The host side of the estimators room (ARCHITECTURE.md §6).  A run names one estimator and an ordered list of
sample filters; `LearningSignalBuilder` builds them from the plugin host once (so an unknown name or
option fails before any rollout is generated) and then, per step:

1. runs every filter on the batch, each with its own generator seeded from the run's seed, the step
   and the filter's label (so a resumed run draws the same numbers, and one filter's draws do not
   depend on which other filters run).  A filter may appear twice under two labels with `use`, e.g. the
   release's geometric MRS band together with token-level truncation:
   `filters = { mrs = {}, mrs-is = { use = "mrs", mode = "token-truncate", truncate = 2.0 } }`;
2. decides who counts in the baselines: by default rejected rows still do, as in the Dr. Kernel
   release; with `rejected_in_baselines = false` the host clears `batch.baseline` for rows any filter
   rejected at the turn level or above (a token-level rejection, such as truncation, leaves the row in
   its baseline).  This choice is made here, once, and never by a plugin;
3. runs the estimator, and returns token advantages, the token keep mask (policy tokens of valid,
   kept rows), token weights and metrics prefixed by plugin name.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tritongym.core.errors import ConfigError, PluginError
from tritongym.core.interfaces import AdvantageEstimator, SampleFilter
from tritongym.core.turn_batch import TurnBatch, TurnRow, fraction

if TYPE_CHECKING:  # torch is imported where it is used: loading the plugin stays cheap
    import torch


class LearningConfig(BaseModel):
    """Which estimator and filters turn rewards into a learning signal (the `[learning]` table of a run).

    estimator = "trloo"
    estimator_options = { gamma = 1.0 }
    filters = { mrs = {}, prs = { tau = 0.3 } }
    rejected_in_baselines = true
    """

    model_config = ConfigDict(extra="forbid")

    estimator: str = Field(default="trloo", description="registered advantage estimator")
    estimator_options: dict = Field(default_factory=dict)
    filters: dict[str, dict] = Field(
        default_factory=dict,
        description="sample filter name -> options, applied in this order; a label of your own with "
        "`use = NAME` among the options runs filter NAME under that label (the same filter twice)",
    )
    rejected_in_baselines: bool = Field(
        default=True,
        description="rows a filter rejected still count in their group's baseline (the Dr. Kernel release does)",
    )
    seed: int = Field(default=0, ge=0, description="seed of the filters' generators (with the step and label)")


@dataclass(frozen=True)
class LearningSignal:
    """What the policy loss consumes, all [R, L]: advantages are exactly 0 where `mask` is False."""

    advantages: torch.Tensor
    mask: torch.Tensor
    weights: torch.Tensor
    row_advantages: torch.Tensor
    row_keep: torch.Tensor
    metrics: dict[str, float] = field(default_factory=dict)


class LearningSignalBuilder:
    """Holds the configured estimator and filters; `build(batch, step)` gives the step's `LearningSignal`."""

    def __init__(self, config: LearningConfig | dict | None = None, host=None) -> None:
        from tritongym.core.plugins import get_host

        if not isinstance(config, LearningConfig):
            config = LearningConfig.model_validate(config or {})
        self.config = config
        self.host = host or get_host()
        self.estimator: AdvantageEstimator = self._create("estimator", config.estimator, config.estimator_options)
        self.filters: dict[str, SampleFilter] = {}
        self.filter_names: dict[str, str] = {}  # label in the config -> registered filter name
        for label, options in config.filters.items():
            options = dict(options)
            name = options.pop("use", label)
            if not isinstance(name, str):
                raise ConfigError(f"filters.{label}.use must name a sample filter, got {name!r}")
            self.filter_names[label] = name
            self.filters[label] = self._create("sample_filter", name, options)

    def _create(self, kind: str, name: str, options: dict | None):
        if name not in self.host.names(kind):
            known = ", ".join(self.host.names(kind)) or "none"
            label = "sample filter" if kind == "sample_filter" else kind
            raise ConfigError(
                f"unknown {label} '{name}' (valid choices: {known}); install or --plugin the plugin that provides it"
            )
        return self.host.create(kind, name, options)

    def _plugin(self, kind: str, name: str) -> str:
        return self.host.get(kind, name).plugin

    def filter_generator(self, label: str, step: int) -> torch.Generator:
        """Each filter draws from its own generator, seeded by the run's seed, the step and the filter's
        label, so adding, removing or reordering another filter never changes its draws."""
        import torch

        return torch.Generator().manual_seed((self.config.seed + step) * 1_000_003 + zlib.crc32(label.encode()))

    def build(self, batch: TurnBatch, step: int = 0) -> LearningSignal:
        import torch

        row_keep = batch.valid.clone()
        token_keep = batch.tokens.clone()
        weights = torch.ones_like(batch.rollout_logprobs)
        metrics: dict[str, float] = {}
        for name, sample_filter in self.filters.items():
            try:
                decision = sample_filter.decide(batch, self.filter_generator(name, step))
                decision.validate(batch, name)
            except ConfigError:
                raise
            except Exception as exc:
                plugin = self._plugin("sample_filter", self.filter_names[name])
                raise PluginError(
                    f"sample filter '{name}' (plugin '{plugin}') failed on "
                    f"{batch.describe()}: {type(exc).__name__}: {exc}"
                ) from exc
            rows = decision.row_keep(batch)
            tokens = decision.token_keep(batch)
            considered = batch.tokens if decision.level == "token" else batch.valid
            rejected = considered & ~(tokens if decision.level == "token" else rows)
            row_keep &= rows
            token_keep &= tokens
            if decision.weights is not None:
                w = decision.weights if decision.level == "token" else decision.weights[:, None]
                weights = weights * torch.where(batch.tokens, w.to(weights.dtype), torch.ones_like(weights))
            metrics.update({f"{name}/{k}": float(v) for k, v in decision.metrics.items()})
            metrics[f"{name}/rejected"] = fraction(rejected, considered)  # the host's count wins a name clash

        estimator_batch = batch
        if not self.config.rejected_in_baselines:
            estimator_batch = batch.with_(baseline=batch.baseline & row_keep)
        try:
            advantages = self.estimator.estimate(estimator_batch)
            token_advantages = advantages.token_advantages(batch)
        except Exception as exc:
            name = self.config.estimator
            raise PluginError(
                f"estimator '{name}' (plugin '{self._plugin('estimator', name)}') failed on {batch.describe()}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if not bool(torch.all(torch.isfinite(token_advantages))):
            raise PluginError(f"estimator '{self.config.estimator}' returned non-finite advantages")

        mask = token_keep & row_keep[:, None] & batch.tokens
        valid = batch.valid
        metrics.update({f"{self.config.estimator}/{k}": float(v) for k, v in advantages.metrics.items()})
        metrics["kept_rows"] = fraction(row_keep & valid, valid)
        metrics["kept_tokens"] = fraction(mask, batch.tokens)
        if bool(valid.any()):
            metrics["advantage_mean"] = float(advantages.per_row[valid].mean())
            metrics["advantage_abs_mean"] = float(advantages.per_row[valid].abs().mean())
        return LearningSignal(
            advantages=torch.where(mask, token_advantages, torch.zeros_like(token_advantages)),
            mask=mask,
            weights=torch.where(mask, weights, torch.zeros_like(weights)),
            row_advantages=torch.where(valid, advantages.per_row, torch.zeros_like(advantages.per_row)),
            row_keep=row_keep & valid,
            metrics=metrics,
        )


def load_learning_config(path: str | Path | None = None, **overrides) -> LearningConfig:
    """Read the learning settings from TOML (top-level keys, or a `[learning]` table of a run config) and
    apply non-None overrides (the CLI's flags)."""
    from tritongym.core.config import read_toml, validation_message

    data: dict = read_toml(path) if path is not None else {}
    if isinstance(data.get("learning"), dict):
        data = data["learning"]
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return LearningConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(validation_message(exc, f"config {path}" if path else "learning options")) from None


def read_turn_rows(path: str | Path) -> list[TurnRow]:
    """Turns from a JSONL file, one `TurnRow` object per line; a bad line is named by its number."""
    rows = []
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read turns {path}: {exc.strerror}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append(TurnRow.model_validate(json.loads(line)))
        except (json.JSONDecodeError, ValidationError) as exc:
            detail = str(exc).splitlines()
            raise ConfigError(f"{path}:{number}: not a turn row: {' '.join(d.strip() for d in detail[:3])}") from None
    if not rows:
        raise ConfigError(f"{path} holds no turn rows")
    return rows
