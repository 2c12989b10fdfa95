"""Default numerical tolerances per output dtype, and the precision policy's effect on them.

The reference's outputs are computed with TF32 off under every policy; fp32 outputs are checked against them
tightly (1e-3) under `ieee`, and as KernelBench's harness does (1e-2) under `tf32` (the default) and `half`,
whose precision classes are then decided by the error against the float64 gold (`core/precision.py`).
Integer and boolean outputs must match exactly.
"""

from __future__ import annotations

from tritongym.core.worker_task import Tolerance

_FP32_IEEE = Tolerance(atol=1e-3, rtol=1e-3, rel_norm=1e-3)
_FP32_TF32 = Tolerance(atol=1e-2, rtol=1e-2, rel_norm=1e-2)
_FP32_HALF = Tolerance(atol=2e-2, rtol=2e-2, rel_norm=2e-2)

BASE_TOLERANCES: dict[str, Tolerance] = {
    "torch.float64": Tolerance(atol=1e-6, rtol=1e-6, rel_norm=1e-6),
    "torch.float16": Tolerance(atol=1e-2, rtol=1e-2, rel_norm=1e-2),
    "torch.bfloat16": Tolerance(atol=2e-2, rtol=2e-2, rel_norm=2e-2),
}


def tolerances_for(precision: str, overrides: dict[str, Tolerance] | None = None) -> dict[str, Tolerance]:
    table = dict(BASE_TOLERANCES)
    table["torch.float32"] = {"ieee": _FP32_IEEE, "tf32": _FP32_TF32, "half": _FP32_HALF}[precision]
    table.update(overrides or {})
    return table
