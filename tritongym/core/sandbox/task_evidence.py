"""A task's `Evidence`, assembled from the keeper's judgements (trusted) and the worker's account of its calls."""

from __future__ import annotations

import time

from tritongym.core.models import (
    ErrorInfo,
    Evidence,
    LaunchRecord,
    OutputComparison,
    TrialEvidence,
    WeightBinding,
)

KEEPER_MEMORY = ("keeper_allocated_mb_", "keeper_reserved_mb_", "keeper_private_pool_mb_")


class EvidenceAssembly:
    """A `TaskDriver`'s evidence: each trial's, and the task's once it finished, failed on its problem or crashed."""

    def _trial(self, trial: int, sent: dict, comparisons: list) -> TrialEvidence:
        """One trial's evidence: the keeper's comparisons (trusted), the worker's account of the call."""
        planned = self.planned[trial]
        mutated = [int(i) for i in sent.get("mutated", [])]
        return TrialEvidence(
            seed=planned.seed,
            sizes=planned.sizes,
            late=planned.late,
            input_shapes=planned.input_shapes,
            distribution=planned.distribution,
            out_of_domain=planned.out_of_domain,
            outputs=[OutputComparison.model_validate(c) for c in comparisons],
            n_outputs=int(sent["n_outputs"]),
            ref_n_outputs=self._ref_count(trial),
            inputs_unchanged=not mutated,
            mutated_inputs=mutated,
            launches=[LaunchRecord.model_validate(r) for r in sent.get("launches", [])],
            candidate_s=sent.get("candidate_s"),
        )

    def _ref_count(self, trial: int) -> int:
        counts = self.prep.get("output_counts") or []
        return int(counts[trial]) if trial < len(counts) else 0

    def _finish(self, payload: bytes, started: float) -> Evidence:
        evidence = Evidence.model_validate_json(payload)
        evidence.trials = self.trials
        evidence.timed_trials = self.timed_trials
        evidence.reference_torch_ops = self.prep.get("reference_torch_ops") or {}
        evidence.reference_torch_work = self.prep.get("reference_torch_work") or {}
        if self.compared:
            from tritongym.core.models import ProbeCall

            evidence.probes = [ProbeCall.model_validate(p) for p in self.compared["probes"]]
        if self.report is not None:
            evidence.weights = WeightBinding.model_validate(self.report.get("weights") or {})
            if self.report.get("error") is not None and evidence.error is None:
                evidence.stage = self.report["stage"]
                evidence.error = ErrorInfo.model_validate(self.report["error"])
        if self.timing is not None:
            evidence.timing = self.timing
            if self.timing.candidate is not None:
                evidence.runtime_ms = self.timing.candidate.median_ms
            evidence.pr, evidence.profile = self.pr, self.profile
        self._phases(evidence)
        evidence.stdout_tail = self.worker.log_tail()
        evidence.worker_s = time.monotonic() - started
        evidence.phases["pool_compare"] = round(self.compare_s, 4)
        self._waits_into(evidence)
        if self.compiles.excused_s:
            evidence.phases["compile_excused"] = round(self.compiles.excused_s, 4)
        return evidence

    def _phases(self, evidence: Evidence) -> None:
        """What the keeper reported about the reference's side: its seconds, whether its record was cached, and
        memory (the reference's peak, its outputs parked in host memory, the keeper's own after each request)."""
        if self.prep:
            evidence.phases["reference"] = 0.0 if self.prep.get("cached") else float(self.prep.get("compute_s", 0.0))
            evidence.flags["reference_cached"] = bool(self.prep.get("cached"))
            evidence.memory_mb["reference_host_mb"] = float(self.prep.get("record_host_mb") or 0.0)
            evidence.reference_peak_mb = self.prep.get("peak_mb")
            if evidence.reference_peak_mb is not None:
                evidence.memory_mb["reference_peak_mb"] = float(evidence.reference_peak_mb)
            for key, mb in self.prep.items():
                if key.startswith(KEEPER_MEMORY):
                    evidence.memory_mb[key] = float(mb)
        evidence.phases.update(self.reference_phases)
        evidence.memory_mb.update(self.reference_memory_mb)
        evidence.flags.update(self.reference_flags)

    def _problem(self, failed: dict, started: float) -> Evidence:
        """The reference's side failed in the keeper: the problem's error (or the keeper's), not the candidate's."""
        stage = failed.get("stage") if failed.get("stage") in ("problem", "setup") else "problem"
        evidence = Evidence(stage=stage, error=ErrorInfo.model_validate(failed["error"]))
        evidence.worker_s = time.monotonic() - started
        self._phases(evidence)
        return evidence

    def _crash(self, kind: str, message: str, started: float) -> Evidence:
        evidence = Evidence(stage="run", error=ErrorInfo(kind=kind, message=message))
        if self.report is not None:
            evidence.trials = self.trials
        self._phases(evidence)
        evidence.stdout_tail = self.worker.log_tail()
        evidence.worker_s = time.monotonic() - started
        return evidence


def _out_of_memory(evidence: Evidence) -> bool:
    error = evidence.error
    return error is not None and ("OutOfMemory" in error.kind or "out of memory" in error.message.lower())


def out_of_memory_beside_others(pool, task, evidence: Evidence) -> bool:
    """Whether a task ran out of GPU memory where `pool`'s sizing, not the task, may be at fault, so that it runs once
    more with the GPU alone: a screen (its memory is not measured before it runs), the keeper judging a candidate's
    outputs beside a large worker (`KeeperRefused`, on the H100), the reference's side (the keeper's build, or the
    worker's own copy of the reference: stage `problem`; three full-size level-1 problems started together on the
    H100 each ran out beside the others' 16-49 GiB), or the candidate's worker, sized from its reference
    (`TaskDriver.worker_need_mb`) and capped there, on a GPU.  Only out of memory alone is a problem too large for
    its GPU."""
    if not _out_of_memory(evidence):
        return False
    if task.mode == "screen" or evidence.error.kind == "KeeperCrashed":
        return True
    return bool(pool.memory) and evidence.stage in ("problem", "init", "bind", "run")
