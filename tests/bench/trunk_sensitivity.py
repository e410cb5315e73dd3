#!/usr/bin/python3
"""Which trunk tensors a 4-8 bit trunk keeps at 8 bits (issue 43, section 3): each kind's
sensitivity, measured.

Every reference fixture (tests/fixtures, their prompts) and the trained demo model
(tests/demo_model/kjv-moe, a King James passage) is converted with --trunk native, the
reference, then with each kind of trunk matrix alone at q4 (`--trunk q4:KIND`: embedding,
head, attention, indexer, linear_attention, dense_mlp, shared_experts, latent_projection;
the rest native), and with q8, q4 and mixed for the whole trunk. Per variant and model:
the mean KL(native || variant) over every prompt position, in nats, and the share of
positions whose top-1 token agrees; then each variant's trunk bytes over native's. The
random-weight fixtures spread their logits less than a trained model, so the demo model's
column is the one to read for the rule; the fixtures say whether a kind matters at all in
a family the demo model lacks (KDA, indexers, LatentMoE).

  trunk_sensitivity.py --computed build/bin/computed [--out table.md]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KINDS = ["embedding", "head", "attention", "indexer", "linear_attention", "dense_mlp",
         "shared_experts", "latent_projection"]
FIXTURES = ["deepseek_v3_bf16", "qwen3_moe_bf16", "glm5_next_bf16", "kimi_linear_bf16",
            "kimi_k3_bf16", "deepseek_v4_bf16", "gpt_oss_bf16", "mixtral_f32", "glm4_moe_f32"]
# Candidate rules for --trunk mixed: the kinds kept at 8 bits, the rest q4.
CANDIDATES = ["mixed:embedding", "mixed:embedding,head", "mixed:embedding,head,dense_mlp,indexer",
              "mixed:embedding,head,dense_mlp,indexer,attention",
              "mixed:embedding,head,dense_mlp,indexer,attention,latent_projection", "mixed"]
# Releases whose trunk each rule is sized for (`computed plan --config`).
RELEASES = ["kimi_k3", "kimi_k2", "glm5_next_flash_fp8", "deepseek_v4_flash", "qwen3_235b",
            "kimi_linear", "gpt_oss_120b"]
DEMO_TEXT = ("In the beginning God created the heaven and the earth. And the earth was without "
             "form, and void; and darkness was upon the face of the deep. And the Spirit of God "
             "moved upon the face of the waters. And God said, Let there be light: and there was "
             "light.")


def sh(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def logits(computed, model, tokens, out):
    sh([computed, "--log-level", "warn", "logits", model, "--tokens", tokens, "--out", out])
    return np.fromfile(out, dtype=np.float32)


def trunk_bytes(model):
    return json.load(open(os.path.join(model, "manifest.json")))["trunk"]["bytes"]


def compare(ref, got, vocab):
    ref, got = ref.reshape(-1, vocab).astype(np.float64), got.reshape(-1, vocab).astype(np.float64)
    lp = ref - ref.max(1, keepdims=True)
    lp -= np.log(np.exp(lp).sum(1, keepdims=True))
    lq = got - got.max(1, keepdims=True)
    lq -= np.log(np.exp(lq).sum(1, keepdims=True))
    kl = (np.exp(lp) * (lp - lq)).sum(1).mean()
    top1 = (ref.argmax(1) == got.argmax(1)).mean()
    return kl, top1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--computed", required=True)
    ap.add_argument("--out")
    a = ap.parse_args()
    variants = ["q8", "q4"] + CANDIDATES + [f"q4:{k}" for k in KINDS]
    sources = [(f, os.path.join(ROOT, "tests/fixtures", f)) for f in FIXTURES]
    sources.append(("demo (trained)", os.path.join(ROOT, "tests/demo_model/kjv-moe")))
    results = {}  # (source, variant) -> (kl, top1, bytes ratio) or None (no such tensor)
    with tempfile.TemporaryDirectory() as work:
        for name, path in sources:
            ref_model = os.path.join(work, "native.warp")
            sh([a.computed, "convert", "--quiet", path, ref_model])
            if name.startswith("demo"):
                tokens = sh([a.computed, "tokenize", "--tokenizer", ref_model, DEMO_TEXT]).strip()
                tokens = tokens.replace(" ", ",")
            else:
                tokens = open(os.path.join(path, "tokens.txt")).read().strip()
            ref = logits(a.computed, ref_model, tokens, os.path.join(work, "ref.f32"))
            vocab = ref.size // (tokens.count(",") + 1)
            native_bytes = trunk_bytes(ref_model)
            for variant in variants:
                model = os.path.join(work, "variant.warp")
                sh([a.computed, "convert", "--quiet", "--trunk", variant, path, model])
                size = trunk_bytes(model)
                if variant.startswith("q4:") and size == native_bytes:
                    results[(name, variant)] = None  # the family has no such matrix
                else:
                    got = logits(a.computed, model, tokens, os.path.join(work, "got.f32"))
                    kl, top1 = compare(ref, got, vocab)
                    results[(name, variant)] = (kl, top1, size / native_bytes)
                subprocess.run(["rm", "-rf", model], check=True)
            subprocess.run(["rm", "-rf", ref_model], check=True)
            print(f"{name}: done", file=sys.stderr)
    names = [n for n, _ in sources]
    lines = ["| --trunk | " + " | ".join(names) + " |",
             "|---|" + "---|" * len(names)]
    for variant in variants:
        cells = []
        for name in names:
            r = results[(name, variant)]
            cells.append("-" if r is None else f"{r[0]:.2e} / {100 * r[1]:.0f}% / {r[2]:.2f}")
        lines.append(f"| {variant} | " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    print("mean KL (nats) / top-1 agreement / trunk bytes over native, against --trunk native")
    print(table)
    # What each rule makes of the releases' trunks.
    sizes = ["| --trunk | " + " | ".join(RELEASES) + " |", "|---|" + "---|" * len(RELEASES)]
    for variant in ["native", "q8", "q4"] + CANDIDATES:
        cells = []
        for release in RELEASES:
            config = os.path.join(ROOT, "tests/configs", release + ".config.json")
            out = subprocess.run([a.computed, "plan", "--config", config, "--trunk", variant,
                                  "--ram", "1T"], capture_output=True, text=True).stdout
            trunk = next((line.split()[1:3] for line in out.splitlines()
                          if line.startswith("trunk ")), ["?", ""])
            cells.append(" ".join(trunk))
        sizes.append(f"| {variant} | " + " | ".join(cells) + " |")
    print("\ntrunk of each release (computed plan --config)")
    print("\n".join(sizes))
    table += "\n\n" + "\n".join(sizes)
    if a.out:
        open(a.out, "w").write(table + "\n")


if __name__ == "__main__":
    main()
