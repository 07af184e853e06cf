# Two commands do all set-up on a fresh machine:
#   make reproduce   run all four studies on the default config (embedded local judge)
#   make test        run the test suite
# Both create .venv and install cfbench with the local judge and JupyterLab on first use.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# llama.cpp's CPU kernels are chosen at run time (docs/local_judge.md 3b): GGML_BACKEND_DL=ON builds the CPU
# backend as loadable modules, the portable one (AVX2, FMA, F16C: no -march=native) plus one per level in
# LLAMA_CPU_VARIANTS (x86-64 only; icelake = AVX-512 with VBMI and VNNI; no AMX variant: it dies with an
# illegal instruction on this project's Xeon VM), added by build-aux/llama_build.cmake. cfbench loads the
# best module the running CPU supports (cfbench/judges/llama_cpu.py), so any built wheel runs on any x86-64
# with AVX2. pip caches built wheels whatever CMAKE_ARGS were: a cached llama-cpp-python without exactly
# these modules (built with other flags, e.g. the old portable build or -march=native) fails LLAMA_CHECK
# and is rebuilt once with --no-cache-dir; a build with LLAMA_CMAKE_ARGS given on the command line or in the
# environment never reads or writes pip's cache (LLAMA_PIP_CACHE), so it cannot reach the next install.
LLAMA_VERSION ?= 0.3.36
LLAMA_CPU_VARIANTS ?= $(if $(filter x86_64 amd64,$(shell uname -m)),icelake)
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BACKEND_DL=ON \
	-DCFBENCH_GGML_CPU_VARIANTS=$(LLAMA_CPU_VARIANTS) -DLLAVA_BUILD=OFF \
	-DCMAKE_PROJECT_INCLUDE=$(CURDIR)/build-aux/llama_build.cmake
LLAMA_PIP_CACHE := $(if $(filter file,$(origin LLAMA_CMAKE_ARGS)),,--no-cache-dir)
LLAMA_CHECK = $(BIN)/python -m cfbench.judges.llama_cpu --expect baseline,$(LLAMA_CPU_VARIANTS)
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
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install --quiet $(LLAMA_PIP_CACHE) 'llama-cpp-python==$(LLAMA_VERSION)'
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install --quiet -e '.[local,local-small,api,lab,test,server]'
	$(BIN)/python -m ipykernel install --sys-prefix --name cfbench --display-name "Python (cfbench)"  # the notebooks' kernel
	$(LLAMA_CHECK) --quiet || CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install --quiet --no-cache-dir \
	  --force-reinstall --no-deps 'llama-cpp-python==$(LLAMA_VERSION)'
	$(LLAMA_CHECK)
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
