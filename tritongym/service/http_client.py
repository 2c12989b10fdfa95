"""`Client`: the Python side of `tritongym serve`, for trainers and scripts on other machines.

    from tritongym.service.http_client import Client

    with Client("http://gpu-box:8000", token="...") as service:
        result = service.evaluate(source, problem="relu")         # submit, wait, the EvaluationResult
        tasks = service.submit_many([{"source": s, "problem": "softmax"} for s in group])
        for task in service.wait([t.id for t in tasks]):           # TaskViews, finished
            print(task.result.status if task.result else task.error)
        service.best("relu"), service.leaderboard(), service.health()

`url` and `token` default to $TRITONGYM_SERVICE_URL (else http://127.0.0.1:8000) and
$TRITONGYM_SERVICE_TOKEN.  A full queue (429) or a draining service (503) is retried, honouring
Retry-After, for up to `retry_s` seconds; anything else the service refuses, and a service that cannot
be reached, raise `ServiceError` with the service's own explanation and its HTTP status.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import overload

import httpx

from tritongym.api.results import BestKernel
from tritongym.core.errors import ServiceError
from tritongym.core.models import EvaluationResult
from tritongym.service.protocol import Health, Submission, SubmitResponse, TaskState, TaskView, WaitResponse

URL_ENV = "TRITONGYM_SERVICE_URL"
TOKEN_ENV = "TRITONGYM_SERVICE_TOKEN"
DEFAULT_URL = "http://127.0.0.1:8000"
LONG_POLL_S = 30.0  # how long one wait request holds the connection


class Client:
    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout_s: float = 30.0,
        retry_s: float = 120.0,
    ) -> None:
        self.url = (url or os.environ.get(URL_ENV) or DEFAULT_URL).rstrip("/")
        token = token if token is not None else os.environ.get(TOKEN_ENV) or None
        self.retry_s = retry_s
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        # reads wait for long polls: a wait request may take LONG_POLL_S before the service answers
        timeout = httpx.Timeout(timeout_s, connect=10.0, read=max(timeout_s, LONG_POLL_S + 15.0))
        # TLS only for an https URL: for a plain-HTTP one (a local `serve`, a warm `eval`'s hand-over) no handshake
        # ever happens, and loading the CA bundle for it took 50 ms of every client made
        secure = self.url.lower().startswith("https://")
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout, verify=secure)

    # --- plumbing --------------------------------------------------------------------------------------

    def _request(self, method: str, path: str, **kwargs) -> httpx.Response:
        deadline = time.monotonic() + self.retry_s
        while True:
            try:
                response = self._http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                raise ServiceError(f"cannot reach the tritongym service at {self.url}: {exc}") from None
            if response.status_code in (429, 503):
                wait = _retry_after(response)
                if time.monotonic() + wait <= deadline:
                    time.sleep(wait)
                    continue
            if response.status_code >= 400:
                raise ServiceError(
                    f"the service at {self.url} answered {response.status_code} to {method} {path}: "
                    f"{_detail(response)}",
                    response.status_code,
                )
            return response

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- the service -----------------------------------------------------------------------------------

    def health(self) -> Health:
        return Health.model_validate(self._request("GET", "/health").json())

    def metrics(self) -> str:
        """The Prometheus text of `/metrics`."""
        return self._request("GET", "/metrics").text

    def problems(self) -> list[dict]:
        """The named problems the service serves (name, size, category, description)."""
        return self._request("GET", "/v1/problems").json()

    # --- tasks -----------------------------------------------------------------------------------------

    def submit(
        self,
        source: str,
        problem: str | None = None,
        *,
        problem_source: str | None = None,
        problem_name: str | None = None,
        origin: str = "",
        task_id: str | None = None,
    ) -> TaskView:
        """Queue one candidate against a problem the service serves by name, or against reference code."""
        submission = Submission(
            source=source,
            problem=problem,
            problem_source=problem_source,
            problem_name=problem_name,
            origin=origin,
            task_id=task_id,
        )
        return self.submit_many([submission])[0]

    def submit_many(self, submissions: Sequence[Submission | dict]) -> list[TaskView]:
        """Queue several candidates in one request: all of them or none (a full queue is retried)."""
        items = [s if isinstance(s, Submission) else Submission.model_validate(s) for s in submissions]
        body = {"candidates": [s.model_dump(exclude_none=True) for s in items]}
        return SubmitResponse.model_validate(self._request("POST", "/v1/tasks", json=body).json()).tasks

    def result(self, task_id: str) -> TaskView:
        """A task as it is now (its verdict in `.result` once `.state` is done)."""
        return TaskView.model_validate(self._request("GET", f"/v1/tasks/{task_id}").json())

    @overload
    def wait(self, task_ids: str, timeout_s: float | None = None) -> TaskView: ...
    @overload
    def wait(self, task_ids: Sequence[str], timeout_s: float | None = None) -> list[TaskView]: ...

    def wait(self, task_ids, timeout_s=None):
        """The tasks once every one has finished, or as they are when `timeout_s` runs out (None: no limit)."""
        ids = [task_ids] if isinstance(task_ids, str) else list(task_ids)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            left = LONG_POLL_S if deadline is None else max(0.0, min(LONG_POLL_S, deadline - time.monotonic()))
            answer = self._request("POST", "/v1/tasks/wait", json={"ids": ids, "timeout_s": left})
            waited = WaitResponse.model_validate(answer.json())
            if waited.done or (deadline is not None and time.monotonic() >= deadline):
                return waited.tasks[0] if isinstance(task_ids, str) else waited.tasks

    def evaluate(
        self,
        source: str,
        problem: str | None = None,
        *,
        problem_source: str | None = None,
        problem_name: str | None = None,
        timeout_s: float | None = None,
    ) -> EvaluationResult:
        """Submit one candidate and wait for its verdict (`tritongym eval`, through the service)."""
        task = self.submit(source, problem, problem_source=problem_source, problem_name=problem_name)
        return _verdict(self.wait(task.id, timeout_s))

    def evaluate_many(self, submissions: Sequence[Submission | dict], timeout_s: float | None = None) -> list[TaskView]:
        """Submit several candidates and wait for all of them: finished tasks, in the order given (a task
        that could not be evaluated has `.state` failed and `.error` instead of `.result`)."""
        tasks = self.submit_many(submissions)
        return self.wait([t.id for t in tasks], timeout_s)

    # --- the registry ----------------------------------------------------------------------------------

    def best(self, problem: str, **filters) -> BestKernel | None:
        """The fastest honest kernel the service's registry holds for `problem` (filters as `tritongym best`:
        device, size, backend, precision, by, min_measurements); None if it holds none."""
        try:
            response = self._request("GET", f"/v1/best/{problem}", params=_params(filters))
        except ServiceError as exc:
            if exc.status_code == 404:
                return None
            raise
        return BestKernel.model_validate(response.json())

    def leaderboard(self, problems: Sequence[str] | None = None, **filters) -> list[BestKernel]:
        """The best honest kernel per problem (all problems, or those named)."""
        params = _params(filters)
        if problems:
            params["problem"] = list(problems)
        response = self._request("GET", "/v1/leaderboard", params=params)
        return [BestKernel.model_validate(row) for row in response.json()]


def _verdict(task: TaskView) -> EvaluationResult:
    if task.state == TaskState.failed:
        raise ServiceError(f"task {task.id} could not be evaluated: {task.error}")
    if task.result is None:
        raise ServiceError(f"task {task.id} is still {task.state.value}: wait longer (timeout_s)")
    return task.result


def _params(filters: dict) -> dict:
    return {k: v for k, v in filters.items() if v is not None}


def _retry_after(response: httpx.Response) -> float:
    try:
        return max(0.5, min(60.0, float(response.headers.get("retry-after", "2"))))
    except ValueError:
        return 2.0


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:500] or response.reason_phrase
    detail = body.get("detail") if isinstance(body, dict) else body
    if isinstance(detail, list):  # a validation error: location and message of each problem
        return "; ".join(f"{'.'.join(map(str, d.get('loc', [])))}: {d.get('msg')}" for d in detail)
    return str(detail)
