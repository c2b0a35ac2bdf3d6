# The whole set-up on a fresh machine is one of two commands:
#   make run    - create .venv if needed, install, open the app
#   make test   - create .venv if needed, install, run the whole test suite
# Both are idempotent and quick on a second run (the install is redone only when
# pyproject.toml or setup.py change).
#
# torch is installed first so everything else resolves against it. The default is the CPU build
# pinned below; for another build, e.g. CUDA 12.6:
#   make run TORCH_SPEC='torch==2.13.0' TORCH_INDEX=https://download.pytorch.org/whl/cu126
PYTHON ?= python3
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
TORCH_INDEX ?=
PYTEST_ARGS ?=
# both cores (or all of them): the suite's halves are independent
PYTEST_WORKERS ?= auto

BIN := $(VENV)/bin
STAMP := $(VENV)/.inferview-installed

.PHONY: run test test-fast lint bench gpu-check clean-venv

$(STAMP): pyproject.toml setup.py
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_SPEC)" $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

run: $(STAMP)
	$(BIN)/inferview

test: $(STAMP)
	@bash .ci/system-packages
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) $(PYTEST_ARGS)

# the edit loop: the unit tests only (content, grading rules, references, store), under 2 minutes
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) tests/unit $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/inferview lint

bench: $(STAMP)
	$(BIN)/inferview bench

# On a machine with a CUDA GPU (and a CUDA build of torch): the CUDA-only tests, then the benchmark.
gpu-check: $(STAMP)
	$(BIN)/python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA GPU visible to torch')"
	$(BIN)/python -m pytest -q -m cuda $(PYTEST_ARGS)
	$(BIN)/inferview bench

clean-venv:
	rm -rf $(VENV)
