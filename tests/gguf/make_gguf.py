#!/usr/bin/env python3
"""Writes a random model as a GGUF file, the way llama.cpp's converter names it.

  make_gguf.py --arch qwen3moe|llama|glm4moe --shape tiny --out m.gguf    F32, for agreement tests
  make_gguf.py --arch qwen3moe --shape k2-experts --type q4_0 --out m.gguf
      the side-by-side benchmark's model: Kimi K2's expert matrices (hidden 7168,
      128 experts of 2048, top-8), 4 MoE layers, GQA 64/8 x 128, vocab 1024;
      Q4_0 blocks with zero-mean codes and routers whose logits spread (DESIGN.md,
      "Synthetic models must route like trained ones").

The tokenizer is a small byte-level BPE (gpt2 model, 256 byte tokens and merges),
so llama.cpp loads the file; tests pass token ids.
"""

import argparse
import math
import random
import struct
import sys
import os

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_file import (GgufWriter, GGML_F32, GGML_Q4_0, STRING, ARRAY, U32, I32, F32, BOOL)  # noqa: E402

SHAPES = {
    "tiny": dict(hidden=256, layers=2, heads=4, kv_heads=2, head_dim=64, experts=8, top_k=2,
                 expert_ff=256, vocab=320, context=256),
    "k2-experts": dict(hidden=7168, layers=4, heads=64, kv_heads=8, head_dim=128, experts=128,
                       top_k=8, expert_ff=2048, vocab=1024, context=4096),
}


