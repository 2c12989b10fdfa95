"""The evaluation service (`tritongym serve`) and its client (`tritongym client`), DESIGN.md §8.

`service.EvaluationService` holds the rules (a bounded queue persisted in the registry, lanes over one
Evaluator, nothing accepted ever lost); `app` is its HTTP face (FastAPI: the native `/v1` API,
KernelGYM's endpoints, `/health`, `/metrics`); `server` runs it under uvicorn; `client.Client` is what
trainers call.  `protocol` holds the JSON bodies both sides share.  FastAPI and uvicorn are imported only
by `app` and `server.serve`, httpx only by `client` (`pip install 'tritongym[serve]'`).

May import: the kernel and every subsystem up to `api`.  Only `cli` imports it.
"""
