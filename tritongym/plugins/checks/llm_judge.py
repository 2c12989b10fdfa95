"""`llm-judge`: a language model reads the candidate and judges it against TritonRL's rubric (off by default).

TritonRL (REFERENCE.md) multiplies an LLM judge's verdict into every reward, with a rubric the rule checks
cannot state: the core computation is really in Triton, no output is hard-coded, and no part of the
reference is left out (a LayerNorm without its scale).  This check asks any registered generation engine
(`transformers`, `vllm`, `openai`, or a plugin's) that question, with the prompt of `templates/judge.md` or
a template of one's own, and fails the candidate when the answer says FAIL, with the judge's reason.

Design choices, and why:

- **Off by default** (`default_enabled = False`): every verdict costs a model call.  Switch it on with
  `enable_checks = { llm-judge = {...} }` in an evaluation config (or by naming it in `checks`).
- **A runtime check**: it runs in the parent after the worker, for candidates whose outputs matched the
  reference, so an incorrect kernel costs no model call, and the prompt can show what the evaluation saw
  (`evidence = true`: the kernels launched, the torch ops traced, PR).
- **How it reaches an engine and the registry.**  Plugins import only the kernel and the plugin helpers
  (`tests/test_architecture.py`), so this check imports neither the engine plugins nor `core.registry`.
  The Evaluator hands every check a `CheckContext` in `bind` (`core/interfaces.py`): the plugin host,
  through which the check creates its engine exactly as a run creates its own (`host.create("engine",
  ...)`, options validated, unknown names refused before any candidate is judged), and the registry as a
  `JudgeMemo`, a protocol in the kernel that `Registry` implements.  No new helper module was needed.
- **Cached verdicts**: a verdict is stored in the registry's `judge_verdicts` table (migration m014) under
  check, kernel id, problem key, judge model (engine, model and sampling settings) and template hash; the
  same kernel judged again for the same problem by the same judge and prompt is answered from there, under
  any protocol and in any run, without starting the engine (the model is loaded at the first real call);
  without a registry, verdicts are kept for the life of the check.
  `--no-cache` (`use_cache = false`) asks again and replaces the stored verdict.  The identity is the
  configuration, not the weights: after changing a model in place, change `template` or clear the table.
- **An unparseable answer** (no `VERDICT: PASS` or `VERDICT: FAIL` line, after any `<think>` block) fails
  the check by default (`unparseable = "fail"`): a judge that cannot say "pass" has not passed anything, and
  the reason quotes the start of the answer so a broken prompt or model is seen at once.  `unparseable =
  "pass"` lets such candidates through instead.  The answer is stored either way (`passed` NULL), so the
  policy applies at each use.
- **A judge that cannot answer** (the engine raises, or returns an error for the request) is an error of
  the check, not a verdict: it raises `CheckUnavailable`, the evaluation is unjudged for this check (said in
  its message, never stored), and nothing is cached, so the next evaluation asks again.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tritongym import hookimpl
from tritongym.core.errors import CheckUnavailable, ConfigError, TritonGymError
from tritongym.core.generation import ModelSpec, SamplingOptions
from tritongym.core.interfaces import CheckContext, GenerationEngine, JudgeMemo, RuntimeCheck
from tritongym.core.models import Candidate, CheckVerdict, Evidence, JudgeVerdict, Problem

if TYPE_CHECKING:
    from tritongym.core.generation import Message

BUNDLED_TEMPLATE = Path(__file__).resolve().parents[2] / "templates" / "judge.md"
PLACEHOLDERS = frozenset({"problem_name", "reference_code", "candidate_code", "evidence"})
REQUIRED = frozenset({"candidate_code"})

_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_VERDICT = re.compile(r"verdict[\s:*_`'\"=>-]*(pass|fail)\b", re.IGNORECASE)
_REASON = re.compile(r"reason[\s:*_`'\"=>-]*(\S.*)", re.IGNORECASE)


def template_text(template: str | None) -> str:
    """The prompt template an option names: None is the bundled rubric; a string holding `$candidate_code`
    is a template itself; anything else is the path of a file holding one."""
    if template is None:
        return BUNDLED_TEMPLATE.read_text(encoding="utf-8")
    if "$" in template:
        return template
    path = Path(template).expanduser()
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(
            f"cannot read template file {path} ({exc}); give a file path, or the template text itself (it must "
            "use $candidate_code)"
        ) from None


def check_template(text: str) -> None:
    """A template may use only the known placeholders and must show the candidate."""
    template = Template(text)
    used: set[str] = set()
    for match in template.pattern.finditer(text):
        if match["invalid"] is not None:
            line = text.count("\n", 0, match.start()) + 1
            raise ValueError(f"line {line}: a '$' that starts no placeholder; write '$$' for a literal '$'")
        used.add(match["named"] or match["braced"] or "")
    used.discard("")
    allowed = ", ".join(f"${name}" for name in sorted(PLACEHOLDERS))
    unknown = sorted(used - PLACEHOLDERS)
    if unknown:
        raise ValueError(f"unknown placeholder {', '.join('$' + n for n in unknown)} (allowed: {allowed})")
    if REQUIRED - used:
        raise ValueError("the template must use $candidate_code (the judge has to see the candidate)")


def parse_answer(answer: str) -> tuple[bool | None, str]:
    """(passed, reason) from a judge's answer: the last `VERDICT: PASS|FAIL` outside any `<think>` block
    decides (markdown emphasis and case do not matter), the last `REASON:` line is the reason.  passed is
    None when the answer has no verdict line."""
    text = _THINK.sub("", answer)
    verdicts = _VERDICT.findall(text)
    if not verdicts:
        return None, ""
    reasons = _REASON.findall(text)
    reason = reasons[-1].strip().strip("*_` ").strip() if reasons else ""
    return verdicts[-1].lower() == "pass", reason[:500]


class LLMJudgeOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    engine: str = Field(default="openai", description="registered generation engine that runs the judge")
    engine_options: dict = Field(
        default_factory=dict, description="the engine's options, e.g. {base_url = 'http://host:8000/v1', model = ...}"
    )
    model: ModelSpec | None = Field(
        default=None,
        description="the judge model, as in a run's [model]; required by engines that load one (transformers, "
        "vllm); the openai engine uses the served model",
    )
    template: str | None = Field(
        default=None,
        description="prompt template: the text itself (it uses $candidate_code; also $reference_code, "
        "$problem_name, $evidence) or a file path; None = templates/judge.md, TritonRL's rubric",
    )
    evidence: bool = Field(
        default=False, description="show the judge what the evaluation saw (kernels launched, torch ops, PR)"
    )
    unparseable: Literal["fail", "pass"] = Field(
        default="fail", description="what an answer without a VERDICT: PASS/FAIL line counts as"
    )
    temperature: float = Field(default=0.0, ge=0, description="sampling temperature of the judge; 0 = greedy")
    max_tokens: int = Field(default=256, ge=1, description="tokens the judge may answer with")
    seed: int | None = Field(default=None, ge=0, description="sampling seed (temperature > 0)")

    @field_validator("template")
    @classmethod
    def _readable_template(cls, value: str | None) -> str | None:
        check_template(template_text(value))
        return value


class LLMJudgeCheck(RuntimeCheck):
    """A language model judges the kernel against TritonRL's rubric (off by default: costs a model call)."""

    name = "llm-judge"
    priority = 100  # after every rule-based check: the costliest, and its reason reads best after theirs
    default_enabled = False
    Options: ClassVar[type[BaseModel]] = LLMJudgeOptions

    def __init__(self, options: BaseModel | None = None) -> None:
        super().__init__(options)
        self.template = Template(template_text(self.options.template))
        self.engine: GenerationEngine | None = None
        self.memo: JudgeMemo | None = None
        self.reuse = True
        self.started = False
        self.asked: dict[tuple[str, ...], JudgeVerdict] = {}  # this process's verdicts, for runs without a registry

    # --- identity -------------------------------------------------------------------------------------

    @property
    def template_hash(self) -> str:
        """What was asked: the template text, and whether the evidence was shown in it."""
        text = json.dumps({"template": self.template.template, "evidence": self.options.evidence})
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def judge_model(self) -> str:
        """Who was asked, readable and unique: `engine:model#hash of every setting that changes the answer`."""
        o = self.options
        if o.model is not None:
            label = str(o.model.path or o.model.builtin or f"tiny:{o.model.tiny.directory}")
        else:
            label = str(o.engine_options.get("model") or o.engine_options.get("base_url") or "served")
        settings = {
            "engine": o.engine,
            "engine_options": o.engine_options,
            "model": o.model.model_dump(mode="json") if o.model is not None else None,
            "sampling": self.sampling.model_dump(mode="json"),
        }
        digest = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:8]
        return f"{o.engine}:{label}#{digest}"

    @property
    def sampling(self) -> SamplingOptions:
        o = self.options
        return SamplingOptions(temperature=o.temperature, max_tokens=o.max_tokens, seed=o.seed)

    # --- life cycle -----------------------------------------------------------------------------------

    def bind(self, context: CheckContext) -> None:
        o = self.options
        try:
            engine = context.host.create("engine", o.engine, o.engine_options)
        except TritonGymError as exc:
            raise ConfigError(f"check '{self.name}' option engine: {exc}") from None
        reason = engine.unavailable_reason()
        if reason:
            raise ConfigError(f"check '{self.name}': engine '{o.engine}' cannot run here: {reason}")
        if engine.loads_model:
            if o.model is None:
                raise ConfigError(
                    f"check '{self.name}': engine '{o.engine}' loads its model; set the option model "
                    "(e.g. model = {path = '/models/judge'}), or use engine 'openai' with a served model"
                )
            from tritongym.core.learn.model_loading import check_model_spec

            try:
                check_model_spec(o.model)
            except ConfigError as exc:
                raise ConfigError(f"check '{self.name}' option model: {exc}") from None
        self.engine, self.memo, self.reuse, self.started = engine, context.memo, context.reuse, False

    def close(self) -> None:
        if self.engine is not None and self.started:
            self.engine.close()
        self.started = False

    # --- judging --------------------------------------------------------------------------------------

    def prompt(self, evidence: Evidence, candidate: Candidate, problem: Problem) -> list[Message]:
        text = self.template.substitute(
            problem_name=problem.name,
            reference_code=problem.source.strip(),
            candidate_code=candidate.source.strip(),
            evidence=describe_evidence(evidence) if self.options.evidence else "",
        )
        return [{"role": "user", "content": text}]

    def ask(self, messages: list[Message]) -> str:
        """One model call; the engine is started (its model loaded) on the first."""
        if self.engine is None:
            raise RuntimeError(f"check '{self.name}' is not bound to an engine: the Evaluator calls bind() first")
        engine = self.options.engine
        try:
            if not self.started:
                o = self.options
                # an engine that loads no model (openai) reads the spec only to pick a served model by its path
                self.engine.start(o.model or ModelSpec(builtin="smollm2-135m-instruct"), self.sampling)
                self.started = True
            generation = self.engine.generate([messages])[0]
        except Exception as exc:  # the judge, not the candidate: no verdict, and nothing cached
            raise CheckUnavailable(f"engine '{engine}' could not answer ({type(exc).__name__}: {exc})") from exc
        if generation.finish_reason == "error":
            raise CheckUnavailable(f"engine '{engine}' gave no answer for this request (see its log)")
        return generation.text

    def judge(self, evidence: Evidence, candidate: Candidate, problem: Problem) -> CheckVerdict:
        key = (self.name, candidate.kernel_id, problem.key, self.judge_model, self.template_hash)
        stored = None
        if self.reuse:
            stored = self.memo.judge_verdict(*key) if self.memo is not None else self.asked.get(key)
        if stored is None:
            answer = self.ask(self.prompt(evidence, candidate, problem))
            passed, reason = parse_answer(answer)
            stored = JudgeVerdict(
                check=key[0],
                kernel_id=key[1],
                problem_key=key[2],
                judge_model=key[3],
                template_hash=key[4],
                passed=passed,
                reason=reason,
                answer=answer,
            )
            if self.memo is not None:
                self.memo.store_judge_verdict(stored)
            self.asked[key] = stored
        return self.verdict(stored)

    def verdict(self, stored: JudgeVerdict) -> CheckVerdict:
        """The check's verdict from a judgement, fresh or stored, under the current `unparseable` policy."""
        judge = f"the judge ({stored.judge_model})"
        if stored.passed is None:
            policy = self.options.unparseable
            start = " ".join(stored.answer.split())[:200]
            return CheckVerdict(
                name=self.name,
                passed=policy == "pass",
                stage="runtime",
                reason=f"{judge} gave no verdict: its answer has no 'VERDICT: PASS' or 'VERDICT: FAIL' line, "
                f"counted as {'a pass' if policy == 'pass' else 'a failure'} (option unparseable = '{policy}'); "
                f"the answer begins {start!r}",
            )
        reason = stored.reason or "no reason given"
        if stored.passed:
            return CheckVerdict(name=self.name, passed=True, stage="runtime", reason=f"{judge} passed it: {reason}")
        return CheckVerdict(
            name=self.name,
            passed=False,
            stage="runtime",
            reason=f"{judge} found it dishonest: {reason}; compute the whole reference in your own Triton "
            "kernels, from the inputs",
        )


