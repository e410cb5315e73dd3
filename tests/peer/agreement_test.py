#!/usr/bin/env python3
"""WARP against llama.cpp on the same GGUF files (issue 13, part 2).

For each architecture: a tiny random model written as F32 GGUF by
tests/gguf/make_gguf.py, and copies of it that llama.cpp's own quantizer
(llama_model_quantize, as llama-quantize calls it: llama_probe quantize) makes at each quantized type (--pure: every matrix in that type). WARP
converts each file as it is and, with `--activations f32` (its default rounds
activations to 8 bits for 4-bit weights, as llama.cpp does), computes in f32
from the dequantized blocks, so its target is llama.cpp run on an F32 copy of the dequantized weights
(llama_probe dequantize: ggml's own dequantizer), not llama.cpp on the
quantized file, which rounds activations to Q8 before its dot products:

  - every prompt position's logits within 1e-4 of the target, same argmax;
  - the greedy continuation identical;
  - against llama.cpp on the quantized file itself: mean KL and top-1
    agreement, printed (the gap WARP's f32 path has by design);
  - WARP's default path where it differs (8-bit activations for 4-bit
    blocks: Q4_0, MXFP4_MOE): its mean KL and top-1 against the exact result
    (llama.cpp on the F32 twin) no worse than llama.cpp's own quantized path
    against the same, within Q8_KL_FACTOR and Q8_TOP1_SLACK.

A missing peer or binary fails the test: run tests/peer/install.sh (make check does).

  agreement_test.py --computed BUILD/bin/computed --peer BUILD/peer/bin [--keep DIR]
"""

import argparse
import array
import math
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_GGUF = os.path.join(HERE, "..", "gguf", "make_gguf.py")
TOLERANCE = 1e-4
PROMPT = [5, 77, 260, 13, 300, 42, 8, 191, 64, 250, 3, 120]
GREEDY = 8
# The quantized copies: llama-quantize's name of the type, and whether every matrix
# is that type (--pure) or only the experts (MXFP4_MOE).
# The types whose dots WARP's default rounds activations to 8 bits for
# (--activations q8): 4-bit blocks.
EIGHT_BIT_DOTS = {"Q4_0", "MXFP4_MOE"}
QUANTS = [("Q8_0", True), ("Q4_0", True), ("MXFP4_MOE", False), ("Q4_K", True), ("Q6_K", True),
          ("Q5_K", True), ("Q5_0", True), ("Q5_1", True), ("Q4_1", True), ("Q3_K", True),
          ("Q2_K", True), ("Q4_K_S", False), ("Q5_K_S", False), ("Q4_K_M", False)]
ARCHITECTURES = ["qwen3moe", "llama", "glm4moe", "deepseek2", "gpt-oss"]
# WARP-q8 and llama.cpp's quantized path both round the activations of a
# 4-bit dot to Q8_0 blocks, with their own rounding and summation order, so
# against the exact result they are two samples of the same noise. Measured
# (5 architectures, 12 positions; KL(exact || WARP-q8) / KL(exact || llama.cpp)):
# Q4_0 0.86-1.16; MXFP4_MOE 0.16-0.51 (there llama.cpp also rounds the
# activations of its Q8_0 attention, WARP only those of the MXFP4 experts).
# Top-1 over 12 positions of a random tiny model turns on near-ties: WARP-q8
# was at most 1 position below llama.cpp (deepseek2 Q4_0, gpt-oss MXFP4_MOE
# 11/12 against 12/12, each at a position whose exact top-2 margin is 0.012,
# about the size of the Q8 rounding). The margins: 25 % on the KL (above the 1.16 measured)
# and 1 position of top-1.
Q8_KL_FACTOR = 1.25
Q8_TOP1_SLACK = 1


def run(cmd, **kwargs):
    result = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}\n{result.stdout}\n{result.stderr}")
    return result.stdout


def read_logits(path, positions):
    values = array.array("f")
    with open(path, "rb") as f:
        values.frombytes(f.read())
    vocab = len(values) // positions
    assert vocab * positions == len(values), path
    return [values[i * vocab:(i + 1) * vocab] for i in range(positions)]


def argmax(row):
    return max(range(len(row)), key=row.__getitem__)


def log_softmax(row):
    top = max(row)
    total = math.log(sum(math.exp(v - top) for v in row))
    return [v - top - total for v in row]


def mean_kl(p_rows, q_rows):
    """Mean over positions of KL(p || q), p and q given as logits."""
    kl = 0.0
    for p, q in zip(p_rows, q_rows):
        lp, lq = log_softmax(p), log_softmax(q)
        kl += sum(math.exp(a) * (a - b) for a, b in zip(lp, lq))
    return kl / len(p_rows)


