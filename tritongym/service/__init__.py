"""The evaluation service (`tritongym serve`) and its HTTP client (`tritongym client`), ARCHITECTURE.md §8.

`service.EvaluationService` holds the rules (a bounded queue persisted in the registry, lanes over one
Evaluator, nothing accepted ever lost); `app` is its HTTP face (FastAPI: the native `/v1` API,
KernelGYM's endpoints, `/health`, `/metrics`); `server` runs it under uvicorn; `http_client.Client` is what
trainers call.  `protocol` holds the JSON bodies both sides share.  FastAPI and uvicorn are imported only
by `app` and `server.serve`, httpx only by `http_client` (`pip install 'tritongym[serve]'`).

A face of tritongym beside `api`, `cli` and `adapters`, not part of the kernel: it may import the kernel,
every subsystem and `tritongym.api` (the result models the client returns come from `api.results`, which
loads no evaluator).  The adapters and the CLI import it; nothing below does.
"""
