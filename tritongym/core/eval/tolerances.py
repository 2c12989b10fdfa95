"""Default numerical tolerances per output dtype, and the precision policy's effect on them.

fp32 is checked tightly (1e-3) because our references run with TF32 off; choosing the `tf32` policy
loosens fp32 to what TF32 arithmetic can meet. Integer and boolean outputs must match exactly.
"""

from __future__ import annotations

from tritongym.core.worker_task import Tolerance

_FP32_IEEE = Tolerance(atol=1e-3, rtol=1e-3, rel_norm=1e-3)
_FP32_TF32 = Tolerance(atol=1e-2, rtol=1e-2, rel_norm=1e-2)

BASE_TOLERANCES: dict[str, Tolerance] = {
    "torch.float64": Tolerance(atol=1e-6, rtol=1e-6, rel_norm=1e-6),
    "torch.float16": Tolerance(atol=1e-2, rtol=1e-2, rel_norm=1e-2),
    "torch.bfloat16": Tolerance(atol=2e-2, rtol=2e-2, rel_norm=2e-2),
}


def tolerances_for(precision: str, overrides: dict[str, Tolerance] | None = None) -> dict[str, Tolerance]:
    table = dict(BASE_TOLERANCES)
    table["torch.float32"] = _FP32_TF32 if precision == "tf32" else _FP32_IEEE
    table.update(overrides or {})
    return table
