# Ember: `make test` and `make demo` set everything up from scratch.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BUILD := build/dev
SITE = $(shell $(PY) -c "import sysconfig; print(sysconfig.get_path('purelib'))")
export CCACHE_BASEDIR := $(CURDIR)

.PHONY: all venv build build-asan mpi jax-venv test test-lit test-python test-asan \
  test-asan-quick fuzz fuzz-opt demo lint clean gpu-bundle gpu-check tpu-records tpu-check

all: build

$(VENV)/.deps: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	touch $@

venv: $(VENV)/.deps

$(BUILD)/build.ninja: $(VENV)/.deps CMakeLists.txt
	$(VENV)/bin/cmake -G Ninja -S . -B $(BUILD) \
	  -DPython3_EXECUTABLE=$(CURDIR)/$(PY) -DPython_EXECUTABLE=$(CURDIR)/$(PY)

build: $(BUILD)/build.ninja
	$(VENV)/bin/ninja -C $(BUILD) -j2
	# Developer install: the pure-Python package from python/, the compiled
	# MLIR package linked in from the build dir.
	ln -sfn $(CURDIR)/$(BUILD)/python_packages/ember/_mlir python/ember/_mlir
	echo "$(CURDIR)/python" > $(SITE)/ember-dev.pth
	# Byte-compile the package as pip would on install (the generated op
	# classes take 0.1 s to compile from source on every first import where
	# PYTHONDONTWRITEBYTECODE keeps Python from caching them). compileall
	# does not follow the python/ember/_mlir link, hence both paths.
	$(PY) -m compileall -q -j 2 python/ember $(BUILD)/python_packages/ember/_mlir >/dev/null

test-lit: build
	$(VENV)/bin/lit -sv $(BUILD)/test

# Multi-process tests (#22): MPICH from Debian's packages, and mpi4py built
# against it (mpi4py's binary wheels look for libmpi.so.12, which Debian's
# MPICH names libmpich.so.12). Without root or apt the MPI tests skip.
MPI4PY := mpi4py==4.1.2
$(VENV)/.mpi: $(VENV)/.deps
	@command -v mpicc >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  { apt-get install -y -q mpich libmpich-dev >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q mpich libmpich-dev >/dev/null 2>&1; }; }; } || \
	  echo "note: MPICH is not installed; the MPI tests will be skipped"
	@if command -v mpicc >/dev/null; then \
	  $(PY) -c "import mpi4py.MPI" 2>/dev/null || \
	  $(PY) -m pip install -q --no-binary mpi4py --force-reinstall $(MPI4PY); \
	  $(PY) -c "import mpi4py.MPI" && touch $@; fi

mpi: $(VENV)/.mpi

# JAX in its own virtual environment (one MLIR per process): the reference
# that the StableHLO cross-checks (#20) run Ember's exported programs with.
# Without network access the install fails and those checks skip.
JAXVENV := build/jaxvenv
# (rich: JAX draws `visualize_sharding` with it, for recording test/data/sharding/visualize.py.)
JAX_PIN := jax==0.10.2 jaxlib==0.10.2 rich==15.0.0
$(JAXVENV)/.deps:
	@{ $(PYTHON) -m venv $(JAXVENV) && $(JAXVENV)/bin/python -m pip install -q $(JAX_PIN) && \
	  touch $@; } || echo "note: JAX is not installed; the StableHLO/XLA cross-checks will be skipped"

jax-venv: $(JAXVENV)/.deps

test-python: build mpi jax-venv
	# The CUDA target's PTX checks need ptxas (requirements.txt installs it).
	EMBER_REQUIRE_PTXAS=1 EMBER_JAX_PYTHON=$(if $(wildcard $(JAXVENV)/.deps),$(CURDIR)/$(JAXVENV)/bin/python,) \
	  $(PY) -m pytest -q -x test/python

test: test-lit test-python

