"""`openai`: rollouts and evaluation from any OpenAI-compatible HTTP endpoint (a hosted model, `vllm serve`).

The engine holds no model: `start` checks that `base_url` answers `GET /models` and picks the served model,
`generate` sends one `POST /chat/completions` per conversation (`concurrency` at a time) and maps the answers
to `Generation`s.  It uses nothing but the standard library (urllib + json).

**Rollouts and evaluation only** (`trainable = False`): the weights live in the server, so the trainer can
neither update them nor rely on them.  Nor are exact token ids needed for that, which is as well, since the
OpenAI API does not return them:

- `token_ids` and `logprobs` are empty unless the server gives ids.  With `logprobs = true` the engine asks
  for per-token log-probs; with `token_ids = true` too it also sends vLLM's `return_tokens_as_token_ids`
  (log-prob tokens then read "token_id:123") and `return_token_ids` (newer vLLM: `prompt_token_ids` and the
  choice's `token_ids` in the answer), and fills `token_ids`, `logprobs` and `prompt_token_ids` from them.
  Log-probs whose tokens are plain text are dropped (a `Generation` pairs every log-prob with an id).
  A server that refuses unknown fields (OpenAI itself) must be used with `token_ids = false`.
- **Assistant prefill**: a conversation whose last message is the assistant's is sent as is, with vLLM's
  `continue_final_message = true` and `add_generation_prompt = false`, and the reply continues that message;
  the returned text is only the new text.  Servers without those fields refuse such a request (an "error").
- **Stops**: `stop` strings are sent; servers drop the matched stop string from the text, so when the server
  says which one matched (vLLM's `stop_reason`) it is put back, as the other engines keep it.  Finish reason
  "length" stays "length", every other reason is "stop".
- **Seeds**: with `sampling.seed`, the n-th request this engine sends after `start` (counting every
  conversation of every call) carries seed + n: the first conversation of the first call has the seed itself,
  every request has its own, and a run repeats where the server honours seeds.
- **Failures**: 429, 5xx, connection errors and timeouts are retried `max_retries` times with exponential
  backoff (and the server's `Retry-After`); a request that still fails, or is refused (another 4xx), or whose
  answer cannot be read, gives `Generation(text="", finish_reason="error")` and a logged warning.  Only when
  every request of a call failed does `generate` raise `EndpointError`, naming the URL and the last cause.
- **API key**: read from the environment variable `api_key_env` at each request and sent as
  `Authorization: Bearer ...` (none when the variable is unset); it is never stored in the options or the
  engine.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import random
import re
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tritongym import hookimpl
from tritongym.core.errors import TritonGymError
from tritongym.core.generation import Generation, Message, ModelSpec, SamplingOptions
from tritongym.core.interfaces import GenerationEngine

log = logging.getLogger(__name__)

_RESERVED_BODY = ("messages", "model", "n", "stream")
_TOKEN_ID = re.compile(r"^token_id:(\d+)$")
_MAX_DELAY_S = 60.0


class EndpointError(TritonGymError):
    """The OpenAI-compatible endpoint could not be reached or refused every request."""


class OpenAIOptions(BaseModel):
    """Which endpoint and model, how long to wait, how often to retry and how many requests run at once."""

    model_config = ConfigDict(extra="forbid")

    base_url: str = Field(
        default="http://localhost:8000/v1", description="the API root, ending in /v1 (vllm serve's default shown)"
    )
    model: str | None = Field(
        default=None,
        description="the served model name; default: the served model named like the model path, or the only one",
    )
    api_key_env: str = Field(
        default="OPENAI_API_KEY", description="name of the environment variable holding the API key (never the key)"
    )
    timeout_s: float = Field(default=300.0, gt=0, description="seconds one HTTP request may take")
    max_retries: int = Field(default=3, ge=0, description="retries of a request after 429, 5xx or no connection")
    backoff_s: float = Field(default=1.0, ge=0, description="first retry delay; doubled at each retry")
    concurrency: int = Field(default=8, ge=1, description="requests in flight at once")
    logprobs: bool = Field(default=False, description="ask for per-token log-probs")
    token_ids: bool = Field(
        default=False, description="with logprobs: ask for token ids as vLLM gives them (return_tokens_as_token_ids)"
    )
    extra_body: dict[str, Any] = Field(
        default_factory=dict, description="more fields for every request body (server-specific: top_k, ...)"
    )

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not re.match(r"^https?://[^/\s]+", value):
            raise ValueError(f"'{value}' is not an http:// or https:// URL (e.g. http://localhost:8000/v1)")
        return value.rstrip("/")

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str) -> str:
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", value):
            raise ValueError("must be the name of an environment variable holding the key, not the key itself")
        return value

    @field_validator("extra_body")
    @classmethod
    def _not_reserved(cls, value: dict[str, Any]) -> dict[str, Any]:
        taken = sorted(set(value) & set(_RESERVED_BODY))
        if taken:
            raise ValueError(f"{', '.join(taken)} cannot be set here (the engine sets them)")
        return value

    @model_validator(mode="after")
    def _ids_need_logprobs(self) -> OpenAIOptions:
        if self.token_ids and not self.logprobs:
            raise ValueError("token_ids = true needs logprobs = true (ids come with the log-probs)")
        return self


class _RequestFailed(Exception):
    """One request failed for good (after any retries); the message says why."""


class OpenAIEngine(GenerationEngine):
    """Any OpenAI-compatible HTTP endpoint (hosted, vllm serve): rollouts and evaluation only, not trainable."""

    name = "openai"
    Options = OpenAIOptions
    trainable = False
    loads_model = False  # the server holds the model; [model] only helps pick its name

    def __init__(self, options: BaseModel | None = None) -> None:
        super().__init__(options)
        self.sampling: SamplingOptions | None = None
        self.model_name: str | None = None
        self._sent = 0  # requests sent since start: the seed offset of the next one
        self._jitter = random.Random()

    def unavailable_reason(self) -> str | None:
        return None  # the standard library is enough

    # --- life cycle ---------------------------------------------------------------------------------------

    def start(self, model: ModelSpec, sampling: SamplingOptions) -> None:
        try:
            answer = self._request("GET", "/models")
        except _RequestFailed as exc:
            raise EndpointError(
                f"engine '{self.name}': the endpoint {self.options.base_url} does not answer GET /models: {exc}; "
                "start the server (e.g. `vllm serve MODEL`) or fix the engine option base_url"
            ) from None
        served = [m["id"] for m in answer.get("data", []) if isinstance(m, dict) and isinstance(m.get("id"), str)]
        self.model_name = self._pick_model(model, served)
        self.sampling = sampling
        self._sent = 0

    def _pick_model(self, spec: ModelSpec, served: list[str]) -> str:
        where = self.options.base_url
        listed = ", ".join(served[:10]) + (", ..." if len(served) > 10 else "")
        if self.options.model is not None:
            if served and self.options.model not in served:
                raise EndpointError(
                    f"engine '{self.name}': model '{self.options.model}' is not served by {where} (served: {listed})"
                )
            return self.options.model
        if spec.path is not None:
            named = [m for m in served if m == str(spec.path) or Path(m).name == spec.path.name]
            if len(named) == 1:
                return named[0]
            if not served:
                return str(spec.path)
        if len(served) == 1:
            return served[0]
        raise EndpointError(
            f"engine '{self.name}': cannot tell which model of {where} to use (served: {listed or 'none'}); "
            "set the engine option model"
        )

    def close(self) -> None:
        self.sampling = None

    # --- generation ---------------------------------------------------------------------------------------

    def generate(self, conversations: list[list[Message]]) -> list[Generation]:
        if self.sampling is None:
            raise RuntimeError(f"engine '{self.name}' is not started: call start(model, sampling) first")
        if not conversations:
            return []
        first = self._sent
        self._sent += len(conversations)
        seeds = [
            None if self.sampling.seed is None else self.sampling.seed + first + i for i in range(len(conversations))
        ]
        with ThreadPoolExecutor(max_workers=min(self.options.concurrency, len(conversations))) as pool:
            results = list(pool.map(self._one, conversations, seeds))
        failures = [cause for _, cause in results if cause is not None]
        if len(failures) == len(results):
            raise EndpointError(
                f"engine '{self.name}': all {len(results)} requests to {self.options.base_url}/chat/completions "
                f"failed; the last: {failures[-1]}"
            )
        return [generation for generation, _ in results]

    def _one(self, conversation: list[Message], seed: int | None) -> tuple[Generation, str | None]:
        try:
            answer = self._request("POST", "/chat/completions", self._body(conversation, seed))
            return _generation(answer, self.sampling.stop), None
        except (_RequestFailed, KeyError, IndexError, TypeError, ValueError) as exc:
            cause = str(exc) if isinstance(exc, _RequestFailed) else f"unreadable answer ({type(exc).__name__}: {exc})"
            log.warning("engine '%s': a request to %s failed: %s", self.name, self.options.base_url, cause)
            return Generation(text="", finish_reason="error"), cause

    def _body(self, conversation: list[Message], seed: int | None) -> dict[str, Any]:
        sampling, options = self.sampling, self.options
        body: dict[str, Any] = {
            "model": self.model_name,
            "messages": [dict(message) for message in conversation],
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
            "n": 1,
        }
        if sampling.stop:
            body["stop"] = list(sampling.stop)
        if seed is not None:
            body["seed"] = seed
        if options.logprobs:
            body["logprobs"] = True
        if options.token_ids:
            body["return_tokens_as_token_ids"] = True
            body["return_token_ids"] = True
        if conversation and conversation[-1].get("role") == "assistant":
            body["continue_final_message"] = True
            body["add_generation_prompt"] = False
        body.update(options.extra_body)
        return body

    # --- HTTP ---------------------------------------------------------------------------------------------

    def _request(self, method: str, path: str, body: dict | None = None) -> dict:
        """The decoded JSON answer; retries what may pass, raises `_RequestFailed` for the rest."""
        url = self.options.base_url + path
        data = None if body is None else json.dumps(body).encode()
        attempts = self.options.max_retries + 1
        for attempt in range(attempts):
            headers = {"Accept": "application/json"}
            if data is not None:
                headers["Content-Type"] = "application/json"
            key = os.environ.get(self.options.api_key_env)
            if key:
                headers["Authorization"] = f"Bearer {key}"
            request = urllib.request.Request(url, data=data, headers=headers, method=method)
            retry_after = None
            try:
                with urllib.request.urlopen(request, timeout=self.options.timeout_s) as response:
                    raw = response.read()
                try:
                    answer = json.loads(raw)
                except ValueError:
                    raise _RequestFailed(f"{method} {url}: the answer is not JSON: {raw[:200]!r}") from None
                if not isinstance(answer, dict):
                    raise _RequestFailed(f"{method} {url}: the answer is not a JSON object")
                return answer
            except urllib.error.HTTPError as exc:
                cause = f"HTTP {exc.code} from {method} {url}{_error_detail(exc)}"
                if exc.code != 429 and exc.code < 500:
                    raise _RequestFailed(cause) from None
                retry_after = _seconds(exc.headers.get("Retry-After") if exc.headers else None)
            except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:  # refused, reset, timeout
                reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
                cause = f"{method} {url}: {type(reason).__name__}: {reason}"
            if attempt + 1 < attempts:
                delay = self.options.backoff_s * 2**attempt * (1 + 0.1 * self._jitter.random())
                time.sleep(min(max(delay, retry_after or 0.0), _MAX_DELAY_S))
        raise _RequestFailed(cause + (f" (after {attempts} attempts)" if attempts > 1 else ""))


def _error_detail(exc: urllib.error.HTTPError) -> str:
    """': message' from an OpenAI-style error body, or its first characters."""
    try:
        raw = exc.read()
    except OSError:
        return ""
    try:
        message = json.loads(raw)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = raw.decode(errors="replace").strip()
    return f": {str(message)[:200]}" if message else ""


def _seconds(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None  # an HTTP date: use the backoff


def _generation(answer: dict, stops: list[str]) -> Generation:
    """The first choice of a chat completion as a `Generation` (ids and log-probs where the server gave ids)."""
    choice = answer["choices"][0]
    text = choice["message"].get("content") or ""
    reason = "length" if choice.get("finish_reason") == "length" else "stop"
    matched = choice.get("stop_reason")
    if reason == "stop" and isinstance(matched, str) and matched in stops and not text.endswith(matched):
        text += matched  # keep the stop string, as the other engines do
    token_ids: list[int] = []
    logprobs: list[float] = []
    entries = (choice.get("logprobs") or {}).get("content") or []
    found = [_TOKEN_ID.match(str(entry.get("token", ""))) for entry in entries]
    if entries and all(found):
        token_ids = [int(match.group(1)) for match in found]
        logprobs = [float(entry["logprob"]) for entry in entries]
    elif isinstance(choice.get("token_ids"), list):
        token_ids = [int(i) for i in choice["token_ids"]]
        if len(entries) == len(token_ids):
            logprobs = [float(entry["logprob"]) for entry in entries]
    prompt_ids = answer.get("prompt_token_ids") or choice.get("prompt_token_ids") or []
    return Generation(
        text=text,
        prompt_token_ids=[int(i) for i in prompt_ids],
        token_ids=token_ids,
        logprobs=logprobs,
        finish_reason=reason,
    )


@hookimpl
def register_engines(register):
    register(OpenAIEngine)
