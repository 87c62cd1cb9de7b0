# volt-sem: `make demo` runs the demos, `make test` runs every test.
# Both install what they need (toolchains from the registries) on a fresh machine.
# Each language folder owns its own Makefile with `test` and `demo` targets;
# this file only orders them and runs the core crate's checks.

SHELL := /bin/bash
export CARGO_TARGET_DIR ?= $(CURDIR)/target
export CARGO_TERM_COLOR ?= never
LOOM_MAX_PREEMPTIONS ?= 3

.PHONY: install test demo lint test-core test-loom loom-weakenings mutants test-miri test-c test-python test-node test-shm \
        demo-core demo-c demo-python demo-node bench

test: lint test-core test-loom test-miri test-c test-python test-node test-shm

demo: demo-core demo-c demo-python demo-node

lint:
	rustup component add rustfmt clippy >/dev/null 2>&1 || true
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings

test-core:
	cargo test -p volt-sem
	cargo test -p volt-sem --features batch-lock --test batch_lock
	cargo test -p volt-sem --features batch-queue --test api --test waker_contract --test stress

# The named semaphore shared by processes (Linux; spawns real processes and
# kills them with SIGKILL).
test-shm:
	cargo test -p volt-sem-shm

# loom rebuilds everything with --cfg volt_loom: keep it in its own target dir.
test-loom:
	RUSTFLAGS="--cfg volt_loom" LOOM_MAX_PREEMPTIONS=$(LOOM_MAX_PREEMPTIONS) \
	  CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)/loom \
	  cargo test -p volt-sem --release --features batch-lock --test loom --test loom_data --test loom_batch

# Not in `make test` (about 2 min): each ordering the loom models are meant to
# prove, weakened to Relaxed in a copy of the crate, must make its model fail.
loom-weakenings:
	LOOM_MAX_PREEMPTIONS=$(LOOM_MAX_PREEMPTIONS) python3 scripts/loom_weakenings.py

test-miri:
	@bash scripts/miri.sh

# Not in `make test`: mutation testing of the core (docs/testing.md has the
# score and the reasons for each survivor).
mutants:
	bash scripts/mutants.sh

test-c:
	$(MAKE) -C tests test

test-python:
	$(MAKE) -C bindings-python test

test-node:
	$(MAKE) -C bindings-node test

demo-core:
	cargo run -q -p volt-sem --release --example shared_pool

demo-c:
	$(MAKE) -C tests demo

demo-python:
	$(MAKE) -C bindings-python demo

demo-node:
	$(MAKE) -C bindings-node demo

# The C library, header, pkg-config and CMake files for this machine
# (ffi-c/install.sh says what goes where); DESTDIR is honoured.
PREFIX ?= /usr/local
install:
	bash ffi-c/install.sh $(PREFIX)

# Never run in CI: numbers go to docs/benchmarks.md by hand.
bench:
	cargo bench -p volt-sem --bench semaphore -- --save-baseline mutex-queue
	cargo bench -p volt-sem --features batch-lock --bench batch_lock
	cargo bench -p volt-sem --features batch-queue --bench semaphore -- --save-baseline batch-queue \
	  "c_contended|c2_contended|d_handoff|e_mutex"
	python3 scripts/bench_report.py && python3 scripts/bench_report.py locks && \
	  python3 scripts/bench_report.py experiment
