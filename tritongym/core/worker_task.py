"""What the parent sends to a sandboxed worker: plain data, validated on both sides of the pipe."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Tolerance(BaseModel):
    """Elementwise |out - ref| <= atol + rtol * |ref|, and ||out - ref|| <= rel_norm * ||ref||.

    The relative-norm bound is what stops an all-zeros answer from passing on outputs whose
    magnitude is below atol.
    """

    model_config = ConfigDict(extra="forbid")
    atol: float
    rtol: float
    rel_norm: float


class WorkerTask(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Literal["evaluate", "screen"] = "evaluate"
    nonce: str = ""
    problem_name: str
    problem_source: str
    sizes: dict[str, Any] = Field(default_factory=dict)
    candidate_source: str | None = None
    device: str = "cpu"
    seeds: list[int] = Field(default_factory=lambda: [0, 1, 2, 3, 4])
    init_seed: int = 0
    precision: Literal["ieee", "tf32"] = "ieee"
    tolerances: dict[str, Tolerance] = Field(default_factory=dict)
    memory_mb: int | None = None
    cpu_s: int | None = None
    file_mb: int = 64
