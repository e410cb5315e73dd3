#!/usr/bin/env python3
"""Writes a random model as a GGUF file, the way llama.cpp's converter names it.

  make_gguf.py --arch qwen3moe|llama|glm4moe|deepseek2|gpt-oss --shape tiny --out m.gguf
      F32, for agreement tests
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


# Per architecture, what llama.cpp's converter writes beyond the common keys:
#   qwen3moe: per-head q/k norms; llama (Mixtral): plain GQA;
#   glm4moe: q/k/v biases, a dense first layer, a shared expert, sigmoid routing
#     with a selection bias (exp_probs_b), a scaled top-k, half-width rope;
#   deepseek2 (DeepSeek V3 / Kimi K2): MLA with q LoRA and kv_b split per head
#     (attn_k_b, attn_v_b), group-limited sigmoid routing, a dense first layer,
#     a shared expert, YaRN with its log multiplier;
#   gpt-oss: q/k/v/o biases, sinks, a sliding layer then a full one, a router
#     bias, expert biases, YaRN.
ARCHITECTURES = {
    "qwen3moe": dict(qk_norm=True, ff_keys=("feed_forward_length", "expert_feed_forward_length")),
    "llama": dict(ff_keys=("feed_forward_length",)),
    "glm4moe": dict(ff_keys=("feed_forward_length", "expert_feed_forward_length"), glm=True),
    "deepseek2": dict(ff_keys=("feed_forward_length", "expert_feed_forward_length"), mla=True),
    "gpt-oss": dict(ff_keys=("feed_forward_length", "expert_feed_forward_length"), oss=True),
}
# deepseek2's attention (tiny): q LoRA, kv LoRA, per-head non-rope/rope/value dims.
MLA = dict(q_lora=128, kv_lora=128, nope=64, rope=32, v=64)
YARN = dict(factor=4.0, original=64)


class Writer:
    """One model's tensors, random, in F32 or Q4_0 ("big": norms exactly one)."""

    def __init__(self, w, rng, kind):
        self.w, self.rng, self.kind, self.big = w, rng, kind, kind != "f32"

    def matrix(self, name, rows, cols, std=None, heads=1):
        """rows x cols (x heads: a 3-D per-head tensor) of std 1/sqrt(cols) unless given."""
        std = 1 / math.sqrt(cols) if std is None else std
        dims = [cols, rows] + ([heads] if heads > 1 else [])
        if self.kind == "q4_0":
            self.w.add_tensor(name, dims, GGML_Q4_0, Q4Tensor(self.rng, rows * heads, cols, std))
        else:
            self.w.add_tensor(name, dims, GGML_F32, F32Tensor(self.rng, rows * cols * heads, std))

    def experts(self, name, count, rows, cols):
        self.matrix(name, rows, cols, heads=count)

    def vector(self, name, n, std=0.1, mean=0.0):
        self.w.add_tensor(name, [n], GGML_F32, F32Tensor(self.rng, n, std, mean))

    def norm(self, name, n):
        self.vector(name, n, 0.0 if self.big else 0.1, 1.0)


def gqa_attention(t, p, s, a):
    h, d = s["hidden"], s["head_dim"]
    widths = {"q": s["heads"] * d, "k": s["kv_heads"] * d, "v": s["kv_heads"] * d}
    for name, rows in widths.items():
        t.matrix(p + f"attn_{name}.weight", rows, h)
        if a.get("glm") or a.get("oss"):
            t.vector(p + f"attn_{name}.bias", rows)
    t.matrix(p + "attn_output.weight", h, widths["q"])
    if a.get("oss"):
        t.vector(p + "attn_output.bias", h)
        t.vector(p + "attn_sinks.weight", s["heads"], 1.0)
    if a.get("qk_norm"):
        t.norm(p + "attn_q_norm.weight", d)
        t.norm(p + "attn_k_norm.weight", d)


def mla_attention(t, p, s):
    h, heads, m = s["hidden"], s["heads"], MLA
    t.matrix(p + "attn_q_a.weight", m["q_lora"], h)
    t.norm(p + "attn_q_a_norm.weight", m["q_lora"])
    t.matrix(p + "attn_q_b.weight", heads * (m["nope"] + m["rope"]), m["q_lora"])
    t.matrix(p + "attn_kv_a_mqa.weight", m["kv_lora"] + m["rope"], h)
    t.norm(p + "attn_kv_a_norm.weight", m["kv_lora"])
    # kv_b_proj split per head, as llama.cpp's converter writes it: k_b
    # transposed ([heads, kv_lora, nope]) and v_b ([heads, v, kv_lora]).
    t.matrix(p + "attn_k_b.weight", m["kv_lora"], m["nope"], 1 / math.sqrt(m["kv_lora"]), heads)
    t.matrix(p + "attn_v_b.weight", m["v"], m["kv_lora"], heads=heads)
    t.matrix(p + "attn_output.weight", h, heads * m["v"])