# AddressSanitizer and UndefinedBehaviorSanitizer (#21): Ember's C++ built in
# build/asan (EMBER_SANITIZE), and the lit and Python suites run against it.
# Python is not instrumented, so the ASan runtime is preloaded (with libstdc++,
# whose __cxa_throw ASan must find at start); leaks are not
# reported (Python keeps objects alive at exit by design), and user poisoning
# is off: LLVM's bump allocator poisons its slabs from inline header code,
# which the uninstrumented MLIR libraries then use unpoisoned (false
# reports). `build/asan/pkg` is the package with its compiled part taken
# from build/asan.
ASAN := build/asan
ASAN_ENV = LD_PRELOAD="$$($(CXX) -print-file-name=libasan.so) $$($(CXX) -print-file-name=libstdc++.so)" \
  ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:allow_user_poisoning=0:allocator_may_return_null=1:log_path=$(CURDIR)/$(ASAN)/report \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:log_path=$(CURDIR)/$(ASAN)/report \
  PYTHONPATH=$(CURDIR)/$(ASAN)/pkg
# A report of an error (pytest captures the dying process's stderr) fails
# the target; the out-of-memory tests' failed allocations only warn (with
# allocator_may_return_null, ASan returns NULL as malloc would).
ASAN_REPORT = @if grep -lE "ERROR: |runtime error" $(ASAN)/report.* >/dev/null 2>&1; then \
  cat $(ASAN)/report.*; exit 1; fi
$(ASAN)/build.ninja: $(VENV)/.deps CMakeLists.txt
	$(VENV)/bin/cmake -G Ninja -S . -B $(ASAN) -DEMBER_SANITIZE=ON \
	  -DPython3_EXECUTABLE=$(CURDIR)/$(PY) -DPython_EXECUTABLE=$(CURDIR)/$(PY)

