# Two commands for a fresh machine with Python 3.11: `make demo` and `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow lint pytest lit lit-scripts lit-inputs bench fuzz coverage tiers clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -U "pip>=24" "setuptools>=69" wheel

# Every command here lets Python cache the modules it compiles (in the venv and __pycache__/,
# both ignored by git): with PYTHONDONTWRITEBYTECODE set, as on this workplace's machines,
# each of the hundreds of Python processes the tests start (tools, MPI ranks) compiled xDSL,
# numpy and tp from source again (a tool's start 1.3 -> 2.5 s) and pytest re-rewrote
# hypothesis in each worker.
unexport PYTHONDONTWRITEBYTECODE

# Reinstall only when the project's metadata changes (the install is editable). --no-compile:
# Python compiles a module when it is first imported instead of pip compiling every module of
# every wheel at install (45 -> 19 s here; most of IREE's, matplotlib's, numpy's are never run).
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q --no-compile --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

DEMO := build/demo

# The main job: serve a built-in tiny Qwen3 directory (16 greedy tokens on 4 chips, in this
# process and as 4 MPI ranks, beside the tests' independent numpy transformers); then generate a
# tensor-parallel Qwen3 decode step (outlined: one @layer, called per
# layer), verify it, lower it through the
# whole pipeline (sections, transfers, phases, per-chip programs, the host's relay), certify and
# run every stage (the phased one with in-place caches: storage semantics; the per-chip programs
# also as 4 MPI ranks) and check it against
# the unsharded layer, printing per-layer figures; then one real-dims qwen3-8b layer, checked
# and modelled on 4 sn40l chips in every mode side by side (auto all-reduces).
demo: $(STAMP)
	@mkdir -p $(DEMO)
	$(BIN)/python examples/generate_demo.py $(DEMO)
	$(BIN)/tp-opt examples/megatron_mlp.mlir --tp-verify -o $(DEMO)/megatron_mlp.mlir
	$(BIN)/tp-gen qwen3 --preset tiny --layers 2 --chips 4 --outline -o $(DEMO)/tiny.mlir --manifest $(DEMO)/tiny.json
	$(BIN)/tp-opt $(DEMO)/tiny.mlir --tp-verify -o $(DEMO)/tiny.verified.mlir
	$(BIN)/tp-run $(DEMO)/tiny.verified.mlir --random-weights 0 --random-inputs 1 --position 5 --check
	$(BIN)/tp-opt $(DEMO)/tiny.mlir --tp-verify --tp-relocate --tp-transfers --tp-phase --tp-verify -o $(DEMO)/tiny.phased.mlir
	$(BIN)/tp-run $(DEMO)/tiny.phased.mlir --random-weights 0 --random-inputs 1 --position 5 --check --stats --storage
	$(BIN)/tp-opt $(DEMO)/tiny.phased.mlir --tp-link-points --tp-relay --tp-verify -o $(DEMO)/tiny.relay.mlir
	$(BIN)/tp-run $(DEMO)/tiny.relay.mlir --random-weights 0 --random-inputs 1 --position 5 --check --stats
	$(BIN)/tp-run $(DEMO)/tiny.relay.mlir --mpi 4 --random-weights 0 --random-inputs 1 --position 5 --check --stats
	$(BIN)/tp-run $(DEMO)/tiny.phased.mlir --dry-run --machine sn40l
	$(BIN)/tp-run $(DEMO)/tiny.relay.mlir --dry-run --machine sn40l --report $(DEMO)/tiny.report.json --trace $(DEMO)/tiny.trace.json --timeline $(DEMO)/tiny.timeline.png
	$(BIN)/tp-gen qwen3 --preset qwen3-8b --layers 1 --chips 4 --outline | $(BIN)/tp-opt --tp-verify -o $(DEMO)/qwen3-8b.mlir
	$(BIN)/tp-run $(DEMO)/qwen3-8b.mlir --random-weights 0 --random-inputs 1 --position 100 --check
	$(BIN)/tp-run $(DEMO)/qwen3-8b.mlir --dry-run --machine sn40l --mode all --allreduce auto --report $(DEMO)/qwen3-8b.report.json --trace $(DEMO)/qwen3-8b.trace.json --timeline $(DEMO)/qwen3-8b.timeline.png

