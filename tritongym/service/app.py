"""The HTTP face of the service (FastAPI): the native `/v1` API, KernelGYM's endpoints, `/health`, `/metrics`.

Every request passes `Guard` first, before any route or body parsing: the bearer token (401 without one,
403 with a wrong one) and the request size (413, judged from Content-Length when there is one and by
counting otherwise, so an oversized body is never held in full).  Routes only translate: the rules live
in `EvaluationService`.

Native API (JSON bodies are the models of `protocol.py`):

    POST /v1/tasks                 {"candidates": [Submission, ...]}  -> 202 SubmitResponse (429 when full)
    GET  /v1/tasks/{id}            -> TaskView
    GET  /v1/tasks/{id}/wait       ?timeout_s=30  -> TaskView once finished, or as it is at the timeout
    POST /v1/tasks/wait            {"ids": [...], "timeout_s": 30}  -> WaitResponse
    GET  /v1/problems              -> the named problems served
    GET  /v1/best/{problem}        ?device&size&backend&precision&by&min_measurements  -> BestKernel (404: none)
    GET  /v1/leaderboard           ?problem=a&problem=b&...  -> [BestKernel]
    GET  /health, GET /metrics (Prometheus text)

KernelGYM's: POST /evaluate, GET /status/{task_id}, GET /results/{task_id}, and /health's fields (see
`kernelgym.py`).

A request that fails validation gets 422 with the errors' location, message and type, never the input
itself: an input JSON cannot carry back (NaN, a lone surrogate) must not turn a 422 into a 500.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import math
import time
from collections.abc import Callable
from contextlib import asynccontextmanager
from typing import Annotated

from fastapi import Body, FastAPI, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from tritongym import api
from tritongym.core.errors import TritonGymError
from tritongym.service import kernelgym
from tritongym.service.metrics import CONTENT_TYPE
from tritongym.service.protocol import (
    Submission,
    SubmitRequest,
    SubmitResponse,
    TaskState,
    TaskView,
    WaitRequest,
    WaitResponse,
)
from tritongym.service.service import (
    EvaluationService,
    Prepared,
    QueueFull,
    ServiceStopping,
    SubmissionError,
)

RECHECK_S = 1.0  # a wait checks its tasks at least this often, besides every time one finishes


class Guard:
    """ASGI middleware: the bearer token, then the body size, before anything reads the request."""

    def __init__(self, app, token: str | None, max_bytes: int, service: EvaluationService) -> None:
        self.app = app
        self.token = token.encode() if token else None
        self.max_bytes = max_bytes
        self.service = service

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        if self.token is not None:
            given = headers.get(b"authorization")
            if given is None:
                self.service.metrics.count_rejected("unauthenticated")
                await _refuse(
                    send,
                    401,
                    "this service needs a bearer token: send 'Authorization: Bearer <token>'",
                    [(b"www-authenticate", b"Bearer")],
                )
                return
            scheme, _, value = given.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(value.strip(), self.token):
                self.service.metrics.count_rejected("forbidden")
                await _refuse(send, 403, "the bearer token is wrong")
                return
        declared = headers.get(b"content-length")
        if (
            declared is not None and declared.isdigit() and int(declared) > self.max_bytes
        ):  # h11 rejects a malformed one
            await self._too_large(send)
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._too_large(send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, send) -> None:
        self.service.metrics.count_rejected("too_large")
        await _refuse(send, 413, f"the request body is larger than the service's limit of {self.max_bytes} bytes")


async def _refuse(send, status: int, detail: str, extra: list[tuple[bytes, bytes]] = ()) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def create_app(
    service: EvaluationService,
    *,
    token: str | None,
    max_request_bytes: int = 8 << 20,
    max_batch: int = 256,
    drain_s: float = 60.0,
) -> FastAPI:
    """The ASGI application: `Guard` around the FastAPI routes over `service`, whose lifespan starts the lanes
    and drains them at shutdown."""

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await run_in_threadpool(service.start)
        yield
        # after a drain (server.py) this answers at once; a second signal during one does not wait again
        await run_in_threadpool(service.stop, 0.0 if service.stopping else drain_s)

    app = FastAPI(
        title="tritongym evaluation service",
        summary="Sandboxed, registry-backed evaluation of Triton kernels",
        lifespan=lifespan,
    )

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        errors = [{k: e.get(k) for k in ("loc", "msg", "type")} for e in exc.errors()]
        return JSONResponse({"detail": errors}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def refused(request: Request, exc: StarletteHTTPException):
        """As FastAPI's own handler, but a detail quoting the request (a name with a lone surrogate) still renders."""
        detail = exc.detail.encode("utf-8", "backslashreplace").decode() if isinstance(exc.detail, str) else exc.detail
        return JSONResponse({"detail": detail}, status_code=exc.status_code, headers=exc.headers)

    def _submit(items: list[Prepared]) -> list[TaskView]:
        try:
            return service.submit(items)
        except QueueFull as exc:
            raise HTTPException(429, str(exc), headers={"Retry-After": str(_retry_after(service, exc))}) from None
        except ServiceStopping as exc:
            raise HTTPException(503, str(exc), headers={"Retry-After": "5"}) from None

    def _prepare(submission: Submission, index: int | None = None) -> Prepared:
        try:
            return service.prepare(submission)
        except SubmissionError as exc:
            service.metrics.count_rejected("too_large" if exc.status_code == 413 else "invalid")
            where = "" if index is None else f"candidate {index}: "
            raise HTTPException(exc.status_code, where + str(exc)) from None

    def _task(task_id: str) -> TaskView:
        view = service.view(task_id)
        if view is None:
            raise HTTPException(404, f"no task '{task_id}' here")
        return view

    async def _until(done: Callable[[], bool], timeout_s: float) -> bool:
        """Whether `done()` held within `timeout_s`: checked again whenever a task finishes or the service begins
        to stop (`EvaluationService.on_change`), and at least every `RECHECK_S`; no poll in between (a poll every
        50 ms made each answer wait 25 ms on average after its task had finished)."""
        loop = asyncio.get_running_loop()
        changed = asyncio.Event()
        stop_watching = service.on_change(lambda: loop.call_soon_threadsafe(changed.set))
        try:
            deadline = time.monotonic() + timeout_s
            while True:
                changed.clear()
                if done():
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                try:
                    await asyncio.wait_for(changed.wait(), min(left, RECHECK_S))
                except TimeoutError:
                    pass
        finally:
            stop_watching()

    async def _wait(task_ids: list[str], timeout_s: float) -> bool:
        return await _until(lambda: service.all_finished(task_ids), timeout_s)

    # --- native API ------------------------------------------------------------------------------------

    @app.get("/health")
    def health():
        """200 with status 'healthy'; 503 with status 'stopping' while the service drains."""
        body = service.health()
        return JSONResponse(body.model_dump(mode="json"), status_code=503 if body.status == "stopping" else 200)

    @app.get("/metrics", response_class=PlainTextResponse)
    def metrics():
        return Response(service.render_metrics(), media_type=CONTENT_TYPE)

    @app.get("/v1/problems")
    def problems():
        return [
            {"name": p.name, "size": p.size, "category": p.category, "description": p.description}
            for p in service.problems.values()
        ]

    @app.post("/v1/tasks", status_code=202, response_model=SubmitResponse)
    def submit(request: SubmitRequest):
        if len(request.candidates) > max_batch:
            service.metrics.count_rejected("too_large")
            raise HTTPException(413, f"{len(request.candidates)} candidates in one request; at most {max_batch}")
        items = [_prepare(s, i) for i, s in enumerate(request.candidates)]
        return SubmitResponse(tasks=_submit(items))

    @app.get("/v1/tasks/{task_id}", response_model=TaskView)
    def task(task_id: str):
        return _task(task_id)

    @app.get("/v1/tasks/{task_id}/wait", response_model=TaskView)
    async def wait_one(task_id: str, timeout_s: Annotated[float, Query(ge=0, le=300, allow_inf_nan=False)] = 30.0):
        await run_in_threadpool(_task, task_id)
        await _wait([task_id], timeout_s)
        return await run_in_threadpool(_task, task_id)

    @app.post("/v1/tasks/wait", response_model=WaitResponse)
    async def wait_many(request: WaitRequest):
        ids = list(dict.fromkeys(request.ids))
        known = await run_in_threadpool(service.views, ids)
        missing = [i for i in ids if i not in known]
        if missing:
            raise HTTPException(404, f"no task(s) {', '.join(missing[:10])} here")
        done = await _wait(ids, request.timeout_s)
        views = await run_in_threadpool(service.views, ids)
        return WaitResponse(done=done, tasks=[views[i] for i in request.ids])

    @app.get("/v1/best/{problem:path}")
    def best(
        problem: str,
        device: str | None = None,
        size: str | None = None,
        backend: str | None = None,
        precision: str | None = None,
        by: str = "runtime",
        min_measurements: int | None = None,
    ):
        filters = dict(backend=backend, precision=precision, by=by, min_measurements=min_measurements)
        found = _read(service, lambda reg: api.best(problem, device, size, reg, **filters))
        if found is None:
            raise HTTPException(404, f"no honest, correct kernel stored for '{problem}' under these filters")
        return found

    @app.get("/v1/leaderboard")
    def leaderboard(
        problem: Annotated[list[str] | None, Query()] = None,
        device: str | None = None,
        size: str | None = None,
        backend: str | None = None,
        precision: str | None = None,
        by: str = "runtime",
        min_measurements: int | None = None,
    ):
        filters = dict(backend=backend, precision=precision, by=by, min_measurements=min_measurements)
        return _read(service, lambda reg: api.leaderboard(problem or None, device, size, reg, **filters))

    # --- KernelGYM's API -------------------------------------------------------------------------------

    def _kernelgym_submit(request: kernelgym.KernelGymRequest) -> TaskView:
        why = kernelgym.refusal(request)
        if why is not None:
            service.metrics.count_rejected("invalid")
            raise HTTPException(422, why)
        if request.force_refresh:
            service.forget(request.task_id)
        submission = Submission(
            source=request.kernel_code,
            problem_source=request.reference_code,
            problem_name=request.problem_name(),
            origin=f"kernelgym:{request.task_id}",
            task_id=request.task_id,
        )
        item = _prepare(submission)
        item.api = "kernelgym"
        item.request = {**request.echoed(), "applied": service.applied(request.num_correct_trials, request.timeout)}
        return _submit([item])[0]

    @app.post("/evaluate")
    async def kernelgym_evaluate(request: Annotated[kernelgym.KernelGymRequest, Body()]):
        """KernelGYM's: answered once the task has finished, with its result.  A task still queued when the
        service begins to stop is answered as it is (pending): it runs after the restart."""
        task_id = (await run_in_threadpool(_kernelgym_submit, request)).id

        def answerable() -> bool:  # in memory, as `_wait`: no registry read per check
            finished = service.all_finished([task_id])
            return finished or (service.stopping and service.view(task_id).state == TaskState.queued)

        while not await _until(answerable, RECHECK_S):
            pass
        view = await run_in_threadpool(_task, task_id)
        return kernelgym.evaluation_response(view, await run_in_threadpool(service.request_of, task_id) or {})

    @app.get("/status/{task_id}")
    def kernelgym_status(task_id: str):
        return kernelgym.status_response(_task(task_id))

    @app.get("/results/{task_id}")
    def kernelgym_results(task_id: str):
        """KernelGYM's: the result of a finished task; 404 while it has none yet (as KernelGYM answers)."""
        view = _task(task_id)
        if not view.finished:
            raise HTTPException(404, f"task '{task_id}' has no result yet: it is {kernelgym.status_of(view)}")
        return kernelgym.evaluation_response(view, service.request_of(task_id) or {})

    return Guard(app, token, max_request_bytes, service)


def _read(service: EvaluationService, query):
    """Run a registry query on the request side's connection, mapping a bad filter to HTTP 422."""
    try:
        return service.read(query)
    except TritonGymError as exc:
        raise HTTPException(422, str(exc)) from None


def _retry_after(service: EvaluationService, full: QueueFull) -> int:
    """Seconds until enough tasks should have finished for this submission to fit, from the recent rate."""
    rate = service.metrics.per_second()
    excess = full.active + full.asked - full.capacity
    if rate <= 0:
        return 5
    return max(1, min(300, math.ceil(excess / rate)))
