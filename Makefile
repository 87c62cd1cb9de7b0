# volt-sem: `make demo` runs the demos, `make test` runs every test.
# Both install what they need (toolchains from the registries) on a fresh machine.
# Each language folder owns its own Makefile with `test` and `demo` targets;
# this file only orders them and runs the core crate's checks.

SHELL := /bin/bash
export CARGO_TARGET_DIR ?= $(CURDIR)/target
export CARGO_TERM_COLOR ?= never
LOOM_MAX_PREEMPTIONS ?= 3

.PHONY: install dist dist-test dist-c dist-test-c test demo lint msrv publish-check test-core test-loom \
        loom-weakenings mutants test-miri test-c test-python test-node test-shm test-redis bench-redis test-readme docs test-docs \
        demo-rust demo-c demo-zig demo-python demo-node bench

test: lint msrv test-core test-loom test-miri test-shm test-redis test-c test-python test-node test-readme test-docs

# `make demo` builds and runs every demo; `make demo-rust` (or -c, -zig, -python,
# -node) one of them, building only what it needs (scripts/demo.sh: a header per
# step, build output in $(CARGO_TARGET_DIR)/demo-logs/, shown only on failure).
DEMOS := rust c zig python node
demo:
	@bash scripts/demo.sh $(DEMOS)

lint:
	rustup component add rustfmt clippy >/dev/null 2>&1 || true
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" cargo doc -q -p volt-sem --no-deps --features tokio

# The published crates build with their declared rust-version (1.79). The
# toolchain comes from rustup; its own target dir keeps the main one intact.
MSRV := 1.79
msrv:
	@rustup toolchain install $(MSRV) --profile minimal >/dev/null 2>&1 || true
	@if ! cargo +$(MSRV) --version >/dev/null 2>&1; then \
	  echo "SKIPPED: MSRV check (Rust $(MSRV) could not be installed on this machine)"; \
	else \
	  CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)/msrv cargo +$(MSRV) check -p volt-sem -p volt-sem-ffi --lib; \
	fi

# Not in `make test` (it packages and builds both crates from scratch, ~1 min):
# what `cargo publish` would check, without uploading.
publish-check:
	cargo publish --dry-run -p volt-sem -p volt-sem-ffi

test-core:
	cargo test -p volt-sem
	cargo test -p volt-sem --features batch-lock --test batch_lock
	cargo test -p volt-sem --features batch-queue --test api --test waker_contract --test stress
	cargo test -p volt-sem --features tokio --test coop --test loud --test tokio_api
	cargo test -p volt-sem --features cache-padded --test footprint --test api
	for e in worker_pool blocking_pool cache; do cargo run -q -p volt-sem --example $$e || exit 1; done

# The named semaphore shared by processes (Linux; spawns real processes and
# kills them with SIGKILL).
test-shm:
	cargo test -p volt-sem-shm

# The semaphore shared through Redis (volt-sem-redis): the tests start their
# own redis-server instances (free loopback ports, temp dirs, no persistence)
# and stop them by pid; Debian's redis-server is installed here if missing.
# Spawns real processes, SIGKILLs and SIGSTOPs them. About 30 s.
test-redis:
	@if ! command -v redis-server >/dev/null 2>&1; then \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server >/dev/null; \
	fi
	cargo test -p volt-sem-redis

# Not in `make test`: volt-sem-redis against its floors (PING, BLPOP wake) on
# a redis-server it starts itself. About 15 s.
bench-redis:
	@if ! command -v redis-server >/dev/null 2>&1; then \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server >/dev/null; \
	fi
	cargo run -q --release -p volt-sem-redis --example redis_bench

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

# Every code block of these Markdown files runs as written, and their relative
# links resolve (scripts/readme_snippets.py; `<!-- snippet: skip (reason) -->`
# before a fence leaves a block out). The blocks
# build the wheel and the Node addon themselves; the C block needs the release
# library first.
SNIPPET_FILES := README.md CONTRIBUTING.md docs/faq.md docs/versioning.md SECURITY.md \
                 bindings-python/README.md bindings-node/README.md

test-readme:
	cargo build -q --release -p volt-sem-ffi
	python3 scripts/readme_snippets.py $(SNIPPET_FILES)

# API references into docs/api/ (gitignored): rustdoc, TypeDoc, pdoc, the C header;
# installs its pinned tools itself. Fails on a rustdoc/TypeDoc warning or a broken link.
docs:
	bash scripts/docs.sh

# `make docs` from scratch must succeed and its index links resolve (scripts/docs.sh
# ends with that check); `api_docs.py check` alone re-checks an existing build.
test-docs: docs

$(addprefix demo-,$(DEMOS)):
	@bash scripts/demo.sh $(@:demo-%=%)

# The C library, header, pkg-config and CMake files for this machine
# (ffi-c/install.sh says what goes where); DESTDIR is honoured.
PREFIX ?= /usr/local
install:
	bash ffi-c/install.sh $(PREFIX)

# Release artifacts, cross-compiled on this machine (scripts/dist/*.sh say for
# which platforms and how each is tested). For now the C library; the npm
# packages and the Python wheels join these targets.
dist: dist-c
dist-test: dist-test-c
dist-c:
	bash scripts/dist/c.sh
dist-test-c: dist-c
	bash scripts/dist/test-c.sh

# Never run in CI: numbers go to docs/benchmarks.md by hand.
bench:
	cargo bench -p volt-sem --bench semaphore -- --save-baseline mutex-queue
	cargo bench -p volt-sem --features batch-lock --bench batch_lock
	cargo bench -p volt-sem --features batch-queue --bench semaphore -- --save-baseline batch-queue \
	  "c_contended|c2_contended|d_handoff|e_mutex"
	python3 scripts/bench_report.py && python3 scripts/bench_report.py locks && \
	  python3 scripts/bench_report.py experiment
