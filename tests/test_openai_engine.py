"""The `openai` engine against a real local OpenAI-compatible server that generates with the `transformers`
engine on a tiny Llama (vLLM's extensions included: token ids in log-probs, prefill continuation, stop_reason)."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from tritongym.core.errors import ConfigError  # noqa: E402
from tritongym.core.generation import ModelSpec, SamplingOptions, TinyModelSpec  # noqa: E402
from tritongym.core.plugins import PluginHost  # noqa: E402
from tritongym.plugins.engines.openai_engine import EndpointError, OpenAIEngine  # noqa: E402
from tritongym.plugins.engines.transformers_engine import TransformersEngine  # noqa: E402

CONVERSATIONS = [
    [{"role": "user", "content": "Write a Triton kernel that adds two tensors."}],
    [{"role": "system", "content": "You write fast kernels."}, {"role": "user", "content": "Softmax, please."}],
    [{"role": "user", "content": "A matmul kernel."}, {"role": "assistant", "content": "```python\nimport triton\n"}],
]
SERVED = "tiny-llama"


class TinyOpenAIServer:
    """GET /v1/models and POST /v1/chat/completions in OpenAI's format, generating with a TransformersEngine.

    `fail_next` answers that many requests with 503; `api_key`, when set, is required as a bearer token;
    `requests` records (method, path, headers, body) of every request."""

    def __init__(self, engine: TransformersEngine) -> None:
        self.engine = engine
        self.lock = threading.Lock()
        self.reset()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                server.handle(self, "GET", None)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.handle(self, "POST", body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def reset(self) -> None:
        self.fail_next = 0
        self.api_key: str | None = None
        self.served = [SERVED]
        self.requests: list[tuple[str, str, dict, dict | None]] = []

    def posts(self) -> list[dict]:
        return [body for method, _, _, body in self.requests if method == "POST"]

    def handle(self, handler: BaseHTTPRequestHandler, method: str, body: dict | None) -> None:
        with self.lock:
            self.requests.append((method, handler.path, dict(handler.headers), body))
            failing = self.fail_next > 0
            self.fail_next -= failing
        if failing:
            return _send(handler, 503, {"error": {"message": "overloaded, try again"}})
        if self.api_key is not None and handler.headers.get("Authorization") != f"Bearer {self.api_key}":
            return _send(handler, 401, {"error": {"message": "invalid API key"}})
        if method == "GET" and handler.path == "/v1/models":
            return _send(handler, 200, {"object": "list", "data": [{"id": m, "object": "model"} for m in self.served]})
        if method == "POST" and handler.path == "/v1/chat/completions":
            return _send(handler, *self.complete(body))
        _send(handler, 404, {"error": {"message": f"no route {handler.path}"}})

    def complete(self, body: dict) -> tuple[int, dict]:
        if body["model"] not in self.served:
            return 404, {"error": {"message": f"The model `{body['model']}` does not exist."}}
        messages = body["messages"]
        if messages[-1]["role"] == "assistant" and not body.get("continue_final_message"):
            return 400, {"error": {"message": "a final assistant message needs continue_final_message"}}
        stops = body.get("stop") or []
        sampling = SamplingOptions(
            temperature=body.get("temperature", 1.0),
            top_p=body.get("top_p", 1.0),
            max_tokens=body.get("max_tokens", 16),
            stop=stops,
            seed=body.get("seed"),
        )
        with self.lock:  # one generation at a time, each as a first call under its own seed
            self.engine.sampling, self.engine._calls = sampling, 0
            generation = self.engine.generate([messages])[0]
        text, stop_reason = generation.text, None
        matched = [stop for stop in stops if generation.finish_reason == "stop" and text.endswith(stop)]
        if matched:  # like vLLM without include_stop_str_in_output: the stop string is not in the text
            stop_reason = matched[0]
            text = text[: -len(stop_reason)]
        logprobs = None
        if body.get("logprobs"):
            tokenizer = self.engine.tokenizer
            as_ids = body.get("return_tokens_as_token_ids")
            logprobs = {
                "content": [
                    {"token": f"token_id:{token}" if as_ids else tokenizer.decode([token]), "logprob": logprob}
                    for token, logprob in zip(generation.token_ids, generation.logprobs)
                ]
            }
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "logprobs": logprobs,
            "finish_reason": generation.finish_reason,
            "stop_reason": stop_reason,
        }
        answer = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [choice],
            "usage": {
                "prompt_tokens": len(generation.prompt_token_ids),
                "completion_tokens": len(generation.token_ids),
                "total_tokens": len(generation.prompt_token_ids) + len(generation.token_ids),
            },
        }
        if body.get("return_token_ids"):
            answer["prompt_token_ids"] = generation.prompt_token_ids
            choice["token_ids"] = generation.token_ids
        return 200, answer

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _send(handler: BaseHTTPRequestHandler, status: int, payload: dict) -> None:
    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


@pytest.fixture(scope="module")
def tiny_spec(tmp_path_factory) -> ModelSpec:
    return ModelSpec(tiny=TinyModelSpec(directory=tmp_path_factory.mktemp("models") / "tiny"))


@pytest.fixture(scope="module")
def local(tiny_spec):
    """(the transformers engine behind the server, the server)."""
    engine = TransformersEngine.from_options({"device": "cpu"})
    engine.start(tiny_spec, SamplingOptions(max_tokens=16))
    server = TinyOpenAIServer(engine)
    yield engine, server
    server.close()
    engine.close()


@pytest.fixture
def server(local):
    local[1].reset()
    return local[1]


def _reference(local, spec: ModelSpec, conversation, **sampling):
    """What the transformers engine itself generates for one conversation (a fresh start, so under `seed`)."""
    engine, server = local
    with server.lock:
        engine.start(spec, SamplingOptions(**sampling))
        return engine.generate([conversation])[0]


def _engine(server, spec, sampling: SamplingOptions, **options) -> OpenAIEngine:
    engine = OpenAIEngine.from_options({"base_url": server.url, "backoff_s": 0, **options})
    engine.start(spec, sampling)
    return engine


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- generation --------------------------------------------------------------------------------------------


def test_round_trip_matches_the_transformers_engine(local, server, tiny_spec):
    sampling = {"temperature": 1.0, "top_p": 0.9, "max_tokens": 12, "seed": 7}
    engine = _engine(server, tiny_spec, SamplingOptions(**sampling), logprobs=True, token_ids=True, concurrency=2)
    assert engine.model_name == SERVED
    first = engine.generate(CONVERSATIONS[:2])
    second = engine.generate(CONVERSATIONS[:2])
    for index, generation in enumerate(first + second):  # request n has seed 7 + n
        expected = _reference(local, tiny_spec, CONVERSATIONS[index % 2], **{**sampling, "seed": 7 + index})
        assert len(generation.token_ids) == len(generation.logprobs) > 0
        assert generation.text == expected.text
        assert generation.token_ids == expected.token_ids
        assert generation.prompt_token_ids == expected.prompt_token_ids
        assert generation.logprobs == pytest.approx(expected.logprobs, abs=1e-6)
        assert generation.finish_reason == expected.finish_reason
    bodies = server.posts()
    assert sorted(body["seed"] for body in bodies) == [7, 8, 9, 10]
    for body in bodies:
        assert body["model"] == SERVED and body["n"] == 1 and body["logprobs"] is True
        assert body["return_tokens_as_token_ids"] is True and body["max_tokens"] == 12
        assert body["temperature"] == 1.0 and body["top_p"] == 0.9
        assert "continue_final_message" not in body and "stop" not in body


def test_without_ids_text_only(local, server, tiny_spec):
    sampling = SamplingOptions(temperature=1.0, max_tokens=10, seed=3)
    expected = _reference(local, tiny_spec, CONVERSATIONS[0], temperature=1.0, max_tokens=10, seed=3)
    for options in ({}, {"logprobs": True}):  # no log-probs; log-probs of text tokens (no ids): dropped
        (generation,) = _engine(server, tiny_spec, sampling, **options).generate(CONVERSATIONS[:1])
        assert generation.text == expected.text
        assert generation.token_ids == generation.logprobs == generation.prompt_token_ids == []
    plain, with_logprobs = server.posts()
    assert "logprobs" not in plain and "return_tokens_as_token_ids" not in plain
    assert with_logprobs["logprobs"] is True and "return_tokens_as_token_ids" not in with_logprobs


def test_assistant_prefill_is_continued(local, server, tiny_spec):
    sampling = {"temperature": 1.0, "max_tokens": 12, "seed": 4}
    expected = _reference(local, tiny_spec, CONVERSATIONS[2], **sampling)
    engine = _engine(server, tiny_spec, SamplingOptions(**sampling), logprobs=True, token_ids=True)
    (generation,) = engine.generate(CONVERSATIONS[2:])
    assert generation.text == expected.text and not generation.text.startswith("```python")
    assert generation.token_ids == expected.token_ids
    tokenizer = local[0].tokenizer
    assert tokenizer.decode(generation.prompt_token_ids).endswith("<|im_start|>assistant\n```python\nimport triton\n")
    (body,) = server.posts()
    assert body["messages"] == CONVERSATIONS[2]
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False


def test_max_tokens_is_length_and_a_stop_string_is_stop(local, server, tiny_spec):
    full = _engine(server, tiny_spec, SamplingOptions(max_tokens=12, seed=5), logprobs=True, token_ids=True)
    (full,) = full.generate(CONVERSATIONS[:1])
    assert full.finish_reason == "length" and len(full.token_ids) == 12
    text = full.text
    start = next(
        i for i in range(3, len(text) - 2) if text[i : i + 2].isprintable() and "\ufffd" not in text[i : i + 2]
    )
    stop = text[start : start + 2]
    sampling = SamplingOptions(max_tokens=12, seed=5, stop=[stop, "never appears"])
    (cut,) = _engine(server, tiny_spec, sampling, logprobs=True, token_ids=True).generate(CONVERSATIONS[:1])
    assert cut.finish_reason == "stop"
    assert cut.text == text[: text.index(stop) + 2]  # the server dropped the stop string; stop_reason restores it
    assert cut.token_ids == full.token_ids[: len(cut.token_ids)] and len(cut.token_ids) < 12
    assert server.posts()[-1]["stop"] == [stop, "never appears"]


def test_empty_call_and_generate_before_start(server, tiny_spec):
    engine = OpenAIEngine.from_options({"base_url": server.url})
    with pytest.raises(RuntimeError, match="not started"):
        engine.generate(CONVERSATIONS[:1])
    engine.start(tiny_spec, SamplingOptions(max_tokens=4))
    assert engine.generate([]) == [] and server.posts() == []


# --- failures ----------------------------------------------------------------------------------------------


def test_retries_then_one_error_then_all_errors(server, tiny_spec):
    sampling = SamplingOptions(max_tokens=6, seed=1)
    engine = _engine(server, tiny_spec, sampling, max_retries=2)
    server.fail_next = 2
    (generation,) = engine.generate(CONVERSATIONS[:1])
    assert generation.finish_reason in ("stop", "length") and generation.text
    assert len(server.posts()) == 3

    engine = _engine(server, tiny_spec, sampling, max_retries=0, concurrency=1)
    server.fail_next = 1  # the first request fails for good, the second passes
    bad, good = engine.generate(CONVERSATIONS[:2])
    assert bad.text == "" and bad.finish_reason == "error" and bad.token_ids == []
    assert good.finish_reason != "error"

    server.fail_next = 10
    with pytest.raises(
        EndpointError, match=rf"all 2 requests to {server.url}/chat/completions failed.*HTTP 503.*overloaded"
    ):
        engine.generate(CONVERSATIONS[:2])


def test_a_refused_request_is_not_retried(server, tiny_spec):
    engine = _engine(server, tiny_spec, SamplingOptions(max_tokens=4), max_retries=3, model=SERVED)
    server.served = ["another-model"]  # the server now answers 404 for SERVED
    with pytest.raises(EndpointError, match="HTTP 404.*does not exist"):
        engine.generate(CONVERSATIONS[:1])
    assert len(server.posts()) == 1


def test_a_dead_endpoint_is_named_at_start(server, tiny_spec):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    engine = OpenAIEngine.from_options({"base_url": url, "max_retries": 1, "backoff_s": 0})
    with pytest.raises(EndpointError, match=rf"{url} does not answer GET /models.*(refused|Connection)"):
        engine.start(tiny_spec, SamplingOptions())
    server.fail_next = 5
    engine = OpenAIEngine.from_options({"base_url": server.url, "max_retries": 0})
    with pytest.raises(EndpointError, match=rf"{server.url} does not answer GET /models: HTTP 503"):
        engine.start(tiny_spec, SamplingOptions())


def test_which_model(server, tiny_spec):
    sampling = SamplingOptions()
    server.served = ["other", "/models/tiny"]
    engine = _engine(server, ModelSpec(path=Path("/elsewhere/tiny")), sampling)
    assert engine.model_name == "/models/tiny"  # the one named like the model path
    with pytest.raises(EndpointError, match="cannot tell which model.*other, /models/tiny.*option model"):
        _engine(server, tiny_spec, sampling)
    with pytest.raises(EndpointError, match="model 'nope' is not served.*served: other"):
        _engine(server, tiny_spec, sampling, model="nope")
    assert _engine(server, tiny_spec, sampling, model="other").model_name == "other"


# --- options, key, plugin ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options, match",
    [
        ({"bogus": 1}, "bogus"),
        ({"timeout_s": -1}, "timeout_s"),
        ({"max_retries": -1}, "max_retries"),
        ({"concurrency": 0}, "concurrency"),
        ({"base_url": "localhost:8000/v1"}, "base_url.*http"),
        ({"api_key_env": "sk-abc123"}, "api_key_env.*not the key"),
        ({"extra_body": {"stream": True}}, "extra_body.*stream"),
        ({"token_ids": True}, "token_ids = true needs logprobs"),
    ],
)
def test_bad_options_name_the_option(options, match):
    with pytest.raises(ConfigError, match=f"engine 'openai'.*{match}"):
        OpenAIEngine.from_options(options)


def test_the_api_key_comes_from_the_environment_and_is_never_kept(server, tiny_spec, monkeypatch):
    secret = "sk-test-very-secret-123"
    monkeypatch.setenv("TG_TEST_API_KEY", secret)
    server.api_key = secret
    engine = _engine(server, tiny_spec, SamplingOptions(max_tokens=4), api_key_env="TG_TEST_API_KEY")
    (generation,) = engine.generate(CONVERSATIONS[:1])
    assert generation.finish_reason != "error"
    assert all(headers["Authorization"] == f"Bearer {secret}" for _, _, headers, _ in server.requests)
    for shown in (repr(engine), repr(vars(engine)), engine.options.model_dump_json(), repr(engine.options)):
        assert secret not in shown
    monkeypatch.delenv("TG_TEST_API_KEY")
    with pytest.raises(EndpointError, match="HTTP 401.*invalid API key"):
        engine.generate(CONVERSATIONS[:1])


def test_not_trainable_and_registered():
    host = PluginHost(load_entry_points=False)
    assert "openai" in host.names("engine")
    engine = host.create("engine", "openai", {"extra_body": {"top_k": 20}})
    assert isinstance(engine, OpenAIEngine)
    assert engine.trainable is False and OpenAIEngine.trainable is False
    assert engine.unavailable_reason() is None
    assert engine.summary().startswith("Any OpenAI-compatible HTTP endpoint")
    with pytest.raises(NotImplementedError, match="not trainable"):
        engine.load_weights({})


def test_extra_body_reaches_the_server(server, tiny_spec):
    engine = _engine(server, tiny_spec, SamplingOptions(max_tokens=4), extra_body={"top_k": 20})
    engine.generate(CONVERSATIONS[:1])
    assert server.posts()[0]["top_k"] == 20


def test_test_time_scaling_through_an_openai_endpoint(server, tmp_path):
    """`tritongym tts` with the `openai` engine: the served model needs no local [model] directory, every
    turn is evaluated (triton-cpu) and stored, and turn 2's request carries turn 1's evaluation."""
    from tritongym import api
    from tritongym.core.learn.run_config import RunConfig
    from tritongym.core.registry import Registry

    config = RunConfig.model_validate(
        {
            "name": "tts-openai",
            "output_dir": str(tmp_path / "out"),
            "model": {"path": "/served/elsewhere"},
            "engine": {"name": "openai", "options": {"base_url": server.url, "backoff_s": 0}},
            "sampling": {"max_tokens": 6, "seed": 4},
            "interaction": {"max_turns": 2, "assistant_prefill": "```python\n"},
            "rollout": {"problems": ["relu"], "samples": 2},
            "eval": {"backend": "triton-cpu", "trials": 1},
        }
    )
    registry = Registry(tmp_path / "registry.db")
    summary = api.tts(config, registry=registry)
    assert summary.turns == 4 and len(registry.turns(summary.run_id)) == 4
    posts = [body for body in server.posts() if "messages" in body]
    assert len(posts) == 4
    second = [body for body in posts if len(body["messages"]) > 3]
    assert len(second) == 2  # system, task, turn-1 reply, its feedback, the prefill
    assert all(body["messages"][3]["role"] == "user" and body["messages"][3]["content"] for body in second)
