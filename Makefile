# Two commands do all set-up on a fresh machine:
#   make reproduce   run all four studies on the default config (embedded local judge)
#   make test        run the test suite
# Both create .venv and install cfbench with the local judge and JupyterLab on first use.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Portable llama.cpp build (no -march=native), so a built wheel runs on any x86-64 with AVX2.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
CONFIG ?= default
# Data from elsewhere (never committed): the seed-002 workbook for the identity-tone reproduction of the
# released data. Default: ../shared beside this checkout; `make reproduce SHARED=/path/to/shared` or
# CFBENCH_AMIRI_PATH=/path/to/amiri2026 point elsewhere.
SHARED ?= ../shared
AMIRI_DIR := $(if $(CFBENCH_AMIRI_PATH),$(CFBENCH_AMIRI_PATH),$(abspath $(SHARED))/data/amiri2026)

.PHONY: install reproduce test smoke lab benchmarks clean-venv

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip wheel
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install --quiet -e '.[local,local-small,api,lab,test,server]'
	$(BIN)/python -m ipykernel install --sys-prefix --name cfbench --display-name "Python (cfbench)"  # the notebooks' kernel
	$(BIN)/cfbench model install
	touch $@

install: $(VENV)/.installed

reproduce: $(VENV)/.installed
	@test -e "$(AMIRI_DIR)" || echo "make reproduce: no released seed-002 workbook at $(AMIRI_DIR): put Sample_Data_Paper.numbers in ../shared/data/amiri2026/ beside this checkout (or pass SHARED=DIR or CFBENCH_AMIRI_PATH=DIR); identity_tone will skip the released-data reproduction and say so"
	CFBENCH_AMIRI_PATH="$(AMIRI_DIR)" $(BIN)/cfbench reproduce --config $(CONFIG)

smoke: $(VENV)/.installed
	CFBENCH_AMIRI_PATH="$(AMIRI_DIR)" $(BIN)/cfbench reproduce --config smoke --results /tmp/cfbench-smoke

test: $(VENV)/.installed
	$(BIN)/python -m pytest -q

lab: $(VENV)/.installed
	$(BIN)/jupyter lab notebooks/

benchmarks: $(VENV)/.installed
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean-venv:
	rm -rf $(VENV)