build-asan: $(ASAN)/build.ninja
	$(VENV)/bin/ninja -C $(ASAN) -j2
	rm -rf $(ASAN)/pkg && mkdir -p $(ASAN)/pkg/ember
	for f in python/ember/*; do [ "$$(basename $$f)" = _mlir ] || \
	  ln -s $(CURDIR)/$$f $(ASAN)/pkg/ember/; done
	ln -s $(CURDIR)/$(ASAN)/python_packages/ember/_mlir $(ASAN)/pkg/ember/_mlir

# Everything: the lit suite and the whole Python suite.
test-asan: build-asan mpi jax-venv
	rm -f $(ASAN)/report.*
	$(ASAN_ENV) $(VENV)/bin/lit -sv $(ASAN)/test || { cat $(ASAN)/report.* 2>/dev/null; exit 1; }
	$(ASAN_ENV) EMBER_JAX_PYTHON=$(if $(wildcard $(JAXVENV)/.deps),$(CURDIR)/$(JAXVENV)/bin/python,) \
	  $(PY) -m pytest -q -x -p no:cacheprovider test/python || \
	  { cat $(ASAN)/report.* 2>/dev/null; exit 1; }
	$(ASAN_REPORT)

# A representative part (about 4 minutes after the build): lit, and the
# tests of the runtime (pool, stacks, sort,
# LAPACK, threads, callbacks, refs), autodiff, batching and control flow.
ASAN_QUICK = test_parallel_rows test_sort test_lapack test_threads test_callbacks \
  test_while_ad test_autodiff test_vmap test_cond test_scan_loop test_compilation_cache \
  test_refs
test-asan-quick: build-asan
	rm -f $(ASAN)/report.*
	$(ASAN_ENV) $(VENV)/bin/lit -sv $(ASAN)/test || { cat $(ASAN)/report.* 2>/dev/null; exit 1; }
	$(ASAN_ENV) $(PY) -m pytest -q -x -p no:cacheprovider $(ASAN_QUICK:%=test/python/%.py) || \
	  { cat $(ASAN)/report.* 2>/dev/null; exit 1; }
	$(ASAN_REPORT)

# Coverage-guided fuzzing of ember-opt (#21): libFuzzer drives
# tools/ember-opt-fuzz (parse, verify, then one of eight pipelines) on
# mutations of the lit tests' modules, with Ember's C++ built by clang with
# coverage, ASan and UBSan in build/fuzz. FUZZ_OPT_JOBS processes (libFuzzer's
# fork mode) for FUZZ_OPT_TIME seconds; a crash is written to
# build/fuzz/crashes and the campaign goes on; the target fails when there
# is one. Installs clang-16 and its libFuzzer runtime (Debian's packages)
# when run as root and they are missing.
FUZZ_DIR := build/fuzz
FUZZ_OPT_TIME ?= 600
FUZZ_OPT_JOBS ?= 2
FUZZ_OPT_SEED ?= $(shell date +%s)
$(FUZZ_DIR)/build.ninja: $(VENV)/.deps CMakeLists.txt
	@command -v clang++-16 >/dev/null && [ -n "$$(clang++-16 -print-file-name=libclang_rt.fuzzer-x86_64.a | grep /)" ] || \
	  { [ "$$(id -u)" = 0 ] && apt-get install -y -q clang-16 libclang-rt-16-dev >/dev/null; } || \
	  { echo "fuzz-opt needs clang-16 and libclang-rt-16-dev"; exit 1; }
	CC=clang-16 CXX=clang++-16 $(VENV)/bin/cmake -G Ninja -S . -B $(FUZZ_DIR) -DEMBER_FUZZ=ON \
	  -DEMBER_SANITIZE=ON -DPython3_EXECUTABLE=$(CURDIR)/$(PY) -DPython_EXECUTABLE=$(CURDIR)/$(PY)

fuzz-opt: $(FUZZ_DIR)/build.ninja
	$(VENV)/bin/ninja -C $(FUZZ_DIR) -j2 ember-opt-fuzz
	rm -rf $(FUZZ_DIR)/seeds && mkdir -p $(FUZZ_DIR)/corpus $(FUZZ_DIR)/crashes
	$(PY) tools/fuzz/opt_fuzz_corpus.py --out $(FUZZ_DIR)/seeds --dict $(FUZZ_DIR)/ember.dict
	cd $(FUZZ_DIR) && tools/ember-opt-fuzz/ember-opt-fuzz -fork=$(FUZZ_OPT_JOBS) \
	  -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1 -max_total_time=$(FUZZ_OPT_TIME) \
	  -seed=$(FUZZ_OPT_SEED) -timeout=30 -rss_limit_mb=6000 -max_len=16384 -dict=ember.dict \
	  -artifact_prefix=crashes/ corpus seeds > fuzz.log 2>&1; \
	  grep -E '^#[0-9]+: ' fuzz.log | tail -n 1
	@! ls $(FUZZ_DIR)/crashes | grep . || { echo "crashes in $(FUZZ_DIR)/crashes"; exit 1; }

# C++ in LLVM style (.clang-format) and Python with ruff's rules (pyproject.toml).
CXX_SOURCES = $(shell git ls-files '*.cpp' '*.h')
# A long program-fuzzing campaign (#21): FUZZ_EXAMPLES programs per test,
# a new random seed each run unless FUZZ_SEED is given.
FUZZ_EXAMPLES ?= 5000
FUZZ_SEED ?= $(shell date +%s)
fuzz: build
	EMBER_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) EMBER_FUZZ_SEED=$(FUZZ_SEED) \
	  $(PY) -m pytest -q test/python/test_fuzz_programs.py \
	    test/python/test_sparse.py::test_random_sparse_programs

lint: venv
	$(VENV)/bin/ruff check python test/python test/mpi benchmarks examples tools
	$(VENV)/bin/clang-format --dry-run --Werror $(CXX_SOURCES)

# #17, item 5. `make gpu-bundle` (here, after `make build`) packs Ember's
# compiled libraries, the binding modules' recipe, headers and sources into
# build/gpu-bundle.tar.xz (about 45 MiB: carry it to the GPU machine);
# `make gpu-check` (there, with that machine's python3, no build needed)
# builds the binding modules for its Python, runs the GPU tests and the GPU
# benchmarks beside JAX and writes $$OUT/gpu-report.md (tools/gpu/check.py).
GPU_PYTHON ?= python3
gpu-bundle: build
	$(PY) tools/gpu/bundle.py

gpu-check:
	$(GPU_PYTHON) tools/gpu/check.py

# #19. `make tpu-records` (here, after `make build`) writes Ember's TPU
# lowering of the Pallas TPU programs and its CPU results to build/tpu-check
# (carry it to the TPU machine); `make tpu-check` (there, with the machine's
# JAX: no build needed) compiles Ember's modules with XLA:TPU, runs them
# beside JAX's own lowering and writes $$OUT/tpu-report.md (tools/tpu/tpu_run.py).
TPU_PYTHON ?= python3
tpu-records: build
	$(PY) tools/tpu/ember_record.py --values --bench --whole build/tpu-check

tpu-check:
	$(TPU_PYTHON) tools/tpu/tpu_run.py build/tpu-check --report $${OUT:-build/tpu-check}/tpu-report.md

demo: build
	$(PY) examples/demo.py
	$(PY) examples/train_digits.py

clean:
	rm -rf build python/ember/_mlir
