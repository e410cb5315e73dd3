#!/usr/bin/env bash
# Builds the llama.cpp test peer: llama.cpp's source from the npm package
# node-llama-cpp (llama/gitRelease.bundle), its CPU library and
# tests/peer/llama_probe.cc (which quantizes too: no llama-quantize, whose
# common library would double the build), in $WARP_PEER_DIR (default build/peer), never in
# the repository. Idempotent: a stamp of the version and flags skips a build
# that is already there. Prints nothing but errors and the first build's steps.
#
# ggml is built for this machine's ISA explicitly, never -march=native, and
# with every AMX option off: AMX instructions fault on these machines.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
peer=${WARP_PEER_DIR:-$root/build/peer}
version=3.22.1
jobs=${JOBS:-2}

isa_flags=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
           -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
has() { grep -qw "$1" /proc/cpuinfo; }
if has avx512f && has avx512bw && has avx512vl && has avx512dq; then
  isa_flags+=(-DGGML_AVX512=ON)
  has avx512_vnni && isa_flags+=(-DGGML_AVX512_VNNI=ON)
  has avx512_bf16 && isa_flags+=(-DGGML_AVX512_BF16=ON)
  has avx512vbmi && isa_flags+=(-DGGML_AVX512_VBMI=ON)
fi
stamp_text="node-llama-cpp $version ${isa_flags[*]} $(sha256sum "$here/llama_probe.cc" "$here/CMakeLists.txt" | cut -c1-16 | tr '\n' ' ')"
# The tools are checked too: a stamp beside broken links (a build dir copied
# from elsewhere) is no build.
if [[ -f "$peer/stamp" && "$(cat "$peer/stamp")" == "$stamp_text" &&
      -x "$peer/bin/llama_probe" ]]; then
  exit 0
fi

echo "tests/peer: building llama.cpp from node-llama-cpp $version in $peer"
mkdir -p "$peer"
if [[ ! -d "$peer/llama.cpp/src" ]]; then
  rm -rf "$peer/package" "$peer/llama.cpp"
  tarball=$(cd "$peer" && npm pack "node-llama-cpp@$version" --silent --loglevel=error | tail -1)
  tar -xzf "$peer/$tarball" -C "$peer" package/llama/gitRelease.bundle package/llama/llama.cpp.info.json
  git -c advice.detachedHead=false clone -q "$peer/package/llama/gitRelease.bundle" "$peer/llama.cpp"
  rm -f "$peer/$tarball"
fi

cmake -S "$here" -B "$peer/build" -DLLAMA_CPP_SOURCE="$peer/llama.cpp" \
  -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF "${isa_flags[@]}" \
  -DGGML_BACKEND_DL=OFF -DGGML_CPU_ALL_VARIANTS=OFF -DGGML_OPENMP=ON \
  -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_TESTS=OFF \
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
  -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF > "$peer/configure.log" 2>&1 ||
  { echo "tests/peer: configuring llama.cpp failed; see $peer/configure.log" >&2; exit 1; }
cmake --build "$peer/build" -j"$jobs" --target llama_probe > "$peer/build.log" 2>&1 ||
  { echo "tests/peer: the llama.cpp build failed; the end of $peer/build.log:" >&2; tail -30 "$peer/build.log" >&2; exit 1; }
mkdir -p "$peer/bin"
for tool in llama_probe; do
  found=$(find "$peer/build" -type f -name "$tool" -perm -u+x | head -1)
  [[ -n "$found" ]] || { echo "tests/peer: $tool was not built (see $peer/build.log)" >&2; exit 1; }
  ln -sfr "$found" "$peer/bin/$tool"  # relative: the peer dir may be moved whole
done
echo "$stamp_text" > "$peer/stamp"
echo "tests/peer: llama.cpp peer ready in $peer/bin"
