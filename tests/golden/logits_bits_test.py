#!/usr/bin/env python3
"""A change detector for the bits (issue 44, part 6).

The reference's 1e-4 cannot see a rounding change, and commits say "the same
bits" after a refactor. This test pins them: for a few golden fixtures, on the
exact path (--activations f32) and on the default one (8-bit activations for
4-bit and MXFP4 experts), `computed logits` of the first PROMPT tokens must
equal tests/golden/logits_bits/CASE.f32 byte for byte.

When a change is meant to move bits (a kernel's summation order, a new
rounding), rewrite the files and say so in the commit message:

  /usr/bin/python3 tests/golden/logits_bits_test.py --computed build/bin/computed --update

  logits_bits_test.py --computed BUILD/bin/computed [--update]
"""

import argparse
import array
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures")
BITS = os.path.join(HERE, "logits_bits")
PROMPT = 8  # the first tokens of the fixture's tokens.txt

# (case, fixture, convert flags, logits flags): every family's exact path
# once, and the default path where it differs (4-bit and MXFP4 experts).
CASES = [
    ("qwen3_moe_bf16", "qwen3_moe_bf16", [], []),
    ("qwen3_moe_q4_default", "qwen3_moe_bf16", ["--experts", "q4"], []),
    ("qwen3_moe_q4_exact", "qwen3_moe_bf16", ["--experts", "q4"], ["--activations", "f32"]),
    ("deepseek_v3_fp8", "deepseek_v3_fp8", [], []),
    ("gpt_oss_mxfp4_default", "gpt_oss_mxfp4", [], []),
    ("gpt_oss_mxfp4_exact", "gpt_oss_mxfp4", [], ["--activations", "f32"]),
    ("kimi_linear_bf16", "kimi_linear_bf16", [], []),
    ("kimi_k3_mxfp4_default", "kimi_k3_mxfp4", [], []),
    ("kimi_k3_mxfp4_exact", "kimi_k3_mxfp4", [], ["--activations", "f32"]),
    ("deepseek_v4_native_default", "deepseek_v4_native", [], []),
    ("glm5_next_bf16", "glm5_next_bf16", [], []),
    ("glm5_next_q4_trunk", "glm5_next_bf16", ["--trunk", "mixed"], []),
]


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}\n{result.stdout}\n{result.stderr}")


def first_difference(got, want):
    """(position, token, got, want, max |difference|) of two equal-length logit arrays."""
    a, b = array.array("f", got), array.array("f", want)
    vocab = len(a) // PROMPT
    first = next(i for i in range(len(a)) if a[i] != b[i] or got[4 * i:4 * i + 4] != want[4 * i:4 * i + 4])
    worst = max(abs(x - y) for x, y in zip(a, b))
    return first // vocab, first % vocab, a[first], b[first], worst


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--computed", required=True)
    parser.add_argument("--update", action="store_true", help="rewrite the files")
    args = parser.parse_args()
    os.makedirs(BITS, exist_ok=True)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        converted = {}
        for case, fixture, convert_flags, logits_flags in CASES:
            key = (fixture, tuple(convert_flags))
            if key not in converted:
                out = os.path.join(tmp, f"{case}.warp")
                run([args.computed, "convert", os.path.join(FIXTURES, fixture), out, "--quiet"]
                    + convert_flags)
                converted[key] = out
            with open(os.path.join(FIXTURES, fixture, "tokens.txt")) as f:
                tokens = f.read().strip().split(",")[:PROMPT]
            logits = os.path.join(tmp, f"{case}.f32")
            run([args.computed, "--log-level", "warn", "logits", converted[key], "--tokens",
                 ",".join(tokens), "--out", logits] + logits_flags)
            with open(logits, "rb") as f:
                got = f.read()
            path = os.path.join(BITS, f"{case}.f32")
            if args.update:
                with open(path, "wb") as f:
                    f.write(got)
                print(f"{case}: wrote {len(got)} bytes")
                continue
            if not os.path.exists(path):
                failures.append(f"{case}: {path} is missing (run with --update)")
                continue
            with open(path, "rb") as f:
                want = f.read()
            if got == want:
                print(f"{case}: the same bits")
            elif len(got) != len(want):
                failures.append(f"{case}: {len(got)} bytes of logits, {len(want)} pinned")
            else:
                pos, token, a, b, worst = first_difference(got, want)
                failures.append(f"{case}: the bits moved: first at position {pos} token {token} "
                                f"({a!r}, pinned {b!r}); largest difference {worst:.3g}")
    if failures:
        print("\n".join(failures), flush=True)
        sys.exit("FAILED: if the change is meant to move bits, rerun with --update and say so "
                 "in the commit message (tests/golden/logits_bits_test.py)")
    print(f"all {len(CASES)} cases: {'rewritten' if args.update else 'the same bits'}")


if __name__ == "__main__":
    main()