def _trials_seen(evidence: Evidence) -> str:
    """`3 trials`, then the extra shape sets and the late trial where the evaluation ran them."""
    main = sum(t.sizes is None and not t.late for t in evidence.trials)
    shapes = sum(t.sizes is not None for t in evidence.trials)
    text = f"{main} trials"
    if shapes:
        text += f", at {shapes} more shape set{'s' if shapes != 1 else ''}"
    if any(t.late for t in evidence.trials):
        text += ", and in a late trial on fresh inputs"
    return text


def describe_evidence(evidence: Evidence) -> str:
    """What the evaluation saw, as a markdown section for the prompt: kernel and op names with their counts,
    and PR to two decimals (no timings).  Not part of the cache key: a kernel judged once keeps its verdict
    whatever a later evaluation of it saw."""
    own: dict[str, int] = {}
    other: dict[str, int] = {}
    for trial in evidence.trials:
        for record in trial.launches:
            into = own if record.own else other
            into[record.kernel] = into.get(record.kernel, 0) + record.count

    def listed(counts: dict[str, int]) -> str:
        return ", ".join(f"{name} x{count}" for name, count in sorted(counts.items())) or "none"

    lines = [
        "",
        "## What the evaluation saw",
        "",
        f"- its outputs matched the reference in {_trials_seen(evidence)}",
        f"- the candidate's own Triton kernels launched: {listed(own)}",
        f"- other kernels launched: {listed(other)}",
        f"- torch ops its forward ran: {listed({f'aten.{k}': v for k, v in evidence.torch_ops.items()})}",
        f"- torch ops the reference's forward ran: "
        f"{listed({f'aten.{k}': v for k, v in evidence.reference_torch_ops.items()})}",
    ]
    if evidence.pr is not None:
        lines.append(f"- share of device time in the candidate's own kernels (PR): {evidence.pr:.2f}")
    return "\n".join(lines) + "\n"


@hookimpl
def register_checks(register):
    register(LLMJudgeCheck)
