# The two commands of the README: `make demo` and `make check`. Both install
# what is missing (deploy/install-deps.sh), configure and build first.

BUILD ?= build
JOBS ?= 2
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWARP_WERROR=ON

.PHONY: all deps configure build binaries check check-sanitize demo bench fuzz fuzz-smoke clean

all: build

deps:
	@bash deploy/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) > /dev/null

build: configure
	@cmake --build $(BUILD) -j$(JOBS) --target all warp_benches

# The programs alone (computed, expertd), without the tests, benchmarks and
# libwarp: what `make demo` runs.
binaries: configure
	@cmake --build $(BUILD) -j$(JOBS) --target computed expertd

# Every unit, golden and integration test, through ctest: everything but the
# benchmarks, which no test runs (`make build` builds them too).
check: configure
	@cmake --build $(BUILD) -j$(JOBS)
	@bash tests/npm/install.sh
	@WARP_PEER_DIR=$(abspath $(BUILD))/peer JOBS=$(JOBS) bash tests/peer/install.sh
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)
	@if [ "$(FUZZ)" = 1 ]; then $(MAKE) --no-print-directory fuzz-smoke; fi

# The store, daemon, conformance, bit-identity and mutation tests and the fuzz
# replays under ASan and UBSan (clang, build-sanitize/; tests/sanitize.sh).
# .ci/run calls it after `make check` with SANITIZE_SCOPE=daemon (the store,
# daemon and conformance tests and the daemon parsers' replays: no computed
# library to build; docs/RELIABILITY.md has both scopes' times).
check-sanitize: deps
	@bash deploy/install-deps.sh --fuzz
	@JOBS=$(JOBS) SANITIZE_SCOPE=$(SANITIZE_SCOPE) bash tests/sanitize.sh

# The libFuzzer harnesses of tests/fuzz (clang, ASan, UBSan, in build-fuzz/).
# ctest above replays every harness over its committed corpus; the sanitized
# build costs ~7 min on 2 cores, so `make check` runs the fuzzers themselves
# only with FUZZ=1 (docs/RELIABILITY.md has the figures).
fuzz-smoke:
	@bash deploy/install-deps.sh --fuzz
	@JOBS=$(JOBS) bash tests/bench/fuzz.sh --smoke 5

# The recorded run: 1,000,000 inputs per harness.
fuzz:
	@bash deploy/install-deps.sh --fuzz
	@JOBS=$(JOBS) bash tests/bench/fuzz.sh

# The main job on the embedded default, in a temp dir that is removed after;
# it builds only the two programs it runs (`make check` builds the rest).
demo: binaries
	@bash tests/demo.sh $(BUILD)/bin

bench: build
	@bash tests/bench/run_all.sh $(BUILD)

clean:
	rm -rf $(BUILD) build-sanitize
