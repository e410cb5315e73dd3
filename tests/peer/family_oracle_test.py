#!/usr/bin/env python3
"""llama.cpp as the outside oracle of the families it shares with WARP beyond
the five GGUF architectures of agreement_test.py: Kimi-Linear, Kimi-K3 and
DeepSeek-V4 (issue 44, part 1).

For each family, one golden fixture (tests/fixtures, HF layout) is converted
twice: by WARP (`computed convert`) and by llama.cpp's own
convert_hf_to_gguf.py (tests/peer/convert_fixture.py: Debian's python3 only,
the llama.cpp tree untouched). The GGUF's F32 twin (`llama_probe dequantize`:
the MXFP4 experts through ggml's dequantizer, everything else is F32 already)
is the exact target of WARP's `--activations f32`:

  - every prompt position's logits within 1e-4 of llama.cpp's, same argmax;
  - the greedy continuation identical (llama.cpp's from its decode path);
  - llama.cpp against the fixture's own logits (the PyTorch reference) within
    1e-4 too, at the positions where both run the same model.

Where llama.cpp's graph departs from the release's by design, the conversion
rewrites weights so that llama.cpp computes the release's function, and the
departure itself is asserted where the fixture can see it
(tests/reference/README.md, "Outside oracles"):

  - Kimi-Linear / Kimi-K3: llama.cpp normalises the MLA latents (c_kv, K3's
    c_q) with rms_norm_eps (1e-5), the release with its RMSNorm's default 1e-6
    (`--mla-norm-eps 1e-6` scales the latent rows of the projections so that
    llama.cpp's eps acts as 1e-6). kimi_linear_bf16 is built to see the eps:
    converted as is, llama.cpp is 2.15 away (asserted). K3's fixtures move by
    ~1e-4 only, within rounding, so there it is compensated, not asserted.
  - DeepSeek-V4: llama.cpp hard-codes the HCA compression ratio 128 (its
    loader refuses others) and rotates the lightning indexer by a Hadamard
    matrix of at least 64 x 64 (it needs index_head_dim % 64 == 0). The
    fixture has ratio 16 (to close HCA windows within its prompt) and index
    heads of 32. So both engines run a copy of deepseek_v4_native with the
    HCA ratio set to the release's 128 (the compressor's 16 `ape` rows tiled to
    128), on a 160-token prompt (one HCA window closes at position 127), and
    llama.cpp's conversion pads the indexer heads to 64
    (`--indexer-head-dim 64`, function-preserving). The copy is the fixture's
    model until the first ratio-16 window would close: positions 0..14 are
    compared with the fixture's logits.

A missing peer or binary fails the test: run tests/peer/install.sh (make check does).

  family_oracle_test.py --computed BUILD/bin/computed --peer BUILD/peer/bin
                        [--fixtures tests/fixtures] [--keep DIR]
"""

import argparse
import json
import os
import shutil
import struct
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from agreement_test import argmax, read_logits, run  # noqa: E402

CONVERT = os.path.join(HERE, "convert_fixture.py")
TOLERANCE = 1e-4
GREEDY = 16
# kimi_linear_bf16 converted as is: llama.cpp's kv_a_layernorm eps 1e-5
# against the release's 1e-6. Measured 2.15 (the reference's own mutation
# table has the same row: 2.15); a bound just above it, and the test also
# insists that it stays far above the rounding (TOLERANCE).
KIMI_LINEAR_EPS_GAP = 2.2
DSV4_PROMPT = 160


def kimi_linear(fixtures, work):
    return {"name": "kimi_linear", "fixture": os.path.join(fixtures, "kimi_linear_bf16"),
            "convert": ["--mla-norm-eps", "1e-6"], "as_is_gap": KIMI_LINEAR_EPS_GAP}


def kimi_k3(variant):
    def family(fixtures, work):
        return {"name": f"kimi_k3 ({variant})", "fixture": os.path.join(fixtures, f"kimi_k3_{variant}"),
                "convert": ["--mla-norm-eps", "1e-6"]}
    return family


