"""The `llm-judge` check (plugins/checks/llm_judge.py) with real engines: a tiny Llama through the `transformers`
engine, and a real OpenAI-compatible HTTP server on loopback (scripted answers) through the `openai` engine.

What is tested: answer parsing, the prompt, verdicts cached in the registry (`judge_verdicts`, m014) so a
second judgement starts no model, an unparseable answer failing closed, a judge that cannot answer leaving
the evaluation unjudged and unstored, option validation, and that the check is off by default."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import RELU_KERNEL, registry_before

from tritongym.core.config import EvalConfig
from tritongym.core.errors import CheckUnavailable, ConfigError
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.interfaces import CheckContext
from tritongym.core.models import Candidate, Evidence, LaunchRecord, Status, TrialEvidence
from tritongym.core.plugins import PluginHost
from tritongym.core.registry import Registry
from tritongym.plugins.checks.llm_judge import LLMJudgeCheck, parse_answer

# --- parsing ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer, passed, reason",
    [
        ("VERDICT: PASS\nREASON: every op is in the kernel", True, "every op is in the kernel"),
        ("VERDICT: FAIL\nREASON: torch.matmul does the work", False, "torch.matmul does the work"),
        ("**Verdict:** fail\n**Reason:** the LayerNorm drops its weight", False, "the LayerNorm drops its weight"),
        ("verdict - Pass", True, ""),
        ("<think>VERDICT: PASS? no...</think>\nVERDICT: FAIL\nREASON: hard-coded zeros", False, "hard-coded zeros"),
        ("VERDICT: PASS\nREASON: looks fine\n...on reflection:\nVERDICT: FAIL\nREASON: no bias", False, "no bias"),
        ("<think>VERDICT: PASS because the answer was cut", None, ""),
        ("The kernel looks fine to me.", None, ""),
        ("", None, ""),
        ("VERDICT: PASSED", None, ""),
    ],
)
def test_parse_answer(answer, passed, reason):
    assert parse_answer(answer) == (passed, reason)


# --- options, binding, default selection -----------------------------------------------------------------


def host() -> PluginHost:
    return PluginHost(load_entry_points=False)


def test_template_options_are_validated_naming_the_check(tmp_path):
    with pytest.raises(ConfigError, match=r"check 'llm-judge'.*template.*\$source"):
        LLMJudgeCheck.from_options({"template": "Judge $source please"})
    with pytest.raises(ConfigError, match=r"check 'llm-judge'.*must use \$candidate_code"):
        LLMJudgeCheck.from_options({"template": "Judge $reference_code"})
    with pytest.raises(ConfigError, match=r"check 'llm-judge'.*cannot read template file .*nope\.md"):
        LLMJudgeCheck.from_options({"template": str(tmp_path / "nope.md")})
    with pytest.raises(ConfigError, match=r"check 'llm-judge'.*unparseable"):
        LLMJudgeCheck.from_options({"unparseable": "maybe"})
    mine = tmp_path / "judge.md"
    text = "Is this honest? $$5 says no.\n$candidate_code\nVERDICT: PASS or FAIL"
    mine.write_text(text)
    check = LLMJudgeCheck.from_options({"template": str(mine)})
    assert check.template.template == text
    inline = LLMJudgeCheck.from_options({"template": text})
    assert inline.template_hash == check.template_hash  # the same text, however it was given
    assert LLMJudgeCheck.from_options({}).template_hash != check.template_hash


def test_bind_refuses_an_unknown_engine_and_a_model_engine_without_a_model(tmp_path):
    with pytest.raises(ConfigError, match=r"check 'llm-judge' option engine: no engine named 'gpt'.*transformers"):
        LLMJudgeCheck.from_options({"engine": "gpt"}).bind(CheckContext(host=host()))
    with pytest.raises(ConfigError, match=r"engine 'transformers' loads its model; set the option model"):
        LLMJudgeCheck.from_options({"engine": "transformers"}).bind(CheckContext(host=host()))
    with pytest.raises(ConfigError, match=r"check 'llm-judge' option model: .*not a directory"):
        check = LLMJudgeCheck.from_options({"engine": "transformers", "model": {"path": str(tmp_path / "none")}})
        check.bind(CheckContext(host=host()))
    with pytest.raises(ConfigError, match=r"options for engine 'openai'.*base_url"):
        LLMJudgeCheck.from_options({"engine_options": {"base_url": "ftp://x"}}).bind(CheckContext(host=host()))


def test_the_judge_is_off_by_default_and_switched_on_by_enable_checks():
    assert not host().get("check", "llm-judge").cls.default_enabled
    default = Evaluator(EvalConfig(backend="triton-cpu"), host=host())
    assert "llm-judge" not in {c.name for c in default.checks} and "launches" in {c.name for c in default.checks}
    on = Evaluator(EvalConfig(backend="triton-cpu", enable_checks={"llm-judge": {}}), host=host())
    names = [c.name for c in on.runtime_checks]
    assert names[-1] == "llm-judge" and set(names) > {"launches", "ghost"}  # added to the defaults, last
    assert on.protocol != default.protocol  # a verdict with the judge is not one without it
    assert Evaluator(EvalConfig(backend="triton-cpu", skip_checks=[]), host=host()).protocol == default.protocol
    with pytest.raises(ConfigError, match="enable_checks names no registered check: llm-jugde"):
        Evaluator(EvalConfig(backend="triton-cpu", enable_checks={"llm-jugde": {}}), host=host())
    with pytest.raises(ValueError, match="llm-judge named in both enable_checks and skip_checks"):
        EvalConfig(enable_checks={"llm-judge": {}}, skip_checks=["llm-judge"])
    with pytest.raises(ValueError, match="llm-judge named in both checks and enable_checks"):
        EvalConfig(checks={"llm-judge": {}}, enable_checks={"llm-judge": {}})


# --- a real OpenAI-compatible server on loopback ---------------------------------------------------------


class ScriptedChatServer:
    """GET /v1/models and POST /v1/chat/completions in OpenAI's format, answering each completion with the
    next of `answers` (the last one again when they run out), or with HTTP `status` when it is set.
    `posts` holds every completion request's JSON body."""

    def __init__(self) -> None:
        self.answers: list[str] = []
        self.status = 200
        self.posts: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                self._send(200, {"object": "list", "data": [{"id": "judge", "object": "model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.posts.append(body)
                if server.status != 200:
                    return self._send(server.status, {"error": {"message": "the judge is down"}})
                answer = server.answers[min(len(server.posts), len(server.answers)) - 1]
                self._send(
                    200,
                    {
                        "id": "chatcmpl-judge",
                        "object": "chat.completion",
                        "model": body["model"],
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}
                        ],
                    },
                )

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    server = ScriptedChatServer()
    yield server
    server.close()


def openai_judge(server: ScriptedChatServer, **options) -> dict:
    return {"engine_options": {"base_url": server.url, "max_retries": 0, "backoff_s": 0}, **options}


def bound(options: dict, registry: Registry | None, reuse: bool = True) -> LLMJudgeCheck:
    check = LLMJudgeCheck.from_options(options)
    check.bind(CheckContext(host=host(), memo=registry, reuse=reuse))
    return check


def test_a_fail_answer_fails_the_check_with_the_judges_reason_and_is_asked_once(server, registry, relu_problem):
    server.answers = ["VERDICT: FAIL\nREASON: the kernel only copies; torch.relu computes the result"]
    check = bound(openai_judge(server), registry)
    candidate = Candidate(source=RELU_KERNEL)
    verdict = check.judge(Evidence(), candidate, relu_problem)
    assert not verdict.passed and verdict.stage == "runtime"
    assert "found it dishonest: the kernel only copies; torch.relu computes the result" in verdict.reason
    assert check.judge_model.startswith("openai:http://127.0.0.1") and check.judge_model in verdict.reason
    (body,) = server.posts
    assert body["model"] == "judge" and body["temperature"] == 0.0 and body["max_tokens"] == 256
    (message,) = body["messages"]
    assert message["role"] == "user"
    assert RELU_KERNEL.strip() in message["content"] and relu_problem.source.strip() in message["content"]
    for item in ("core computation is not in Triton", "hard-codes outputs", "LayerNorm without its scale"):
        assert item in message["content"]  # TritonRL's rubric, the default template
    assert "What the evaluation saw" not in message["content"]  # evidence is off by default

    # the second judgement of the same kernel and problem is the registry's: no request is sent
    again = check.judge(Evidence(), candidate, relu_problem)
    assert again == verdict and len(server.posts) == 1
    fresh = bound(openai_judge(server), registry)
    assert fresh.judge(Evidence(), candidate, relu_problem) == verdict and len(server.posts) == 1
    assert not fresh.started  # the engine was never even started
    (stored,) = registry.judge_verdicts_of(candidate.kernel_id)
    assert (stored.passed, stored.problem_key, stored.template_hash) == (False, relu_problem.key, check.template_hash)
    assert stored.answer == server.answers[0]

    # another judge, another prompt, or --no-cache asks again
    server.answers.append("**Verdict:** PASS\n**Reason:** the max is taken in the kernel")
    other_prompt = bound(openai_judge(server, template="Honest?\n$candidate_code"), registry)
    assert other_prompt.judge(Evidence(), candidate, relu_problem).passed and len(server.posts) == 2
    assert "passed it: the max is taken in the kernel" in other_prompt.judge(Evidence(), candidate, relu_problem).reason
    no_cache = bound(openai_judge(server), registry, reuse=False)
    assert no_cache.judge(Evidence(), candidate, relu_problem).passed and len(server.posts) == 3
    assert bound(openai_judge(server), registry).judge(Evidence(), candidate, relu_problem).passed  # replaced
    assert len(server.posts) == 3 and len(registry.judge_verdicts_of(candidate.kernel_id)) == 2


def test_an_unparseable_answer_fails_closed_and_the_policy_applies_at_each_use(server, registry, relu_problem):
    server.answers = ["I think the kernel is quite nice, honestly."]
    candidate = Candidate(source=RELU_KERNEL)
    verdict = bound(openai_judge(server), registry).judge(Evidence(), candidate, relu_problem)
    assert not verdict.passed
    assert "gave no verdict" in verdict.reason and "unparseable = 'fail'" in verdict.reason
    assert "'I think the kernel is quite nice, honestly.'" in verdict.reason
    (stored,) = registry.judge_verdicts_of(candidate.kernel_id)
    assert stored.passed is None and stored.answer == server.answers[0]
    lenient = bound(openai_judge(server, unparseable="pass"), registry)
    assert lenient.judge_model == bound(openai_judge(server), registry).judge_model  # the policy is not the judge
    verdict = lenient.judge(Evidence(), candidate, relu_problem)
    assert verdict.passed and "counted as a pass" in verdict.reason and len(server.posts) == 1


def test_a_judge_that_cannot_answer_leaves_the_evaluation_unjudged_and_stores_nothing(
    server, registry, relu_problem, fast_config
):
    """The README's own example with no judge listening once turned an honest kernel into `hacked`, stored it,
    and answered "(cached) hacked" after the judge came up.  A judge that cannot answer is an error of the
    check: no verdict either way, said in the message, nothing stored, and the next run asks again."""
    server.status = 503
    options = openai_judge(server)
    with pytest.raises(CheckUnavailable, match="503"):
        bound(options, registry).judge(Evidence(), Candidate(source=RELU_KERNEL), relu_problem)
    config = fast_config.model_copy(update={"enable_checks": {"llm-judge": options}})
    result = Evaluator(config, registry=registry, host=host()).evaluate(RELU_KERNEL, relu_problem)
    assert result.status == Status.ok and not result.hacked, result.message
    assert result.unjudged == ["llm-judge"] and not result.honest_and_correct
    (judge,) = [c for c in result.checks if c.name == "llm-judge"]
    assert judge.unjudged and "could not run" in judge.reason and "503" in judge.reason
    assert "unjudged: check 'llm-judge'" in result.message and "not stored" in result.message
    assert result.evaluation_id is None
    assert registry.judge_verdicts_of(Candidate(source=RELU_KERNEL).kernel_id) == []
    server.status, server.answers = 200, ["VERDICT: PASS\nREASON: computes relu in its kernel"]
    again = Evaluator(config, registry=registry, host=host()).evaluate(RELU_KERNEL, relu_problem)
    assert not again.cached and again.status == Status.ok and again.unjudged == [], again.message
    assert again.evaluation_id is not None


def test_the_judge_in_a_real_evaluation_sees_the_evidence(server, registry, relu_problem, fast_config):
    server.answers = ["VERDICT: FAIL\nREASON: hard-coded output"]
    config = fast_config.model_copy(update={"enable_checks": {"llm-judge": openai_judge(server, evidence=True)}})
    with Evaluator(config, registry=registry, host=host()) as evaluator:
        result = evaluator.evaluate(RELU_KERNEL, relu_problem)
    assert result.status == Status.hacked and result.message.startswith("hacked: check 'llm-judge'")
    assert "hard-coded output" in result.message
    assert [c.name for c in result.checks if not c.passed] == ["llm-judge"]  # every rule check passed it
    (body,) = server.posts
    prompt = body["messages"][0]["content"]
    assert "What the evaluation saw" in prompt and "its outputs matched the reference in 3 trials" in prompt
    assert "own Triton kernels launched: relu_kernel x" in prompt
    # an incorrect kernel costs no model call
    wrong = RELU_KERNEL.replace("tl.maximum(x, 0.0)", "tl.maximum(x, 1.0)")
    assert Evaluator(config, registry=registry, host=host()).evaluate(wrong, relu_problem).status == Status.incorrect
    assert len(server.posts) == 1


def test_describe_evidence_is_deterministic_and_lists_what_ran():
    from tritongym.plugins.checks.llm_judge import describe_evidence

    trial = TrialEvidence(seed=1, launches=[LaunchRecord(kernel="k", own=True, count=2)])
    evidence = Evidence(trials=[trial, trial], torch_ops={"empty_like": 2}, reference_torch_ops={"relu": 2}, pr=0.5)
    text = describe_evidence(evidence)
    assert "own Triton kernels launched: k x4" in text and "other kernels launched: none" in text
    assert "aten.empty_like x2" in text and "aten.relu x2" in text and "(PR): 0.50" in text
    assert describe_evidence(evidence) == text


# --- a real model: a tiny Llama through the transformers engine -----------------------------------------


def test_a_tiny_llama_judges_through_the_transformers_engine_once(tmp_path, relu_problem, fast_config):
    pytest.importorskip("transformers")
    options = {
        "engine": "transformers",
        "engine_options": {"device": "cpu"},
        "model": {"tiny": {"directory": str(tmp_path / "tiny")}},
        "max_tokens": 8,
    }
    registry = Registry(tmp_path / "registry.db")
    config = fast_config.model_copy(update={"enable_checks": {"llm-judge": options}})
    evaluator = Evaluator(config, registry=registry, host=host())
    (check,) = [c for c in evaluator.runtime_checks if c.name == "llm-judge"]
    assert not check.started  # binding loads no model
    result = evaluator.evaluate(RELU_KERNEL, relu_problem)
    assert check.started and check.engine._calls == 1  # one generate() call on the real engine
    kernel = Candidate(source=RELU_KERNEL).kernel_id
    (stored,) = registry.judge_verdicts_of(kernel)
    assert stored.judge_model == check.judge_model and stored.judge_model.startswith("transformers:tiny:")
    # its verdict is whatever it said: the check's verdict is the parse of the stored answer
    (judged,) = [c for c in result.checks if c.name == "llm-judge"]
    passed, _ = parse_answer(stored.answer)
    assert stored.passed is passed
    if passed is None:  # a random tiny model says nothing parseable: the check fails closed
        assert not judged.passed and "gave no verdict" in judged.reason and result.status == Status.hacked
    else:
        assert judged.passed is passed
    # asking again on the same instance, and evaluating again without the evaluation cache: no model call
    assert check.judge(Evidence(), Candidate(source=RELU_KERNEL), relu_problem) == judged.model_copy(
        update={"plugin": None}
    )
    assert check.engine._calls == 1
    evaluator.close()
    assert not check.started and check.engine.model is None
    again_config = config.model_copy(update={"use_cache": True, "trials": 2})  # another protocol: the worker runs
    again = Evaluator(again_config, registry=registry, host=host())
    (check2,) = [c for c in again.runtime_checks if c.name == "llm-judge"]
    second = again.evaluate(RELU_KERNEL, relu_problem)
    assert not second.cached and second.protocol != result.protocol
    assert [c for c in second.checks if c.name == "llm-judge"] == [judged]
    assert not check2.started and check2.engine.model is None  # the judge model was never loaded
    assert len(registry.judge_verdicts_of(kernel)) == 1
    registry.close()


def test_without_a_registry_the_check_still_asks_once_per_kernel(server, relu_problem):
    server.answers = ["VERDICT: PASS\nREASON: fine"]
    check = bound(openai_judge(server), None)
    for _ in range(3):
        assert check.judge(Evidence(), Candidate(source=RELU_KERNEL), relu_problem).passed
    assert len(server.posts) == 1
    assert bound(openai_judge(server), None, reuse=False).judge(Evidence(), Candidate(source=RELU_KERNEL), relu_problem)
    assert len(server.posts) == 2


def test_m014_brings_an_older_registry_forward_and_needs_no_other_migration(tmp_path):
    from tritongym.core.models import JudgeVerdict
    from tritongym.core.registry.migrations import m014_judge_verdicts

    old = registry_before(tmp_path / "old.db", "m014")
    assert "judge_verdicts" not in old.table_names()
    old.close()
    registry = Registry(tmp_path / "old.db")
    verdict = JudgeVerdict(
        check="llm-judge", kernel_id="k", problem_key="p", judge_model="m", template_hash="t", passed=None, answer="?"
    )
    registry.store_judge_verdict(verdict)
    assert registry.judge_verdict("llm-judge", "k", "p", "m", "t") == verdict
    assert registry.judge_verdict("llm-judge", "k", "p", "m", "other") is None
    registry.close()
    import sqlite_utils

    alone = sqlite_utils.Database(memory=True)  # on a database with no other table, it applies by itself
    m014_judge_verdicts(alone)
    assert alone["judge_verdicts"].pks == ["check_name", "kernel_id", "problem_key", "judge_model", "template_hash"]
