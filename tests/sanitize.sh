#!/usr/bin/env bash
# `make check-sanitize` (docs/RELIABILITY.md "Sanitizers"): the code that
# handles untrusted bytes, threads and shared memory, under ASan and UBSan
# (clang, -O1, in $SANITIZE_BUILD, default build-sanitize):
#   - the store tests (io_uring, the record cache, leases, the arena);
#   - expertd's tests (the fast path, gRPC, TLS, limits) and the transport
#     conformance suite, against an expertd built the same way;
#   - the bit-identity tests (every transport, budget and mode: computed and
#     expertd processes under ASan) and the container mutation test;
#   - every fuzz harness replayed over its committed corpus.
# Any report, a leak included, fails it: -fno-sanitize-recover, halt_on_error.
# TSan is not run: Debian's Abseil and gRPC are not instrumented, so TSan
# cannot see an absl::Mutex (docs/RELIABILITY.md has the measurement).
#
#   tests/sanitize.sh                      build, then run everything above
#   SANITIZE_SCOPE=daemon tests/sanitize.sh  the store, expertd and conformance tests and the
#                                          replays of the daemon's parsers (bank_footer,
#                                          fastpath_frame, grpc_request) and the client's read_chunk only: no computed
#                                          library to build, what .ci/run has time for
#   MUTANTS=N tests/sanitize.sh            mutants per family (default 300; the unsanitized
#                                          suite runs 1000)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${SANITIZE_BUILD:-$ROOT/build-sanitize}
JOBS=${JOBS:-2}
export WARP_MUTANTS=${MUTANTS:-300}

start=$(date +%s)
if [[ ! -f $BUILD/CMakeCache.txt ]]; then
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Sanitize \
    -DCMAKE_C_FLAGS_SANITIZE="-O1 -gline-tables-only" \
    -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -gline-tables-only" \
    -DWARP_SANITIZE=address,undefined \
    -DCMAKE_CXX_FLAGS="-fno-sanitize-recover=all -D_GLIBCXX_ASSERTIONS" >/dev/null
else
  cmake "$BUILD" >/dev/null  # a target added since (a new harness) must be known by name
fi
SCOPE=${SANITIZE_SCOPE:-all}
replays=()
targets=(expertd store_test expertd_test conformance_test)
if [[ $SCOPE == daemon ]]; then
  replays=(bank_footer_replay fastpath_frame_replay grpc_request_replay read_chunk_replay)
else
  for corpus in "$ROOT"/tests/fuzz/corpus/*/; do replays+=("$(basename "$corpus")_replay"); done
  targets+=(computed mutation_test computed_test)
fi
cmake --build "$BUILD" -j"$JOBS" --target "${targets[@]}" "${replays[@]}" >"$BUILD/build.log" 2>&1 || {
  tail -40 "$BUILD/build.log"
  echo "sanitize.sh: the sanitized build failed (log: $BUILD/build.log)" >&2
  exit 1
}
built=$(date +%s)
echo "sanitize.sh: built in $((built - start)) s ($BUILD)"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# The tests find the sanitized computed and expertd here, not the main build's.
export WARP_BIN_DIR=$BUILD/bin

failed=()
run() {  # NAME COMMAND...: the output kept in $BUILD/logs/NAME.log
  local name=$1
  shift
  local t0
  t0=$(date +%s)
  if "$@" >"$BUILD/logs/$name.log" 2>&1; then
    printf '%-28s %5d s  ok\n' "$name" "$(($(date +%s) - t0))"
  else
    printf '%-28s %5d s  FAILED (%s)\n' "$name" "$(($(date +%s) - t0))" "$BUILD/logs/$name.log"
    grep -m5 -E "ERROR: (Address|Leak)Sanitizer|runtime error:|FAILED" "$BUILD/logs/$name.log" || true
    failed+=("$name")
  fi
}
mkdir -p "$BUILD/logs"
run store_test "$BUILD/tests/store_test"
run expertd_test "$BUILD/tests/expertd_test"
run conformance_test "$BUILD/tests/conformance_test"
if [[ $SCOPE != daemon ]]; then
  run bit_identity "$BUILD/tests/computed_test" --gtest_filter='*BitIdentity*'
  run mutation_test "$BUILD/tests/mutation_test"
fi
for replay in "${replays[@]}"; do
  name=${replay%_replay}
  run "fuzz_replay.$name" "$BUILD/fuzz/$replay" "$ROOT/tests/fuzz/corpus/$name"
done
echo "sanitize.sh: $((built - start)) s building, $(($(date +%s) - built)) s running"
if ((${#failed[@]})); then
  echo "sanitize.sh: FAILED: ${failed[*]}" >&2
  exit 1
fi
