#!/usr/bin/env bash
# WARP against llama.cpp on the same GGUF weights, at the disk's limit: one
# command from a fresh clone. Installs what is missing (fio, the llama.cpp
# peer), builds WARP, writes the model (Kimi K2's expert shape as Q4_0 GGUF,
# 13.0 GB, under a temp dir), converts it, and runs tests/bench/vs_llamacpp.py
# (conditions, table, plot). Needs root (memory cgroups, drop_caches).
#   tests/bench/vs_llamacpp.sh [BUILD_DIR] [OUT_DIR]     # default build, build/vs_llamacpp
#   RUNS=3 WARMUP=1 GEN=8 CONDITIONS=4G,8G,none SHAPE=k2-experts tests/bench/vs_llamacpp.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
out=${2:-$build/vs_llamacpp}
cd "$root"
bash deploy/install-deps.sh --bench
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build "$build" -j"${JOBS:-2}" --target computed fault_bench
WARP_PEER_DIR=$(cd "$build" && pwd)/peer bash tests/peer/install.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/warp-vs-llamacpp.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "writing the ${SHAPE:-k2-experts} model as Q4_0 GGUF in $work"
python3 tests/gguf/make_gguf.py --arch qwen3moe --shape "${SHAPE:-k2-experts}" --type q4_0 \
  --out "$work/model.gguf"
"$build/bin/computed" convert "$work/model.gguf" "$work/model.warp" | tail -1
python3 tests/bench/vs_llamacpp.py --computed "$build/bin/computed" \
  --probe "$build/peer/bin/llama_probe" --gguf "$work/model.gguf" --warp "$work/model.warp" \
  --runs "${RUNS:-3}" --warmup "${WARMUP:-1}" --gen "${GEN:-8}" --conditions "${CONDITIONS:-4G,8G,none}" --out "$out"
echo "table, runs and plot: $out/vs_llamacpp.{md,json,svg}"