def write_model(path, a, s, kind, seed):
    arch = ARCHITECTURES[a]
    glm, mla, oss = arch.get("glm", False), arch.get("mla", False), arch.get("oss", False)
    rng = random.Random(seed)
    w = GgufWriter()
    w.add("general.architecture", STRING, a)
    w.add("general.name", STRING, f"warp-random-{a}")
    ff = s["expert_ff"]
    keys = [("block_count", s["layers"]), ("context_length", s["context"]),
            ("embedding_length", s["hidden"]), ("attention.head_count", s["heads"]),
            ("expert_count", s["experts"]), ("expert_used_count", s["top_k"])]
    if mla:  # MLA as MQA: the absorbed form's key and value, and the heads' own
        m = MLA
        keys += [("attention.head_count_kv", 1), ("attention.q_lora_rank", m["q_lora"]),
                 ("attention.kv_lora_rank", m["kv_lora"]),
                 ("attention.key_length", m["kv_lora"] + m["rope"]),
                 ("attention.value_length", m["kv_lora"]),
                 ("attention.key_length_mla", m["nope"] + m["rope"]),
                 ("attention.value_length_mla", m["v"]), ("rope.dimension_count", m["rope"])]
    else:
        keys += [("attention.head_count_kv", s["kv_heads"]),
                 ("attention.key_length", s["head_dim"]),
                 ("attention.value_length", s["head_dim"]),
                 ("rope.dimension_count", s["head_dim"] // 2 if glm else s["head_dim"])]
    # feed_forward_length is a dense MLP's where experts have their own key.
    dense_ff = ff * s["top_k"] if len(arch["ff_keys"]) > 1 and not oss else ff
    keys += [(key, dense_ff if key == "feed_forward_length" else ff) for key in arch["ff_keys"]]
    if glm or mla:
        keys += [("expert_shared_count", 1), ("leading_dense_block_count", 1),
                 ("expert_gating_func", 2)]
        w.add(f"{a}.expert_weights_scale", F32, 2.5)
        w.add(f"{a}.expert_weights_norm", BOOL, True)
    if mla:
        keys += [("expert_group_count", 4), ("expert_group_used_count", 2)]
    if oss:
        keys += [("attention.sliding_window", 4)]
    if mla or oss:
        w.add(f"{a}.rope.scaling.type", STRING, "yarn")
        w.add(f"{a}.rope.scaling.factor", F32, YARN["factor"])
        keys += [("rope.scaling.original_context_length", YARN["original"])]
    if mla:  # 0.1 * mscale_all_dim, as llama.cpp's converter writes it
        w.add(f"{a}.rope.scaling.yarn_log_multiplier", F32, 0.1 * 0.707)
    for key, value in keys:
        w.add(f"{a}.{key}", U32, value)
    w.add(f"{a}.rope.freq_base", F32, 150000.0 if oss else 1000000.0)
    w.add(f"{a}.attention.layer_norm_rms_epsilon", F32, 1e-6)
    add_tokenizer(w, s["vocab"])
    h = s["hidden"]
    t = Writer(w, rng, kind)
    w.add_tensor("token_embd.weight", [h, s["vocab"]], GGML_F32, F32Tensor(rng, h * s["vocab"], 1.0))
    for layer in range(s["layers"]):
        p = f"blk.{layer}."
        t.norm(p + "attn_norm.weight", h)
        if mla:
            mla_attention(t, p, s)
        else:
            gqa_attention(t, p, s, arch)
        t.norm(p + ("post_attention_norm.weight" if glm or oss else "ffn_norm.weight"), h)
        if (glm or mla) and layer == 0:  # the leading dense layer
            t.matrix(p + "ffn_gate.weight", dense_ff, h)
            t.matrix(p + "ffn_up.weight", dense_ff, h)
            t.matrix(p + "ffn_down.weight", h, dense_ff)
            continue
        # Router logits with a standard deviation of about 2 over unit-RMS inputs.
        w.add_tensor(p + "ffn_gate_inp.weight", [h, s["experts"]], GGML_F32,
                     F32Tensor(rng, h * s["experts"], 2.0 / math.sqrt(h)))
        if oss:
            t.vector(p + "ffn_gate_inp.bias", s["experts"], 0.5)
        if glm or mla:
            t.vector(p + "exp_probs_b.bias", s["experts"], 0.5)
            t.matrix(p + "ffn_gate_shexp.weight", ff, h)
            t.matrix(p + "ffn_up_shexp.weight", ff, h)
            t.matrix(p + "ffn_down_shexp.weight", h, ff)
        t.experts(p + "ffn_gate_exps.weight", s["experts"], ff, h)
        t.experts(p + "ffn_up_exps.weight", s["experts"], ff, h)
        t.experts(p + "ffn_down_exps.weight", s["experts"], h, ff)
        if oss:  # [experts, rows] biases, F32
            for name, rows in (("gate", ff), ("up", ff), ("down", h)):
                w.add_tensor(p + f"ffn_{name}_exps.bias", [rows, s["experts"]], GGML_F32,
                             F32Tensor(rng, rows * s["experts"], 0.1))
    t.norm("output_norm.weight", h)
    t.matrix("output.weight", s["vocab"], h)
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