class Tools:
    def __init__(self, computed, peer):
        self.computed = computed
        self.probe = os.path.join(peer, "llama_probe")
        for tool in (self.computed, self.probe):
            if not os.access(tool, os.X_OK):
                sys.exit(f"FAILED: {tool} is missing: run tests/peer/install.sh (make check does)")

    def warp_logits(self, gguf, activations="f32"):
        warp = gguf[:-5] + ".warp"
        if not os.path.isdir(warp):
            run([self.computed, "convert", gguf, warp])
        out = f"{warp}.{activations}.logits"
        ids = ",".join(map(str, PROMPT))
        greedy = run([self.computed, "logits", warp, "--tokens", ids, "--out", out,
                      "--greedy", str(GREEDY), "--activations", activations]).strip()
        return read_logits(out, len(PROMPT)), greedy

    def llama_logits(self, gguf):
        out = gguf + ".llama.logits"
        ids = ",".join(map(str, PROMPT))
        run([self.probe, "logits", gguf, "--tokens", ids, "--out", out])
        bench = run([self.probe, "bench", gguf, "--tokens", ids, "--gen", str(GREEDY),
                     "--f32-kv"])
        greedy = bench.strip().splitlines()[-1]
        return read_logits(out, len(PROMPT)), greedy


def compare(name, warp, target):
    worst, where = 0.0, None
    for pos, (w, t) in enumerate(zip(warp, target)):
        for i, (a, b) in enumerate(zip(w, t)):
            if not abs(a - b) <= worst:
                worst, where = abs(a - b), (pos, i)
        if argmax(w) != argmax(t):
            return f"{name}: argmax differs at position {pos}: WARP {argmax(w)}, llama.cpp {argmax(t)}"
    if not worst <= TOLERANCE:
        return f"{name}: max |logit difference| {worst:.3g} at (position, id) {where} > {TOLERANCE}"
    print(f"  {name}: max |logit difference| {worst:.3g}, argmax identical at {len(warp)} positions")
    return None


def top1(a_rows, b_rows):
    return sum(argmax(a) == argmax(b) for a, b in zip(a_rows, b_rows))


def check_default_path(name, q8, native, exact):
    """WARP's default 8-bit activations against the exact result, no worse than
    llama.cpp's quantized path against it (Q8_KL_FACTOR, Q8_TOP1_SLACK)."""
    kl_warp, kl_llama = mean_kl(exact, q8), mean_kl(exact, native)
    top_warp, top_llama = top1(q8, exact), top1(native, exact)
    print(f"  {name} against the exact result: WARP-q8 mean KL {kl_warp:.3g}, top-1 "
          f"{top_warp}/{len(exact)}; llama.cpp's quantized path mean KL {kl_llama:.3g}, top-1 "
          f"{top_llama}/{len(exact)}")
    if not kl_warp <= Q8_KL_FACTOR * kl_llama:
        return (f"{name}: WARP-q8 mean KL to the exact result {kl_warp:.3g} > {Q8_KL_FACTOR} x "
                f"llama.cpp's quantized path's {kl_llama:.3g}")
    if top_warp < top_llama - Q8_TOP1_SLACK:
        return (f"{name}: WARP-q8 top-1 against the exact result {top_warp}/{len(exact)} < "
                f"llama.cpp's quantized path's {top_llama} - {Q8_TOP1_SLACK}")
    return None


def check_architecture(tools, arch, work):
    failures = []
    f32 = os.path.join(work, f"{arch}-f32.gguf")
    run([sys.executable, MAKE_GGUF, "--arch", arch, "--shape", "tiny", "--out", f32])
    files = [("F32", f32, f32)]
    for quant, pure in QUANTS:
        quantized = os.path.join(work, f"{arch}-{quant.lower()}.gguf")
        run([tools.probe, "quantize", f32, quantized, quant] + (["--pure"] if pure else []))
        dequantized = quantized[:-5] + "-dequantized.gguf"
        run([tools.probe, "dequantize", quantized, dequantized])
        files.append((quant, quantized, dequantized))
    for quant, path, target_path in files:
        name = f"{arch} {quant}"
        warp, warp_greedy = tools.warp_logits(path)
        target, target_greedy = tools.llama_logits(target_path)
        problem = compare(name, warp, target)
        if problem is None and warp_greedy != target_greedy:
            problem = f"{name}: greedy tokens differ: WARP {warp_greedy}, llama.cpp {target_greedy}"
        if problem:
            failures.append(problem)
            print("  FAIL " + problem)
        else:
            print(f"  {name}: greedy {GREEDY} tokens identical ({warp_greedy})")
        if path != target_path:
            native, _ = tools.llama_logits(path)
            print(f"  {name} vs llama.cpp on the quantized file (Q8 activations): mean KL "
                  f"{mean_kl(native, warp):.3g}, top-1 {top1(warp, native)}/{len(warp)}")
            if quant in EIGHT_BIT_DOTS:  # WARP's default arithmetic is llama.cpp's there
                q8, _ = tools.warp_logits(path, "q8")
                problem = check_default_path(name, q8, native, target)
                if problem:
                    failures.append(problem)
                    print("  FAIL " + problem)
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--computed", required=True)
    parser.add_argument("--peer", required=True)
    parser.add_argument("--keep", help="work directory to keep (default: a removed temp dir)")
    args = parser.parse_args()
    tools = Tools(args.computed, args.peer)
    work = args.keep or tempfile.mkdtemp(prefix="warp-gguf-agreement-")
    os.makedirs(work, exist_ok=True)
    failures = []
    try:
        for arch in ARCHITECTURES:
            print(f"{arch}:")
            failures += check_architecture(tools, arch, work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if failures:
        sys.exit("FAILED:\n" + "\n".join(failures))
    print("OK")


if __name__ == "__main__":
    main()