lint: $(STAMP)
	$(BIN)/ruff check tp_dialect passes tools tests benchmarks fuzz
	$(BIN)/ruff format --check tp_dialect passes tools tests benchmarks fuzz

# Tests spread over every core (pytest-xdist): the suite is CPU-bound. `make test` runs the
# tests tests/slow.txt does not list; those run every line of tp the whole suite runs (`make
# tiers` measures it). `make test-slow` runs the listed ones; CI runs both.
pytest: $(STAMP)
	$(BIN)/pytest -n auto -m "not slow"

test-slow: $(STAMP) lit-scripts
	$(BIN)/pytest -n auto -m slow

# Lines of tp run per module by the whole suite and by `make test`'s tier, from one coverage run
# of the whole suite that labels every line with the tests that ran it (subprocesses included);
# fails if `make test` misses a line the slow tier runs. To choose the tiers again after adding
# tests, on a quiet machine: `pytest -n auto --junitxml=build/prof/whole.xml` and `pytest -n
# auto -m "not slow" --junitxml=build/prof/fast.xml` (the fast tier alone pays set-up the whole
# suite charges to slow tests), this, then `python tests/tiers.py choose build/tiers/data
# build/prof/whole.xml build/prof/fast.xml` (each test costs the most either report gives).
tiers: $(STAMP)
	rm -rf build/tiers && mkdir -p build/tiers
	COVERAGE_FILE=$(CURDIR)/build/tiers/data $(BIN)/pytest -n auto --cov --cov-report= \
		--cov-context=test --tier-contexts
	@status=0; $(BIN)/python tests/tiers.py check build/tiers/data > build/tiers/report.txt \
		|| status=1; cat build/tiers/report.txt; exit $$status

# Lines run per module by the whole pytest suite (MPI ranks and tools run as subprocesses
# included: coverage's subprocess patch), as build/coverage/report.txt; slower than `pytest`.
coverage: $(STAMP)
	rm -rf build/coverage && mkdir -p build/coverage
	$(BIN)/pytest -n auto --cov --cov-report=
	$(BIN)/coverage report > build/coverage/report.txt
	tail -1 build/coverage/report.txt

# lit runs tp-opt, tp-gen, tp-run and FileCheck in children of one fork server that imported
# them (lit_tests/forkserver.py: ~1 s less per RUN line); `lit-scripts` (in test-slow) runs
# every lit test through the installed scripts instead.
lit: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/lit -sv lit_tests

lit-scripts: $(STAMP)
	TP_LIT_FORK=0 PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/lit -sv lit_tests

# A pass's lit tests feed it alone; what the earlier passes make of a test's source is
# lit_tests/<pass>/Inputs/*.mlir, each naming in its first line the command that made it.
# This target regenerates them all (tests/test_lit_inputs.py fails while one is stale).
lit-inputs: $(STAMP)
	$(BIN)/python lit_tests/regenerate_inputs.py

test: lint pytest lit

# The fuzz harness (python -m fuzz): FUZZ_INPUTS mutated programs, inputs, machine files and
# flags run through tp-opt and tp-run in-process (2 workers, FUZZ_TIMEOUT s per input); fails
# on any internal error or hang, saving a minimised reproducer of each new failure class to
# tests/fuzz_reproducers/ (`make test` runs the campaign's first 50 inputs: tests/test_fuzz_slice.py).
# Then the leak-injection campaign at fifteen times its `make test` size
# (FUZZ_EXAMPLES per mutation kind; 300 -> 5,220 injected programs), so that both fit in
# 15 minutes. Both always run; the target fails if either does.
FUZZ_INPUTS ?= 20000
FUZZ_SEED ?= 0
FUZZ_MINUTES ?= 14
FUZZ_TIMEOUT ?= 5
FUZZ_EXAMPLES ?= 300
fuzz: $(STAMP)
	@status=0; \
	$(BIN)/python -m fuzz --inputs $(FUZZ_INPUTS) --seed $(FUZZ_SEED) --minutes $(FUZZ_MINUTES) \
		--timeout $(FUZZ_TIMEOUT) --json build/fuzz/report.json || status=1; \
	TP_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/pytest -n auto tests/test_leak_injection.py \
		-k injected || status=1; \
	exit $$status

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) build *.egg-info