def bytes_to_unicode():
    """GPT-2's byte-to-character map of byte-level BPE."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def add_tokenizer(w, vocab):
    chars = bytes_to_unicode()
    tokens = [chars[b] for b in range(256)]
    merges = []
    letters = "etaoinshrdlucmfwypvbgkqjxz"
    pairs = [a + b for a in letters for b in letters]
    # Two letters, then a pair and a letter: merges whose parts are tokens already.
    for left, right in [(p[0], p[1]) for p in pairs] + [(p, c) for p in pairs for c in letters]:
        if len(tokens) >= vocab:
            break
        merges.append(f"{left} {right}")
        tokens.append(left + right)
    assert len(tokens) == vocab, (len(tokens), vocab)
    w.add("tokenizer.ggml.model", STRING, "gpt2")
    w.add("tokenizer.ggml.pre", STRING, "qwen2")
    w.add("tokenizer.ggml.tokens", ARRAY, tokens, STRING)
    w.add("tokenizer.ggml.token_type", ARRAY, [1] * vocab, I32)
    w.add("tokenizer.ggml.merges", ARRAY, merges, STRING)
    w.add("tokenizer.ggml.bos_token_id", U32, 0)
    w.add("tokenizer.ggml.eos_token_id", U32, 1)


class F32Tensor:
    def __init__(self, rng, count, std, mean=0.0):
        self.rng, self.count, self.std, self.mean = rng, count, std, mean

    def __call__(self, write):
        step = 1 << 16
        for start in range(0, self.count, step):
            n = min(step, self.count - start)
            g = self.rng.gauss
            write(struct.pack(f"<{n}f", *(self.mean + self.std * g(0.0, 1.0) for _ in range(n))))


# Q4_0 codes with mean zero: nibble 0 (value -8) becomes 8 (value 0), so the
# values are -7..7, each 1/16, and 0 twice as often (variance 17.5).
_SYMMETRIC = bytes(((b & 15 or 8) | ((b >> 4 or 8) << 4)) for b in range(256))
_Q4_CODE_STD = math.sqrt(17.5)


class Q4Tensor:
    def __init__(self, rng, rows, cols, std):
        self.rng, self.blocks = rng, rows * cols // 32
        self.d = struct.pack("<e", std / _Q4_CODE_STD)

    def __call__(self, write):
        step = 1 << 16
        for start in range(0, self.blocks, step):
            n = min(step, self.blocks - start)
            codes = self.rng.randbytes(16 * n).translate(_SYMMETRIC)
            out = bytearray(18 * n)
            out[0::18] = self.d[0:1] * n
            out[1::18] = self.d[1:2] * n
            for k in range(16):
                out[2 + k::18] = codes[k::16]
            write(out)


def matrix(w, rng, name, rows, cols, kind, std):
    if kind == "q4_0":
        w.add_tensor(name, [cols, rows], GGML_Q4_0, Q4Tensor(rng, rows, cols, std))
    else:
        w.add_tensor(name, [cols, rows], GGML_F32, F32Tensor(rng, rows * cols, std))


def experts(w, rng, name, count, rows, cols, kind, std):
    if kind == "q4_0":
        w.add_tensor(name, [cols, rows, count], GGML_Q4_0, Q4Tensor(rng, count * rows, cols, std))
    else:
        w.add_tensor(name, [cols, rows, count], GGML_F32, F32Tensor(rng, count * rows * cols, std))


def norm(w, rng, name, n, exact_ones):
    w.add_tensor(name, [n], GGML_F32, F32Tensor(rng, n, 0.0 if exact_ones else 0.1, 1.0))


# Per architecture: llama.cpp's hyper-parameter keys beyond the common ones, and
# whether attention has per-head q/k norms (Qwen3).
# glm4moe also has q/k/v biases, a dense first layer, a shared expert, sigmoid
# routing with a selection bias (exp_probs_b), a scaled top-k and half-width rope.
ARCHITECTURES = {
    "qwen3moe": dict(qk_norm=True, ff_keys=("feed_forward_length", "expert_feed_forward_length")),
    "llama": dict(qk_norm=False, ff_keys=("feed_forward_length",)),
    "glm4moe": dict(qk_norm=False, ff_keys=("feed_forward_length", "expert_feed_forward_length"),
                    glm=True),
}


def write_model(path, a, s, kind, seed):
    arch = ARCHITECTURES[a]
    rng = random.Random(seed)
    w = GgufWriter()
    w.add("general.architecture", STRING, a)
    w.add("general.name", STRING, f"warp-random-{a}")
    ff = s["expert_ff"]
    keys = [("block_count", s["layers"]), ("context_length", s["context"]),
            ("embedding_length", s["hidden"]), ("attention.head_count", s["heads"]),
            ("attention.head_count_kv", s["kv_heads"]), ("attention.key_length", s["head_dim"]),
            ("attention.value_length", s["head_dim"]),
            ("rope.dimension_count", s["head_dim"] // 2 if arch.get("glm") else s["head_dim"]),
            ("expert_count", s["experts"]), ("expert_used_count", s["top_k"])]
    # qwen3moe's feed_forward_length is a dense MLP's (unused: every layer is MoE).
    # feed_forward_length is a dense MLP's where experts have their own key.
    dense_ff = ff * s["top_k"] if len(arch["ff_keys"]) > 1 else ff
    keys += [(key, dense_ff if key == "feed_forward_length" else ff) for key in arch["ff_keys"]]
    glm = arch.get("glm", False)
    if glm:
        keys += [("expert_shared_count", 1), ("leading_dense_block_count", 1),
                 ("expert_gating_func", 2)]
        w.add(f"{a}.expert_weights_scale", F32, 2.5)
        w.add(f"{a}.expert_weights_norm", BOOL, True)
    for key, value in keys:
        w.add(f"{a}.{key}", U32, value)
    w.add(f"{a}.rope.freq_base", F32, 1000000.0)
    w.add(f"{a}.attention.layer_norm_rms_epsilon", F32, 1e-6)
    add_tokenizer(w, s["vocab"])
    h, d = s["hidden"], s["head_dim"]
    big = kind != "f32"
    w.add_tensor("token_embd.weight", [h, s["vocab"]], GGML_F32, F32Tensor(rng, h * s["vocab"], 1.0))
    for layer in range(s["layers"]):
        p = f"blk.{layer}."
        norm(w, rng, p + "attn_norm.weight", h, big)
        matrix(w, rng, p + "attn_q.weight", s["heads"] * d, h, kind, 1 / math.sqrt(h))
        matrix(w, rng, p + "attn_k.weight", s["kv_heads"] * d, h, kind, 1 / math.sqrt(h))
        matrix(w, rng, p + "attn_v.weight", s["kv_heads"] * d, h, kind, 1 / math.sqrt(h))
        if glm:
            for name, rows in (("q", s["heads"] * d), ("k", s["kv_heads"] * d),
                               ("v", s["kv_heads"] * d)):
                w.add_tensor(p + f"attn_{name}.bias", [rows], GGML_F32, F32Tensor(rng, rows, 0.1))
        matrix(w, rng, p + "attn_output.weight", h, s["heads"] * d, kind,
               1 / math.sqrt(s["heads"] * d))
        if arch["qk_norm"]:
            norm(w, rng, p + "attn_q_norm.weight", d, big)
            norm(w, rng, p + "attn_k_norm.weight", d, big)
        norm(w, rng, p + ("post_attention_norm.weight" if glm else "ffn_norm.weight"), h, big)
        if glm and layer == 0:  # the leading dense layer
            dff = dense_ff
            matrix(w, rng, p + "ffn_gate.weight", dff, h, kind, 1 / math.sqrt(h))
            matrix(w, rng, p + "ffn_up.weight", dff, h, kind, 1 / math.sqrt(h))
            matrix(w, rng, p + "ffn_down.weight", h, dff, kind, 1 / math.sqrt(dff))
            continue
        # Router logits with a standard deviation of about 2 over unit-RMS inputs.
        w.add_tensor(p + "ffn_gate_inp.weight", [h, s["experts"]], GGML_F32,
                     F32Tensor(rng, h * s["experts"], 2.0 / math.sqrt(h)))
        if glm:
            w.add_tensor(p + "exp_probs_b.bias", [s["experts"]], GGML_F32,
                         F32Tensor(rng, s["experts"], 0.5))
            matrix(w, rng, p + "ffn_gate_shexp.weight", ff, h, kind, 1 / math.sqrt(h))
            matrix(w, rng, p + "ffn_up_shexp.weight", ff, h, kind, 1 / math.sqrt(h))
            matrix(w, rng, p + "ffn_down_shexp.weight", h, ff, kind, 1 / math.sqrt(ff))
        experts(w, rng, p + "ffn_gate_exps.weight", s["experts"], ff, h, kind, 1 / math.sqrt(h))
        experts(w, rng, p + "ffn_up_exps.weight", s["experts"], ff, h, kind, 1 / math.sqrt(h))
        experts(w, rng, p + "ffn_down_exps.weight", s["experts"], h, ff, kind, 1 / math.sqrt(ff))
    norm(w, rng, "output_norm.weight", h, big)
    matrix(w, rng, "output.weight", s["vocab"], h, kind, 1 / math.sqrt(h))
    w.write(path)




def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arch", choices=sorted(ARCHITECTURES), required=True)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="tiny")
    parser.add_argument("--type", choices=["f32", "q4_0"], default="f32")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    write_model(args.out, args.arch, SHAPES[args.shape], args.type, args.seed)


if __name__ == "__main__":
    main()
