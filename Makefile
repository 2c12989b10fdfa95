# Two entry points: `make demo` (set up, evaluate the bundled suite, show the best kernel) and `make test`.
# Both create .venv on first use and install what is missing: torch first (TORCH_SPEC; the default is the
# CPU build pinned in DEVELOPERS.md; `make TORCH_SPEC=torch demo` takes PyPI's build), then tritongym.

PYTHON ?= python3
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
BIN := $(VENV)/bin
STAMP := $(VENV)/.tritongym-installed

.PHONY: demo test lint clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/tritongym run
	$(BIN)/tritongym best softmax

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check tritongym tests benchmarks
	$(BIN)/ruff format --check tritongym tests benchmarks

clean:
	rm -rf $(VENV) registry.db registry.db-wal registry.db-shm