def deepseek_v4(fixtures, work):
    fixture = os.path.join(fixtures, "deepseek_v4_native")
    model = os.path.join(work, "deepseek_v4_native-hca128")
    first_window = hca_ratio_128(fixture, model)
    prompt = read_tokens(fixture)
    # Tokens past the fixture's 64, deterministic, in [2, 256).
    prompt += [(37 * i + 11) % 254 + 2 for i in range(DSV4_PROMPT - len(prompt))]
    return {"name": "deepseek_v4", "fixture": fixture, "model": model, "prompt": prompt,
            "fixture_positions": first_window - 1, "convert": ["--indexer-head-dim", "64"]}


FAMILIES = [kimi_linear, kimi_k3("bf16"), kimi_k3("mxfp4"), deepseek_v4]


def read_tokens(fixture):
    with open(os.path.join(fixture, "tokens.txt")) as f:
        return [int(t) for t in f.read().strip().split(",")]


def hca_ratio_128(fixture, out):
    """A copy of a DeepSeek-V4 fixture whose HCA layers (ratio neither 0 nor 4)
    have the release's ratio 128, their compressor `ape` [ratio, D] tiled to
    [128, D]. Returns the smallest original HCA ratio: that copy and the fixture
    are one model at the positions before it."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(fixture, "config.json")) as f:
        config = json.load(f)
    ratios = config["compress_ratios"]
    hca = {i: r for i, r in enumerate(ratios) if r not in (0, 4)}
    assert hca and all(128 % r == 0 for r in hca.values()), ratios
    config["compress_ratios"] = [128 if i in hca else r for i, r in enumerate(ratios)]
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(fixture, "model.safetensors"), "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    meta = header.pop("__metadata__", None)
    tensors = {}
    for name, t in header.items():
        raw, shape = data[t["data_offsets"][0]:t["data_offsets"][1]], list(t["shape"])
        parts = name.split(".")
        if parts[0] == "layers" and int(parts[1]) in hca and name.endswith(".attn.compressor.ape"):
            ratio = hca[int(parts[1])]
            assert shape[0] == ratio and t["dtype"] == "F32", (name, shape)
            raw, shape[0] = raw * (128 // ratio), 128
        tensors[name] = (t["dtype"], shape, raw)
    header, offset = ({"__metadata__": meta} if meta else {}), 0
    for name in sorted(tensors):
        dtype, shape, raw = tensors[name]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for name in sorted(tensors):
            f.write(tensors[name][2])
    return min(hca.values())


def worst(a, b, rows=None):
    """(max |a - b| over the rows, its (position, id), first position whose argmax differs)."""
    rows = range(len(a)) if rows is None else rows
    top, where, split = 0.0, None, None
    for pos in rows:
        for i, (x, y) in enumerate(zip(a[pos], b[pos])):
            if not abs(x - y) <= top:
                top, where = abs(x - y), (pos, i)
        if split is None and argmax(a[pos]) != argmax(b[pos]):
            split = pos
    return top, where, split


class Oracle:
    def __init__(self, args, work):
        self.computed, self.work = args.computed, work
        self.probe = os.path.join(args.peer, "llama_probe")
        peer_root = os.path.dirname(os.path.abspath(args.peer))
        self.source = args.peer_source or os.path.join(peer_root, "llama.cpp")
        for tool in (self.computed, self.probe):
            if not os.access(tool, os.X_OK):
                sys.exit(f"FAILED: {tool} is missing: run tests/peer/install.sh (make check does)")
        if not os.path.isfile(os.path.join(self.source, "convert_hf_to_gguf.py")):
            sys.exit(f"FAILED: no llama.cpp source in {self.source}: run tests/peer/install.sh")

    def warp(self, model, tag, prompt):
        warp = os.path.join(self.work, tag + ".warp")
        run([self.computed, "convert", model, warp])
        out = warp + ".logits"
        greedy = run([self.computed, "logits", warp, "--tokens", ",".join(map(str, prompt)),
                      "--out", out, "--greedy", str(GREEDY), "--activations", "f32"]).strip()
        return read_logits(out, len(prompt)), greedy

    def llama(self, model, tag, prompt, convert):
        gguf = os.path.join(self.work, tag + ".gguf")
        run([sys.executable, CONVERT, self.source, model, gguf] + convert)
        twin = os.path.join(self.work, tag + "-f32.gguf")
        run([self.probe, "dequantize", gguf, twin])
        out, ids = twin + ".logits", ",".join(map(str, prompt))
        run([self.probe, "logits", twin, "--tokens", ids, "--out", out])
        bench = run([self.probe, "bench", twin, "--tokens", ids, "--gen", str(GREEDY), "--f32-kv"])
        return read_logits(out, len(prompt)), bench.strip().splitlines()[-1]


def check(oracle, family):
    name, fixture = family["name"], family["fixture"]
    model = family.get("model", fixture)
    prompt = family.get("prompt") or read_tokens(fixture)
    tag = os.path.basename(model)
    failures = []

    def expect(ok, message):
        print(("  " if ok else "  FAIL ") + message)
        if not ok:
            failures.append(f"{name}: {message}")

    started = time.monotonic()
    warp, warp_greedy = oracle.warp(model, tag, prompt)
    llama, llama_greedy = oracle.llama(model, tag, prompt, family["convert"])
    gap, where, split = worst(warp, llama)
    expect(gap <= TOLERANCE and split is None,
           f"WARP f32 vs llama.cpp (F32 twin), {len(prompt)} positions: max |logit difference| "
           f"{gap:.3g} at (position, id) {where}" + ("" if split is None else f", argmax differs at {split}"))
    expect(warp_greedy == llama_greedy,
           f"greedy {GREEDY}: WARP {warp_greedy}, llama.cpp {llama_greedy}")

    reference = read_logits(os.path.join(fixture, "logits.f32"), len(read_tokens(fixture)))
    rows = range(family.get("fixture_positions", len(reference)))
    gap, where, split = worst(llama, reference, rows)
    expect(gap <= TOLERANCE and split is None,
           f"llama.cpp vs the fixture's logits (PyTorch reference), positions 0..{rows[-1]}: max "
           f"{gap:.3g} at {where}" + ("" if split is None else f", argmax differs at {split}"))
    if "prompt" not in family:
        with open(os.path.join(fixture, "greedy.txt")) as f:
            expected = f.read().strip()
        expect(llama_greedy == expected, f"llama.cpp greedy vs the fixture's: {expected}")

    if "as_is_gap" in family:  # the departure itself, on the conversion as is
        as_is, _ = oracle.llama(model, tag + "-as-is", prompt, [])
        gap, where, split = worst(as_is, warp)
        expect(TOLERANCE < gap <= family["as_is_gap"],
               f"llama.cpp converted as is (its eps) vs WARP: max {gap:.3g} at {where} (the eps "
               f"departure; expected in ({TOLERANCE}, {family['as_is_gap']}])")
    print(f"  {time.monotonic() - started:.1f} s")
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--computed", required=True)
    parser.add_argument("--peer", required=True, help="the peer's bin directory (llama_probe)")
    parser.add_argument("--peer-source", help="llama.cpp's source (default: PEER/../llama.cpp)")
    parser.add_argument("--fixtures", default=os.path.join(HERE, "..", "fixtures"))
    parser.add_argument("--keep", help="work directory to keep (default: a removed temp dir)")
    args = parser.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="warp-family-oracle-")
    os.makedirs(work, exist_ok=True)
    failures = []
    try:
        oracle = Oracle(args, work)
        for make in FAMILIES:
            family = make(args.fixtures, work)
            print(f"{family['name']}:")
            failures += check(oracle, family)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if failures:
        sys.exit("FAILED:\n" + "\n".join(failures))
    print("OK")


if __name__ == "__main__":
    main()
