"""A variant: the source with one configuration baked in, by editing its text where `space.py` found each value.

Only the literals change (and launch keywords are added where the source left Triton's default), so the
variant keeps the author's comments and layout and differs from the source exactly where the configuration
does; for an autotuned kernel the configs list becomes the single config chosen.  A parameter at its current
value is left as written, so the source's own configuration bakes into the source itself (the same kernel
id, already judged).  The result is parsed again before anyone evaluates it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tritongym.core.source import parse_source
from tritongym.core.tune.space import Autotune, AutotuneConfig, Discovery, Insert, Literal
from tritongym.core.tuning import Config, config_key


class VariantError(ValueError):
    """A configuration that cannot be baked into the source (unknown parameter, or the rewrite did not parse)."""


@dataclass(frozen=True)
class Edit:
    """Replace bytes [start, end) of the source with `text` (an insertion when start == end)."""

    start: int
    end: int
    text: str
    order: int = 0  # among insertions at one offset, the lower comes first in the text


def apply_edits(data: bytes, edits: Iterable[Edit]) -> bytes:
    """Apply non-overlapping edits, last first, so each one's offsets still hold when it is applied."""
    for edit in sorted(edits, key=lambda e: (e.start, e.order), reverse=True):
        data = data[: edit.start] + edit.text.encode() + data[edit.end :]
    return data


def _site_edit(site: Literal | Insert, value: int, order: int) -> Edit:
    if isinstance(site, Literal):
        return Edit(site.start, site.end, str(value))
    return Edit(site.at, site.at, f"{site.before}{site.keyword}={value}{site.after}", order)


def _one_config(data: bytes, autotune: Autotune, wanted: dict[str, int]) -> str:
    """The text of the single `triton.Config` that sets `wanted` (config key -> value): the listed config
    closest to it (fewest values to change, first listed on a tie) with its literals rewritten."""

    def changes(config: AutotuneConfig) -> int:
        return sum(config.values.get(key) != value for key, value in wanted.items())

    base = min(autotune.configs, key=changes)
    edits = []
    for order, (key, value) in enumerate(wanted.items()):
        if base.values.get(key) == value:
            continue
        if key in base.literals:
            start, end = base.literals[key]
            edits.append(Edit(start - base.start, end - base.start, str(value)))
        elif key in ("num_warps", "num_stages"):
            edits.append(Edit(base.tail - base.start, base.tail - base.start, f", {key}={value}", order))
        else:
            at = base.dict_open - base.start
            edits.append(Edit(at, at, f"{key!r}: {value}, ", order))
    return apply_edits(data[base.start : base.end], edits).decode()


def bake(discovery: Discovery, config: Config) -> str:
    """`discovery.source` with `config` baked in; parameters `config` leaves out stay as written.

    Raises `VariantError` for a parameter the space does not have, a value that is not a positive integer,
    or a rewrite that is not valid Python (a tritongym bug, named as such)."""
    params = {p.name: p for p in discovery.space.params}
    unknown = sorted(set(config) - set(params))
    if unknown:
        raise VariantError(
            f"configuration {config_key(config)} names parameters the source does not have: {', '.join(unknown)} "
            f"(found: {', '.join(params) or 'none'})"
        )
    bad = sorted(k for k, v in config.items() if not isinstance(v, int) or isinstance(v, bool) or v < 1)
    if bad:
        raise VariantError(f"configuration {config_key(config)}: {', '.join(bad)} must be positive integers")
    data = discovery.source.encode()
    edits = []
    for order, (name, site) in enumerate(discovery.sites.items()):
        value = config.get(name, params[name].current)
        if value != params[name].current:
            edits.append(_site_edit(site, value, order))
    for autotune in discovery.autotunes:
        wanted = {key: config[name] for key, name in autotune.names.items() if name in config}
        if wanted:
            edits.append(Edit(autotune.start, autotune.end, f"[{_one_config(data, autotune, wanted)}]"))
    variant = apply_edits(data, edits).decode()
    try:
        parse_source(variant)
    except (SyntaxError, ValueError) as exc:
        raise VariantError(
            f"baking {config_key(config)} into the source gave invalid Python ({exc}); this is a tritongym bug, "
            "please report it with the source"
        ) from None
    return variant
