#!/usr/bin/env bash
# The libFuzzer harnesses of tests/fuzz (docs/RELIABILITY.md): builds them
# with clang, ASan and UBSan in $FUZZ_BUILD (default build-fuzz), then runs each.
#
#   tests/bench/fuzz.sh                 each for RUNS inputs (default 1,000,000): the recorded run
#   tests/bench/fuzz.sh --smoke [SECS]  each for SECS seconds (default 5): `make check`
#   tests/bench/fuzz.sh [...] NAME...   only those harnesses
#   MAX_TOTAL_TIME=S tests/bench/fuzz.sh  RUNS inputs or S seconds, whichever ends first
#   FUZZ_NO_BUILD=1 tests/bench/fuzz.sh   the harnesses already built (a long run
#                                         while the tree is being edited)
#
# New inputs go to $FUZZ_BUILD/corpus/NAME, never to the committed seeds
# (tests/fuzz/corpus/NAME); a crash, leak, UB report, an input slower than the
# harness's -timeout or a run over -rss_limit_mb leaves its input in
# $FUZZ_BUILD/artifacts/ and fails the script. Prints a table of harness,
# inputs run, seconds and result.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FUZZ_BUILD=${FUZZ_BUILD:-$ROOT/build-fuzz}
JOBS=${JOBS:-2}
RUNS=${RUNS:-1000000}
SMOKE_SECONDS=""

if [[ ${1:-} == --smoke ]]; then
  shift
  SMOKE_SECONDS=5
  if [[ ${1:-} =~ ^[0-9]+$ ]]; then SMOKE_SECONDS=$1; shift; fi
fi

# name  max_len  timeout_s  rss_limit_mb
# max_len: a few times the largest seed (the GGUF seed is one whole micro model).
# timeout: far above any seed's time; a slower input is a hang to fix. The fuzz build
# renders templates under bounds 50x smaller (computed/chat/interpreter.h): the release
# bound (1,000,000 steps, ~1 s) took up to 58 s under ASan, past a 10 s timeout.
HARNESSES="
bank_footer     8192   10 2048
chat_template   4096   10 2048
fastpath_frame  16384  10 2048
gguf            65536  10 2048
grpc_request    4096   10 2048
manifest        16384  10 2048
model_config    8192   10 2048
read_chunk      8192   10 2048
safetensors     16384  10 2048
tiktoken        16384  10 2048
tokenizer_json  65536  10 2048
"

configure() {
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$FUZZ_BUILD" -DCMAKE_BUILD_TYPE=Fuzz \
    -DCMAKE_CXX_FLAGS_FUZZ="-O1 -gline-tables-only" \
    -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -D_GLIBCXX_ASSERTIONS" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DWARP_BUILD_TESTS=OFF -DWARP_FUZZ=ON >/dev/null
}

if [[ -z ${FUZZ_NO_BUILD:-} ]]; then
  if [[ ! -f $FUZZ_BUILD/CMakeCache.txt ]]; then configure; fi
  build_start=$(date +%s)
  cmake --build "$FUZZ_BUILD" --target warp_fuzz -j"$JOBS" >"$FUZZ_BUILD/build.log" 2>&1 || {
    tail -50 "$FUZZ_BUILD/build.log"
    echo "fuzz.sh: building the harnesses failed (log: $FUZZ_BUILD/build.log)" >&2
    exit 1
  }
  echo "built the harnesses in $(($(date +%s) - build_start)) s ($FUZZ_BUILD)"
fi

mkdir -p "$FUZZ_BUILD/artifacts" "$FUZZ_BUILD/logs"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

printf '%-16s %10s %8s %10s  %s\n' harness runs seconds runs/s result
failed=0
while read -r name max_len timeout rss; do
  [[ -z $name ]] && continue
  if (($# > 0)) && [[ " $* " != *" $name "* ]]; then continue; fi
  work="$FUZZ_BUILD/corpus/$name"
  mkdir -p "$work"
  log="$FUZZ_BUILD/logs/$name.log"
  if [[ -n $SMOKE_SECONDS ]]; then
    limit=(-max_total_time="$SMOKE_SECONDS")
  else
    limit=(-runs="$RUNS")
    if [[ -n ${MAX_TOTAL_TIME:-} ]]; then limit+=(-max_total_time="$MAX_TOTAL_TIME"); fi
  fi
  start=$(date +%s.%N)
  set +e
  "$FUZZ_BUILD/fuzz/${name}_fuzz" "$work" "$ROOT/tests/fuzz/corpus/$name" "${limit[@]}" \
    -max_len="$max_len" -timeout="$timeout" -rss_limit_mb="$rss" -print_final_stats=1 \
    -artifact_prefix="$FUZZ_BUILD/artifacts/$name-" >"$log" 2>&1
  status=$?
  set -e
  seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  runs=${runs:-$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -1)}
  runs=${runs:-0}
  if ((status == 0)); then
    result=ok
  else
    failed=1
    result=$(grep -m1 -oE 'ERROR: libFuzzer: [a-z-]+|ERROR: AddressSanitizer: [a-zA-Z-]+|runtime error: .*|ERROR: LeakSanitizer: [a-z ]+' "$log" || true)
    result="FAILED ${result:-exit $status} (log: $log)"
  fi
  printf '%-16s %10s %8s %10s  %s\n' "$name" "$runs" "$seconds" \
    "$(awk -v r="$runs" -v s="$seconds" 'BEGIN { printf "%.0f", (s > 0 ? r / s : 0) }')" "$result"
done <<<"$HARNESSES"
exit $failed
