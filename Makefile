# Two commands do all set-up on a fresh machine:
#   make reproduce   run all three studies on the default config (embedded local judge)
#   make test        run the test suite
# Both create .venv and install cfbench with the local judge and JupyterLab on first use.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Portable llama.cpp build (no -march=native), so a built wheel runs on any x86-64 with AVX2.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
CONFIG ?= default

.PHONY: install reproduce test smoke lab benchmarks clean-venv

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip wheel
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install --quiet -e '.[local,local-small,api,lab,test]'
	$(BIN)/python -m ipykernel install --sys-prefix --name cfbench --display-name "Python (cfbench)"
	$(BIN)/cfbench model install
	touch $@

install: $(VENV)/.installed

reproduce: $(VENV)/.installed
	$(BIN)/cfbench reproduce --config $(CONFIG)

smoke: $(VENV)/.installed
	$(BIN)/cfbench reproduce --config smoke --results /tmp/cfbench-smoke

test: $(VENV)/.installed
	$(BIN)/python -m pytest -q

lab: $(VENV)/.installed
	$(BIN)/jupyter lab notebooks/

benchmarks: $(VENV)/.installed
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean-venv:
	rm -rf $(VENV)
