#!/usr/bin/env python3
"""A release and its GGUF conversion are the same model to WARP (issue 13).

For the reference fixtures of the families whose GGUF form is laid out apart
from the release's (tests/fixtures, checked against the PyTorch reference):

  - deepseek_v3 -> deepseek2: kv_b_proj split per head into attn_k_b (each
    head's key part transposed) and attn_v_b, MLA written as MQA, YaRN's
    mscale_all_dim as 0.1 x yarn_log_multiplier;
  - gpt_oss -> gpt-oss: gate_up_proj [experts, hidden, 2 ff] transposed and
    de-interleaved into ffn_gate_exps / ffn_up_exps (and their biases),
    down_proj transposed, sinks as attn_sinks.weight;

this script writes the GGUF file as llama.cpp's converter does
(conversion/deepseek.py, conversion/gpt_oss.py), written here from those
rules, not from WARP's importer. WARP converts both; their logits must be
equal bit for bit, and within 1e-4 of the fixture's reference logits with
the same greedy continuation.

  release_equivalence_test.py --computed BUILD/bin/computed [--keep DIR]
"""

import argparse
import array
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gguf_file import GgufWriter, GGML_F32, GGML_BF16, STRING, U32, F32, BOOL  # noqa: E402

FIXTURES = os.path.join(HERE, "..", "fixtures")
CASES = ["deepseek_v3_yarn_f32", "deepseek_v3_noqlora_f32", "gpt_oss_yarn_truncate_f32"]
TOLERANCE = 1e-4


def read_safetensors(fixture):
    """name -> (numpy array of the raw dtype: float32, or uint16 for BF16 bits, ggml type),
    from every *.safetensors file of the fixture."""
    out = {}
    for file in sorted(os.listdir(fixture)):
        if file.endswith(".safetensors"):
            out.update(read_safetensors_file(os.path.join(fixture, file)))
    return out


def read_safetensors_file(path):
    with open(path, "rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        dtype, kind = {"F32": (np.float32, GGML_F32), "BF16": (np.uint16, GGML_BF16)}[info["dtype"]]
        out[name] = (np.frombuffer(data[begin:end], dtype=dtype).reshape(info["shape"]), kind)
    return out


class Gguf:
    """A GGUF file in the making: arrays given outermost first, as numpy holds them."""

    def __init__(self, arch):
        self.arch, self.w = arch, GgufWriter()
        self.w.add("general.architecture", STRING, arch)

    def uint(self, key, value):
        self.w.add(f"{self.arch}.{key}", U32, int(value))

    def float(self, key, value):
        self.w.add(f"{self.arch}.{key}", F32, float(value))

    def tensor(self, name, values, kind):
        values = np.ascontiguousarray(values)
        self.w.add_tensor(name, list(reversed(values.shape)), kind, values.tobytes())


def common_keys(g, c):
    g.uint("block_count", c["num_hidden_layers"])
    g.uint("context_length", c["max_position_embeddings"])
    g.uint("embedding_length", c["hidden_size"])
    g.uint("attention.head_count", c["num_attention_heads"])
    g.uint("expert_used_count", c["num_experts_per_tok"])
    g.float("attention.layer_norm_rms_epsilon", c["rms_norm_eps"])
    g.float("rope.freq_base", c["rope_theta"])
    scaling = c.get("rope_scaling")
    if scaling:
        g.w.add(f"{g.arch}.rope.scaling.type", STRING, "yarn")
        g.float("rope.scaling.factor", scaling["factor"])
        g.uint("rope.scaling.original_context_length", scaling["original_max_position_embeddings"])


def outer(w, g):
    g.tensor("token_embd.weight", *w["model.embed_tokens.weight"])
    g.tensor("output_norm.weight", *w["model.norm.weight"])
    g.tensor("output.weight", *w["lm_head.weight"])


def deepseek2(c, w):
    """conversion/deepseek.py's DeepseekV2Model."""
    g = Gguf("deepseek2")
    common_keys(g, c)
    heads, nope, rope, v = (c["num_attention_heads"], c["qk_nope_head_dim"],
                            c["qk_rope_head_dim"], c["v_head_dim"])
    lora = c["kv_lora_rank"]
    g.uint("attention.head_count_kv", 1)
    if c.get("q_lora_rank"):
        g.uint("attention.q_lora_rank", c["q_lora_rank"])
    g.uint("attention.kv_lora_rank", lora)
    g.uint("attention.key_length", lora + rope)
    g.uint("attention.value_length", lora)
    g.uint("attention.key_length_mla", nope + rope)
    g.uint("attention.value_length_mla", v)
    g.uint("rope.dimension_count", rope)
    g.uint("leading_dense_block_count", c["first_k_dense_replace"])
    g.uint("feed_forward_length", c["intermediate_size"])
    g.uint("expert_feed_forward_length", c["moe_intermediate_size"])
    g.uint("expert_count", c["n_routed_experts"])
    g.uint("expert_shared_count", c["n_shared_experts"])
    g.uint("expert_group_count", c["n_group"])
    g.uint("expert_group_used_count", c["topk_group"])
    g.uint("expert_gating_func", 2)  # sigmoid
    g.float("expert_weights_scale", c["routed_scaling_factor"])
    if c.get("norm_topk_prob"):
        g.w.add("deepseek2.expert_weights_norm", BOOL, True)
    if c.get("rope_scaling"):
        g.float("rope.scaling.yarn_log_multiplier", 0.1 * c["rope_scaling"]["mscale_all_dim"])
    outer(w, g)
    names = {"input_layernorm": "attn_norm", "self_attn.q_a_proj": "attn_q_a",
             "self_attn.q_a_layernorm": "attn_q_a_norm", "self_attn.q_b_proj": "attn_q_b",
             "self_attn.q_proj": "attn_q", "self_attn.kv_a_proj_with_mqa": "attn_kv_a_mqa",
             "self_attn.kv_a_layernorm": "attn_kv_a_norm", "self_attn.o_proj": "attn_output",
             "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate",
             "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down", "mlp.gate": "ffn_gate_inp",
             "mlp.shared_experts.gate_proj": "ffn_gate_shexp",
             "mlp.shared_experts.up_proj": "ffn_up_shexp",
             "mlp.shared_experts.down_proj": "ffn_down_shexp"}
    experts = c["n_routed_experts"]
    for layer in range(c["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        for hf, stem in names.items():
            if p + hf + ".weight" in w:
                g.tensor(f"blk.{layer}.{stem}.weight", *w[p + hf + ".weight"])
        kv_b, kind = w[p + "self_attn.kv_b_proj.weight"]
        kv_b = kv_b.reshape(heads, nope + v, lora)
        g.tensor(f"blk.{layer}.attn_k_b.weight", kv_b[:, :nope, :].transpose(0, 2, 1), kind)
        g.tensor(f"blk.{layer}.attn_v_b.weight", kv_b[:, nope:, :], kind)
        if p + "mlp.gate.e_score_correction_bias" in w:
            g.tensor(f"blk.{layer}.exp_probs_b.bias", *w[p + "mlp.gate.e_score_correction_bias"])
            for matrix, stem in (("gate_proj", "ffn_gate_exps"), ("up_proj", "ffn_up_exps"),
                                 ("down_proj", "ffn_down_exps")):
                stacked = [w[f"{p}mlp.experts.{e}.{matrix}.weight"] for e in range(experts)]
                g.tensor(f"blk.{layer}.{stem}.weight", np.stack([s[0] for s in stacked]),
                         stacked[0][1])
    return g


def gpt_oss(c, w):
    """conversion/gpt_oss.py's GptOssModel (for a release stored as values, not MXFP4)."""
    g = Gguf("gpt-oss")
    common_keys(g, c)
    g.uint("attention.head_count_kv", c["num_key_value_heads"])
    g.uint("attention.key_length", c["head_dim"])
    g.uint("attention.value_length", c["head_dim"])
    g.uint("attention.sliding_window", c["sliding_window"])
    g.uint("expert_count", c["num_local_experts"])
    g.uint("expert_feed_forward_length", c["intermediate_size"])
    g.uint("feed_forward_length", c["intermediate_size"])
    outer(w, g)
    layer_types = c["layer_types"]
    assert all(t == ("sliding_attention" if i % 2 == 0 else "full_attention")
               for i, t in enumerate(layer_types)), "llama.cpp's default pattern only"
    names = {"input_layernorm": "attn_norm", "post_attention_layernorm": "post_attention_norm",
             "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
             "mlp.router": "ffn_gate_inp"}
    for layer in range(c["num_hidden_layers"]):
        p, b = f"model.layers.{layer}.", f"blk.{layer}."
        for hf, stem in names.items():
            for suffix in ("weight", "bias"):
                if f"{p}{hf}.{suffix}" in w:
                    g.tensor(f"{b}{stem}.{suffix}", *w[f"{p}{hf}.{suffix}"])
        g.tensor(b + "attn_sinks.weight", *w[p + "self_attn.sinks"])
        gate_up, kind = w[p + "mlp.experts.gate_up_proj"]  # [experts, hidden, 2 ff]
        gate_up = gate_up.transpose(0, 2, 1)
        g.tensor(b + "ffn_gate_exps.weight", gate_up[:, ::2, :], kind)
        g.tensor(b + "ffn_up_exps.weight", gate_up[:, 1::2, :], kind)
        bias, bias_kind = w[p + "mlp.experts.gate_up_proj_bias"]  # [experts, 2 ff]
        g.tensor(b + "ffn_gate_exps.bias", bias[:, ::2], bias_kind)
        g.tensor(b + "ffn_up_exps.bias", bias[:, 1::2], bias_kind)
        down, kind = w[p + "mlp.experts.down_proj"]  # [experts, ff, hidden]
        g.tensor(b + "ffn_down_exps.weight", down.transpose(0, 2, 1), kind)
        g.tensor(b + "ffn_down_exps.bias", *w[p + "mlp.experts.down_proj_bias"])
    return g


CONVERTERS = {"deepseek_v3": deepseek2, "gpt_oss": gpt_oss}


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}\n{result.stdout}\n{result.stderr}")
    return result.stdout


def logits_of(computed, source, warp, tokens, greedy):
    run([computed, "convert", "--quiet", source, warp])
    out = warp + ".logits"
    continuation = run([computed, "logits", warp, "--tokens", tokens, "--out", out,
                        "--greedy", str(greedy)]).strip()
    with open(out, "rb") as f:
        return f.read(), continuation


def check(computed, case, work):
    fixture = os.path.join(FIXTURES, case)
    with open(os.path.join(fixture, "config.json")) as f:
        config = json.load(f)
    weights = read_safetensors(fixture)
    gguf = os.path.join(work, case + ".gguf")
    CONVERTERS[config["model_type"]](config, weights).w.write(gguf)
    with open(os.path.join(fixture, "tokens.txt")) as f:
        tokens = f.read().strip()
    with open(os.path.join(fixture, "greedy.txt")) as f:
        greedy = f.read().strip()
    steps = len(greedy.split(","))
    release, release_greedy = logits_of(computed, fixture, os.path.join(work, case + ".warp"),
                                        tokens, steps)
    converted, converted_greedy = logits_of(computed, gguf, os.path.join(work, case + "-gguf.warp"),
                                            tokens, steps)
    if converted != release:
        return f"{case}: logits from the GGUF differ from the release's"
    reference = array.array("f")
    with open(os.path.join(fixture, "logits.f32"), "rb") as f:
        reference.frombytes(f.read())
    mine = array.array("f")
    mine.frombytes(converted)
    worst = max(abs(a - b) for a, b in zip(mine, reference))
    if len(mine) != len(reference) or not worst <= TOLERANCE:
        return f"{case}: max |logit - reference| {worst:.3g} > {TOLERANCE}"
    if converted_greedy != greedy or release_greedy != greedy:
        return f"{case}: greedy {converted_greedy}, reference {greedy}"
    print(f"  {case}: GGUF = release bit for bit; max |logit - reference| {worst:.3g}; "
          f"greedy identical ({greedy})")
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--computed", required=True)
    parser.add_argument("--keep", help="work directory to keep (default: a removed temp dir)")
    args = parser.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="warp-gguf-release-")
    os.makedirs(work, exist_ok=True)
    try:
        failures = [f for f in (check(args.computed, case, work) for case in CASES) if f]
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if failures:
        sys.exit("FAILED:\n" + "\n".join(failures))
    print("OK")


if __name__ == "__main__":
    main()
