#!/usr/bin/python3
"""Generate the golden MoE fixtures in tests/fixtures/<variant>/.

Run from the repository root (Debian torch 1.13 + numpy, no other deps):

    /usr/bin/python3 tests/reference/make_fixtures.py                  # every variant
    /usr/bin/python3 tests/reference/make_fixtures.py gpt_oss_bf16 ...  # only these (manifest merged)

For every variant this writes

    config.json            HF-style config (model_type, architectures, torch_dtype, ...)
    model.safetensors      weights (or model-0000{1,2}-of-00002.safetensors +
                           model.safetensors.index.json for the split variant)
    tokens.txt             prompt token ids, comma separated (24 tokens; deepseek_v4: 64)
    logits.f32             float32 LE [n_prompt][vocab] logits of ONE prefill of tokens.txt
    greedy.txt             16 greedy tokens after the prompt (each step = full recompute)
    routing.json           (debug aid) chosen experts / weights per MoE layer per prompt position

plus tests/fixtures/manifest.json with seeds, sizes and the measured margins.

Determinism: every variant has a fixed base seed; weights and tokens come from
``torch.Generator`` seeded with (base seed + attempt).  An attempt is rejected
(and the next seed tried) unless, over the full prompt+greedy sequence:
  * top-1 vs top-2 logit margin  > LOGIT_MARGIN at every position,
  * k-th vs (k+1)-th routing-criterion margin > ROUTE_MARGIN at every MoE
    layer/position (and the group-selection margin for group-limited routing),
  * at least half of the experts of every MoE layer are used somewhere,
  * group routing selects the same experts whether excluded groups are
    filled with -inf (DeepSeek reference) or 0.0 (HF masked_fill(..., 0.0)),
  * greedy output has >= 4 distinct tokens and never emits eos_token_id.
After writing, every fixture is re-loaded from disk with an independent
safetensors reader (models.load_checkpoint) and recomputed; the result must
match what was written bit-for-bit.

The forward pass lives in models.py (float32, eager causal attention).
"""

from __future__ import annotations

import copy
import json
import math
import os
import shutil
import struct
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import models  # noqa: E402
import deepseek_v4  # noqa: E402  (a family module: models.FAMILY_MODULES)
import glm5_next  # noqa: E402  (a family module: models.FAMILY_MODULES)
import deepseek_v41  # noqa: E402  (a family module: models.FAMILY_MODULES)

OUT_ROOT = os.path.normpath(os.path.join(HERE, "..", "fixtures"))
N_PROMPT = 24
N_GREEDY = 16
LOGIT_MARGIN = 1e-2   # stricter than the 1e-3 required
ROUTE_MARGIN = 1e-3   # stricter than the 1e-4 required
MAX_ATTEMPTS = 2000

torch.set_num_threads(1)  # bitwise reproducibility of CPU matmuls

# ---------------------------------------------------------------------------
# safetensors writer
# ---------------------------------------------------------------------------

_DT_SIZE = {"I64": 8, "F32": 4, "BF16": 2, "F16": 2, "F8_E4M3": 1, "U8": 1, "I8": 1, "F8_E8M0": 1}


def write_safetensors(path: str, tensors: dict):
    """tensors: {name: (dtype_str, np.ndarray already in storage dtype)}.

    Layout as the reference Rust implementation writes it: tensors sorted by
    (dtype alignment descending, name), packed back to back; header JSON padded
    with spaces to a multiple of 8 bytes.
    """
    order = sorted(tensors, key=lambda n: (-_DT_SIZE[tensors[n][0]], n))
    header = {}
    blobs = []
    off = 0
    for name in order:
        dt, arr = tensors[name]
        raw = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
        assert len(raw) == int(np.prod(arr.shape)) * _DT_SIZE[dt]
        header[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    header["__metadata__"] = {"format": "pt"}
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * ((-len(hjson)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for b in blobs:
            f.write(b)
    return off


# ---------------------------------------------------------------------------
# Variants
# ---------------------------------------------------------------------------

COMMON = {
    "vocab_size": 256,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "hidden_act": "silu",
    "max_position_embeddings": 64,
    "initializer_range": 0.02,
    "attention_dropout": 0.0,
    "use_cache": True,
    "tie_word_embeddings": False,
    "bos_token_id": 0,
    "eos_token_id": 1,
}

DS_BASE = {
    **COMMON,
    "model_type": "deepseek_v3",
    "architectures": ["DeepseekV3ForCausalLM"],
    "num_hidden_layers": 3,
    "intermediate_size": 160,
    "moe_intermediate_size": 32,
    "q_lora_rank": 32,
    "kv_lora_rank": 32,
    "qk_nope_head_dim": 16,
    "qk_rope_head_dim": 16,
    "v_head_dim": 32,
    "num_key_value_heads": 4,
    "n_routed_experts": 16,
    "n_shared_experts": 1,
    "num_experts_per_tok": 4,
    "n_group": 4,
    "topk_group": 2,
    "first_k_dense_replace": 1,
    "moe_layer_freq": 1,
    "routed_scaling_factor": 2.5,
    "norm_topk_prob": True,
    "topk_method": "noaux_tc",
    "scoring_func": "sigmoid",
    "rope_theta": 10000.0,
    "rope_scaling": None,
    "rope_interleave": True,
    "attention_bias": False,
    "rms_norm_eps": 1e-6,
    "num_nextn_predict_layers": 0,
    "ep_size": 1,
}

QWEN_BASE = {
    **COMMON,
    "model_type": "qwen3_moe",
    "architectures": ["Qwen3MoeForCausalLM"],
    "num_hidden_layers": 3,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "intermediate_size": 96,
    "moe_intermediate_size": 32,
    "num_experts": 16,
    "num_experts_per_tok": 4,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [0],
    "norm_topk_prob": True,
    "rope_theta": 1000000.0,
    "rope_scaling": None,
    "rms_norm_eps": 1e-6,
    "attention_bias": False,
    "use_sliding_window": False,
    "sliding_window": None,
    "max_window_layers": 3,
    "router_aux_loss_coef": 0.001,
    "output_router_logits": False,
}

GLM_BASE = {
    **COMMON,
    "model_type": "glm4_moe",
    "architectures": ["Glm4MoeForCausalLM"],
    "num_hidden_layers": 3,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "partial_rotary_factor": 0.5,
    "attention_bias": True,
    "use_qk_norm": True,
    "intermediate_size": 96,
    "moe_intermediate_size": 32,
    "n_routed_experts": 8,
    "n_shared_experts": 1,
    "num_experts_per_tok": 2,
    "n_group": 1,
    "topk_group": 1,
    "first_k_dense_replace": 1,
    "routed_scaling_factor": 2.5,
    "norm_topk_prob": True,
    "rope_theta": 1000000.0,
    "rope_scaling": None,
    "rms_norm_eps": 1e-5,
    "num_nextn_predict_layers": 0,
}

MIXTRAL_BASE = {
    **COMMON,
    "model_type": "mixtral",
    "architectures": ["MixtralForCausalLM"],
    "num_hidden_layers": 3,
    "num_key_value_heads": 2,
    "intermediate_size": 32,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "rope_theta": 1000000.0,
    "rms_norm_eps": 1e-5,
    "sliding_window": None,
    "router_jitter_noise": 0.0,
    "router_aux_loss_coef": 0.02,
    "output_router_logits": False,
}


# gpt-oss: key set and order of the openai/gpt-oss-20b config.json, shrunk.
GPTOSS_BASE = {
    "architectures": ["GptOssForCausalLM"],
    "attention_bias": True,
    "attention_dropout": 0.0,
    "bos_token_id": 0,
    "eos_token_id": 1,
    "experts_per_token": 2,
    "head_dim": 16,
    "hidden_act": "silu",
    "hidden_size": 64,
    "initial_context_length": 256,
    "initializer_range": 0.02,
    "intermediate_size": 64,
    "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
    "max_position_embeddings": 1024,
    "model_type": "gpt_oss",
    "num_attention_heads": 4,
    "num_experts_per_tok": 2,
    "num_hidden_layers": 4,
    "num_key_value_heads": 2,
    "num_local_experts": 8,
    "output_router_logits": False,
    "rms_norm_eps": 1e-05,
    "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 4.0,
                     "original_max_position_embeddings": 256, "rope_type": "yarn", "truncate": False},
    "rope_theta": 150000.0,
    "router_aux_loss_coef": 0.9,
    "sliding_window": 8,
    "swiglu_limit": 7.0,
    "tie_word_embeddings": False,
    "use_cache": True,
    "vocab_size": 256,
}

# quantization_config of the openai/gpt-oss-{20,120}b release (config.json), verbatim
MXFP4_QUANT_CONFIG = {
    "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                               "model.embed_tokens", "lm_head"],
    "quant_method": "mxfp4",
}


# Kimi-Linear: key set of the moonshotai/Kimi-Linear-48B-A3B release config.json (key-sorted like it),
# shrunk. linear_attn_config layer lists are 1-based: layers 0,1,2,4 are KDA, layer 3 is MLA.
KIMI_LINEAR_BASE = {
    "architectures": ["KimiLinearForCausalLM"],
    "auto_map": {"AutoConfig": "configuration_kimi.KimiLinearConfig",
                 "AutoModel": "modeling_kimi.KimiLinearModel",
                 "AutoModelForCausalLM": "modeling_kimi.KimiLinearForCausalLM"},
    "bos_token_id": 0,
    "eos_token_id": 1,
    "first_k_dense_replace": 1,
    "head_dim": 16,
    "hidden_act": "silu",
    "hidden_size": 64,
    "initializer_range": 0.02,
    "intermediate_size": 128,
    "kv_lora_rank": 32,
    "linear_attn_config": {"full_attn_layers": [4], "head_dim": 16, "kda_layers": [1, 2, 3, 5],
                           "num_heads": 4, "short_conv_kernel_size": 4},
    "mla_use_nope": True,
    "model_max_length": 64,
    "model_type": "kimi_linear",
    "moe_intermediate_size": 32,
    "moe_layer_freq": 1,
    "moe_renormalize": True,
    "moe_router_activation_func": "sigmoid",
    "num_attention_heads": 4,
    "num_expert_group": 1,
    "num_experts": 16,
    "num_experts_per_token": 4,
    "num_hidden_layers": 5,
    "num_key_value_heads": 4,
    "num_nextn_predict_layers": 0,
    "num_shared_experts": 1,
    "pad_token_id": 255,
    "q_lora_rank": None,
    "qk_nope_head_dim": 16,
    "qk_rope_head_dim": 16,
    "rms_norm_eps": 1e-05,
    "rope_scaling": None,
    "rope_theta": 10000.0,
    "routed_scaling_factor": 2.446,
    "tie_word_embeddings": False,
    "topk_group": 1,
    "transformers_version": "4.57.0",
    "use_cache": True,
    "use_grouped_topk": True,
    "v_head_dim": 32,
    "vocab_size": 256,
}


# Kimi-K3: the key set of the moonshotai/Kimi-K3 release config.json (top level + text_config, as far as
# public copies of it show), shrunk. 1-based layer lists: layers 0,1,3 KDA, layers 2,4 MLA (the last layer is
# MLA, as in the release); attn_res_block_size 2 banks the inputs of layers 0, 2 and 4.
KIMI_K3_TEXT = {
    "activation_situ_beta": 4.0,
    "activation_situ_linear_beta": 25.0,
    "attn_res_block_size": 2,
    "bos_token_id": 0,
    "eos_token_id": 1,
    "first_k_dense_replace": 1,
    "hidden_act": "situ",
    "hidden_size": 64,
    "intermediate_size": 96,
    "kv_lora_rank": 32,
    "latent_moe_use_norm": True,
    "linear_attn_config": {"full_attn_layers": [3, 5], "gate_lower_bound": -5.0, "head_dim": 16,
                           "kda_layers": [1, 2, 4], "num_heads": 4, "short_conv_kernel_size": 4,
                           "use_full_rank_gate": True},
    "max_position_embeddings": 4096,  # NoPE MLA and KDA: a label; chat tests need > 64
    "mla_use_nope": True,
    "mla_use_output_gate": True,
    "model_type": "kimi_linear",
    "moe_intermediate_size": 64,
    "moe_layer_freq": 1,
    "moe_renormalize": True,
    "moe_router_activation_func": "sigmoid",
    "num_attention_heads": 4,
    "num_expert_group": 1,
    "num_experts": 16,
    "num_experts_per_token": 4,
    "num_hidden_layers": 5,
    "num_key_value_heads": 4,
    "num_nextn_predict_layers": 0,
    "num_shared_experts": 2,
    "pad_token_id": 255,
    "q_lora_rank": 32,
    "qk_nope_head_dim": 16,
    "qk_rope_head_dim": 16,
    "rms_norm_eps": 1e-05,
    "routed_expert_hidden_size": 32,
    "routed_scaling_factor": 1.0,
    "tie_word_embeddings": False,
    "topk_group": 1,
    "topk_method": "noaux_tc",
    "use_grouped_topk": True,
    "v_head_dim": 32,
    "vocab_size": 256,
}
KIMI_K3_BASE = {
    "architectures": ["KimiK3ForConditionalGeneration"],
    "bos_token_id": 0,
    "eos_token_id": 1,
    "media_placeholder_token_id": 254,
    "model_type": "kimi_k3",
    "pad_token_id": 255,
    "text_config": KIMI_K3_TEXT,
    "tie_word_embeddings": False,
    "vision_config": {"model_type": "kimi_k3_vision", "patch_size": 14, "vt_hidden_size": 1152},
}
# compressed-tensors quantization_config of the release (text_config.quantization_config), as public copies
# of it show it (the "observer" entry differs between the copies: minmax / null)
K3_QUANT_CONFIG = {
    "config_groups": {"group_0": {
        "format": "mxfp4-pack-quantized", "input_activations": None, "output_activations": None,
        "targets": ["Linear"],
        "weights": {"actorder": None, "block_structure": None, "dynamic": False, "group_size": 32, "num_bits": 4,
                    "observer": "minmax", "observer_kwargs": {}, "scale_dtype": "torch.uint8", "strategy": "group",
                    "symmetric": True, "type": "float", "zp_dtype": None}}},
    "format": "mxfp4-pack-quantized",
    "global_compression_ratio": None,
    "ignore": ["re:.*self_attn.*", "re:.*shared_experts.*", "re:.*mlp\\.(gate|up|gate_up|down)_proj.*",
               "re:.*lm_head.*", "re:.*vision_tower.*", "re:.*mm_projector.*"],
    "kv_cache_scheme": None,
    "quant_method": "compressed-tensors",
    "quantization_status": "compressed",
}


def _v(name, base, storage, seed, split=False, **over):
    cfg = copy.deepcopy(base)
    cfg.update(over)
    if cfg["model_type"] == "kimi_k3":  # hyper-parameters live in text_config
        tc = cfg["text_config"]
        tc.update(over.pop("text", {}))
        tc["dtype"] = "bfloat16"
        if storage == "mxfp4ct":
            tc["quantization_config"] = copy.deepcopy(K3_QUANT_CONFIG)
        cfg.pop("text", None)
        cfg["text_config"] = dict(sorted(tc.items()))
        cfg = dict(sorted(cfg.items()))
        return {"name": name, "config": cfg, "storage": storage, "seed": seed, "split": split}
    cfg["torch_dtype"] = {"f32": "float32", "bf16": "bfloat16", "fp8": "bfloat16", "mxfp4": "bfloat16"}[storage]
    if storage == "fp8":
        cfg["quantization_config"] = {"quant_method": "fp8", "fmt": "e4m3",
                                      "weight_block_size": [128, 128], "activation_scheme": "dynamic"}
    if storage == "mxfp4":
        cfg["quantization_config"] = copy.deepcopy(MXFP4_QUANT_CONFIG)
    if cfg["model_type"] == "kimi_linear":  # the release says "dtype" (transformers >= 4.56), not torch_dtype
        cfg["dtype"] = cfg.pop("torch_dtype")
    if cfg["model_type"] in ("gpt_oss", "kimi_linear"):
        cfg = dict(sorted(cfg.items()))  # the release config.json is key-sorted
    return {"name": name, "config": cfg, "storage": storage, "seed": seed, "split": split}


VARIANTS = [
    _v("deepseek_v3_f32", DS_BASE, "f32", 1000),
    _v("deepseek_v3_bf16", DS_BASE, "bf16", 2000),
    _v("deepseek_v3_yarn_f32", DS_BASE, "f32", 3000,
       n_routed_experts=8, num_experts_per_tok=2, n_group=2, topk_group=1, n_shared_experts=2,
       rope_theta=1000.0, max_position_embeddings=64,
       rope_scaling={"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16,
                     "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}),
    _v("deepseek_v3_fp8", DS_BASE, "fp8", 4000),
    _v("deepseek_v3_noqlora_f32", DS_BASE, "f32", 5000, split=True,
       q_lora_rank=None, n_routed_experts=8, num_experts_per_tok=2, n_group=1, topk_group=1,
       routed_scaling_factor=2.827),
    _v("qwen3_moe_f32", QWEN_BASE, "f32", 6000),
    _v("qwen3_moe_bf16", QWEN_BASE, "bf16", 7000),
    _v("qwen3_moe_nonorm_f32", QWEN_BASE, "f32", 8000,
       num_hidden_layers=4, num_experts=8, num_experts_per_tok=2, norm_topk_prob=False,
       mlp_only_layers=[], decoder_sparse_step=2, intermediate_size=64, max_window_layers=4),
    _v("glm4_moe_f32", GLM_BASE, "f32", 9000),
    _v("mixtral_f32", MIXTRAL_BASE, "f32", 10000),
    _v("gpt_oss_bf16", GPTOSS_BASE, "bf16", 11000),
    _v("gpt_oss_mxfp4", GPTOSS_BASE, "mxfp4", 12000,
       num_hidden_layers=3, layer_types=["sliding_attention", "full_attention", "sliding_attention"],
       num_local_experts=16, num_experts_per_tok=4, experts_per_token=4),
    _v("gpt_oss_yarn_truncate_f32", GPTOSS_BASE, "f32", 13000,
       num_hidden_layers=3, layer_types=["sliding_attention", "full_attention", "sliding_attention"],
       intermediate_size=32, rope_theta=1000.0, initial_context_length=16, max_position_embeddings=64,
       rope_scaling={"beta_fast": 32.0, "beta_slow": 1.0, "factor": 4.0,
                     "original_max_position_embeddings": 16, "rope_type": "yarn", "truncate": True}),
    _v("kimi_linear_bf16", KIMI_LINEAR_BASE, "bf16", 14000),
    _v("kimi_k3_bf16", KIMI_K3_BASE, "bf16", 15000),
    _v("kimi_k3_mxfp4", KIMI_K3_BASE, "mxfp4ct", 16000),
    # family modules generate their own configs / weights / storage (n_prompt: their own prompt length)
    {"name": "deepseek_v4_bf16", "config": deepseek_v4.variant_config("bf16"), "storage": "bf16", "seed": 17000,
     "split": False, "n_prompt": deepseek_v4.N_PROMPT},
    {"name": "deepseek_v4_native", "config": deepseek_v4.variant_config("native"), "storage": "native",
     "seed": 18000, "split": False, "n_prompt": deepseek_v4.N_PROMPT},
    {"name": "glm5_next_bf16", "config": glm5_next.variant_config("bf16"), "storage": "bf16", "seed": 19000,
     "split": False, "n_prompt": glm5_next.N_PROMPT},
    {"name": "deepseek_v41_native", "config": deepseek_v41.variant_config("native"), "storage": "native",
     "seed": 20000, "split": False, "n_prompt": deepseek_v41.N_PROMPT},
    {"name": "deepseek_v41_noengram", "config": deepseek_v41.variant_config("native", engram=False),
     "storage": "native", "seed": 21000, "split": False, "n_prompt": deepseek_v41.N_PROMPT},
]

# gpt-oss weight scales: the expert gate_up projection has output std ~GPTOSS_GATE_UP_STD, so
# the swiglu_limit 7.0 clamps are hit (see manifest "clamp"); sinks have std 1 around +1.
GPTOSS_GATE_UP_STD = 3.0
GPTOSS_DOWN_SCALE = 0.2

# ---------------------------------------------------------------------------
# Weight generation (float32 master copy, in checkpoint order)
# ---------------------------------------------------------------------------


def gen_weights(cfg: dict, g: torch.Generator) -> dict:
    fam = models.family_module(cfg)
    if fam is not None:
        return fam.gen_weights(cfg, g)
    mt = cfg["model_type"]
    if mt == "kimi_k3":
        return gen_weights_kimi_k3(cfg, g)
    Hd, V, H = cfg["hidden_size"], cfg["vocab_size"], cfg["num_attention_heads"]
    w = {}

    def lin(name, out_f, in_f, scale=1.0):
        w[name] = torch.randn(out_f, in_f, generator=g) * (scale / math.sqrt(in_f))

    def norm(name, n):
        w[name] = 0.9 + 0.2 * torch.rand(n, generator=g)

    def vec(name, n, std):
        w[name] = torch.randn(n, generator=g) * std

    def mlp3(prefix, inter, names=("gate_proj", "up_proj", "down_proj")):
        lin(f"{prefix}.{names[0]}.weight", inter, Hd)
        lin(f"{prefix}.{names[1]}.weight", inter, Hd)
        lin(f"{prefix}.{names[2]}.weight", Hd, inter)

    w["model.embed_tokens.weight"] = torch.randn(V, Hd, generator=g)
    if mt == "gpt_oss":
        return gen_weights_gpt_oss(cfg, g, w, lin, norm, vec)
    if mt == "kimi_linear":
        return gen_weights_kimi_linear(cfg, g, w, lin, norm, vec, mlp3)
    model = models.ReferenceModel.__new__(models.ReferenceModel)
    model.c, model.mt = cfg, mt
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        norm(p + "input_layernorm.weight", Hd)
        a = p + "self_attn."
        if mt == "deepseek_v3":
            dn, dr, dv, r = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"], cfg["kv_lora_rank"]
            if cfg["q_lora_rank"] is None:
                lin(a + "q_proj.weight", H * (dn + dr), Hd)
            else:
                lin(a + "q_a_proj.weight", cfg["q_lora_rank"], Hd)
                norm(a + "q_a_layernorm.weight", cfg["q_lora_rank"])
                lin(a + "q_b_proj.weight", H * (dn + dr), cfg["q_lora_rank"])
            lin(a + "kv_a_proj_with_mqa.weight", r + dr, Hd)
            norm(a + "kv_a_layernorm.weight", r)
            lin(a + "kv_b_proj.weight", H * (dn + dv), r)
            lin(a + "o_proj.weight", Hd, H * dv)
        else:
            D = cfg.get("head_dim") or Hd // H
            KV = cfg["num_key_value_heads"]
            lin(a + "q_proj.weight", H * D, Hd)
            lin(a + "k_proj.weight", KV * D, Hd)
            lin(a + "v_proj.weight", KV * D, Hd)
            if mt == "glm4_moe" and cfg["attention_bias"]:
                vec(a + "q_proj.bias", H * D, 0.1)
                vec(a + "k_proj.bias", KV * D, 0.1)
                vec(a + "v_proj.bias", KV * D, 0.1)
            lin(a + "o_proj.weight", Hd, H * D)
            if mt == "qwen3_moe" or (mt == "glm4_moe" and cfg.get("use_qk_norm")):
                norm(a + "q_norm.weight", D)
                norm(a + "k_norm.weight", D)
        norm(p + "post_attention_layernorm.weight", Hd)
        if not model.is_moe_layer(i):
            mlp3(p + "mlp", cfg["intermediate_size"])
        elif mt == "mixtral":
            E = cfg["num_local_experts"]
            lin(p + "block_sparse_moe.gate.weight", E, Hd, scale=2.0)
            for e in range(E):
                mlp3(f"{p}block_sparse_moe.experts.{e}", cfg["intermediate_size"], ("w1", "w3", "w2"))
        elif mt == "qwen3_moe":
            E = cfg["num_experts"]
            lin(p + "mlp.gate.weight", E, Hd, scale=2.0)
            for e in range(E):
                mlp3(f"{p}mlp.experts.{e}", cfg["moe_intermediate_size"])
        else:
            E = cfg["n_routed_experts"]
            lin(p + "mlp.gate.weight", E, Hd, scale=2.0)
            vec(p + "mlp.gate.e_score_correction_bias", E, 0.05)
            for e in range(E):
                mlp3(f"{p}mlp.experts.{e}", cfg["moe_intermediate_size"])
            mlp3(p + "mlp.shared_experts", cfg["moe_intermediate_size"] * cfg["n_shared_experts"])
    norm("model.norm.weight", Hd)
    lin("lm_head.weight", V, Hd, scale=2.0)
    return w


def gen_weights_gpt_oss(cfg, g, w, lin, norm, vec):
    """HF gpt-oss names and (dequantised) layout; experts are fused 3-D tensors:
    gate_up_proj [E, hidden, 2I] (columns interleaved gate, up, gate, up, ...), gate_up_proj_bias [E, 2I],
    down_proj [E, I, hidden], down_proj_bias [E, hidden]."""
    Hd, H, KV, D = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    E, I = cfg["num_local_experts"], cfg["intermediate_size"]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        norm(p + "input_layernorm.weight", Hd)
        a = p + "self_attn."
        lin(a + "q_proj.weight", H * D, Hd)
        vec(a + "q_proj.bias", H * D, 0.2)
        lin(a + "k_proj.weight", KV * D, Hd)
        vec(a + "k_proj.bias", KV * D, 0.2)
        lin(a + "v_proj.weight", KV * D, Hd)
        vec(a + "v_proj.bias", KV * D, 0.2)
        lin(a + "o_proj.weight", Hd, H * D)
        vec(a + "o_proj.bias", Hd, 0.2)
        w[a + "sinks"] = 1.0 + torch.randn(H, generator=g)
        norm(p + "post_attention_layernorm.weight", Hd)
        m = p + "mlp."
        lin(m + "router.weight", E, Hd, scale=2.0)
        vec(m + "router.bias", E, 0.2)
        w[m + "experts.gate_up_proj"] = torch.randn(E, Hd, 2 * I, generator=g) * (GPTOSS_GATE_UP_STD / math.sqrt(Hd))
        vec(m + "experts.gate_up_proj_bias", E * 2 * I, 0.5)
        w[m + "experts.gate_up_proj_bias"] = w[m + "experts.gate_up_proj_bias"].view(E, 2 * I)
        w[m + "experts.down_proj"] = torch.randn(E, I, Hd, generator=g) * (GPTOSS_DOWN_SCALE / math.sqrt(I))
        vec(m + "experts.down_proj_bias", E * Hd, 0.1)
        w[m + "experts.down_proj_bias"] = w[m + "experts.down_proj_bias"].view(E, Hd)
    norm("model.norm.weight", Hd)
    lin("lm_head.weight", cfg["vocab_size"], Hd, scale=2.0)
    return w


# KDA decay calibration: A = exp(A_log) ~ U(1, 16) as in the remote code's init; dt_bias ~ N(KDA_DT_MEAN, 1)
# puts softplus(g + dt_bias) around 0.02-0.3, so the per-step decay exp(-A softplus(.)) spreads over (0, 1)
# instead of collapsing to 0 (see manifest "kda_decay").
KDA_DT_MEAN = -4.0
KIMI_LATENT_SCALE = 0.004


def gen_weights_kimi_linear(cfg, g, w, lin, norm, vec, mlp3):
    """Moonshot checkpoint names and shapes (modeling_kimi.py); nn.Linear weights are [out, in]."""
    Hd, H = cfg["hidden_size"], cfg["num_attention_heads"]
    lac = cfg["linear_attn_config"]
    KH, KD, W = lac["num_heads"], lac["head_dim"], lac["short_conv_kernel_size"]
    P = KH * KD
    dn, dr, dv, r = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"], cfg["kv_lora_rank"]
    model = models.ReferenceModel.__new__(models.ReferenceModel)
    model.c, model.mt = cfg, "kimi_linear"
    kinds = models.kimi_layer_kinds(cfg)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        norm(p + "input_layernorm.weight", Hd)
        a = p + "self_attn."
        if kinds[i] == "kda":
            lin(a + "q_proj.weight", P, Hd)
            lin(a + "k_proj.weight", P, Hd)
            lin(a + "v_proj.weight", P, Hd)
            for n in ("q", "k", "v"):  # depthwise conv taps [D, 1, W]; the last tap (current token) ~ 1
                t = torch.randn(P, 1, W, generator=g) * 0.4
                t[:, 0, W - 1] += 1.0
                w[a + f"{n}_conv1d.weight"] = t
            w[a + "A_log"] = torch.log(1.0 + 15.0 * torch.rand(KH, generator=g)).view(1, 1, KH, 1)
            lin(a + "f_a_proj.weight", KD, Hd)
            lin(a + "f_b_proj.weight", P, KD)
            w[a + "dt_bias"] = KDA_DT_MEAN + torch.randn(P, generator=g)
            lin(a + "b_proj.weight", KH, Hd, scale=2.0)
            lin(a + "g_a_proj.weight", KD, Hd)
            lin(a + "g_b_proj.weight", P, KD, scale=2.0)
            norm(a + "o_norm.weight", KD)
            lin(a + "o_proj.weight", Hd, P)
        else:
            lin(a + "q_proj.weight", H * (dn + dr), Hd)
            lin(a + "kv_a_proj_with_mqa.weight", r + dr, Hd)
            # small latent rows: mean(c^2) ~ 1e-5, so kv_a_layernorm's eps (1e-6, not rms_norm_eps 1e-5) shows
            w[a + "kv_a_proj_with_mqa.weight"][:r] *= KIMI_LATENT_SCALE
            norm(a + "kv_a_layernorm.weight", r)
            lin(a + "kv_b_proj.weight", H * (dn + dv), r)
            lin(a + "o_proj.weight", Hd, H * dv)
        norm(p + "post_attention_layernorm.weight", Hd)
        if not model.is_moe_layer(i):
            mlp3(p + "mlp", cfg["intermediate_size"])
        else:
            E = cfg["num_experts"]
            m = p + "block_sparse_moe."
            lin(m + "gate.weight", E, Hd, scale=2.0)
            vec(m + "gate.e_score_correction_bias", E, 0.05)
            for e in range(E):
                mlp3(f"{m}experts.{e}", cfg["moe_intermediate_size"], ("w1", "w3", "w2"))
            mlp3(m + "shared_experts", cfg["moe_intermediate_size"] * cfg["num_shared_experts"])
    norm("model.norm.weight", Hd)
    lin("lm_head.weight", cfg["vocab_size"], Hd, scale=2.0)
    return w


# SiTU calibration: gate pre-activations with std ~K3_GATE_STD reach the tanh(g/4) saturation, up ones with std
# ~K3_UP_STD reach tanh(u/25)'s (see manifest "situ_saturation"); the down projections are scaled back.
K3_GATE_STD = 4.0
K3_UP_STD = 20.0


def gen_weights_kimi_k3(cfg, g):
    """Release names (language_model. prefix) and shapes; nn.Linear weights are [out, in]."""
    tc = cfg["text_config"]
    Hd, V, H = tc["hidden_size"], tc["vocab_size"], tc["num_attention_heads"]
    lac = tc["linear_attn_config"]
    KH, KD, W = lac["num_heads"], lac["head_dim"], lac["short_conv_kernel_size"]
    P = KH * KD
    dn, dr, dv, r, qr = tc["qk_nope_head_dim"], tc["qk_rope_head_dim"], tc["v_head_dim"], tc["kv_lora_rank"], tc["q_lora_rank"]
    L, Im, E = tc["routed_expert_hidden_size"], tc["moe_intermediate_size"], tc["num_experts"]
    w = {}
    pre = models.K3_PREFIX + "model."

    def lin(name, out_f, in_f, scale=1.0):
        w[name] = torch.randn(out_f, in_f, generator=g) * (scale / math.sqrt(in_f))

    def norm(name, n):
        w[name] = 0.9 + 0.2 * torch.rand(n, generator=g)

    def situ3(prefix, inter, in_f, out_f, names=("gate_proj", "up_proj", "down_proj")):
        lin(f"{prefix}.{names[0]}.weight", inter, in_f, K3_GATE_STD)
        lin(f"{prefix}.{names[1]}.weight", inter, in_f, K3_UP_STD)
        lin(f"{prefix}.{names[2]}.weight", out_f, inter, 1.0 / K3_UP_STD)

    def res(name):  # AttnRes pair: norm [hidden], score vector [1, hidden]
        norm(name + "_norm.weight", Hd)
        w[name + "_proj.weight"] = torch.randn(1, Hd, generator=g) * (1.0 / math.sqrt(Hd))

    w[pre + "embed_tokens.weight"] = torch.randn(V, Hd, generator=g)
    model = models.ReferenceModel(cfg, {})
    for i in range(tc["num_hidden_layers"]):
        p = f"{pre}layers.{i}."
        norm(p + "input_layernorm.weight", Hd)
        res(p + "self_attention_res")
        res(p + "mlp_res")
        a = p + "self_attn."
        if model.kinds[i] == "kda":
            lin(a + "q_proj.weight", P, Hd)
            lin(a + "k_proj.weight", P, Hd)
            lin(a + "v_proj.weight", P, Hd)
            for n in ("q", "k", "v"):
                t = torch.randn(P, 1, W, generator=g) * 0.4
                t[:, 0, W - 1] += 1.0
                w[a + f"{n}_conv1d.weight"] = t
            # 1-D, zero-padded past the KH heads to head_dim entries (the release: [128] for 96 heads)
            al = torch.zeros(KD)
            al[:KH] = torch.log(0.5 + 2.0 * torch.rand(KH, generator=g))
            w[a + "A_log"] = al
            lin(a + "f_a_proj.weight", KD, Hd)
            lin(a + "f_b_proj.weight", P, KD)
            w[a + "dt_bias"] = K3_DT_MEAN + torch.randn(P, generator=g)
            lin(a + "b_proj.weight", KH, Hd, scale=2.0)
            lin(a + "g_proj.weight", P, Hd, scale=2.0)
            norm(a + "o_norm.weight", KD)
            lin(a + "o_proj.weight", Hd, P)
        else:
            lin(a + "q_a_proj.weight", qr, Hd)
            norm(a + "q_a_layernorm.weight", qr)
            lin(a + "q_b_proj.weight", H * (dn + dr), qr)
            lin(a + "kv_a_proj_with_mqa.weight", r + dr, Hd)
            norm(a + "kv_a_layernorm.weight", r)
            lin(a + "kv_b_proj.weight", H * (dn + dv), r)
            lin(a + "g_proj.weight", H * dv, Hd, scale=2.0)
            lin(a + "o_proj.weight", Hd, H * dv)
        norm(p + "post_attention_layernorm.weight", Hd)
        if not model.is_moe_layer(i):
            situ3(p + "mlp", tc["intermediate_size"], Hd, Hd)
        else:
            m = p + "block_sparse_moe."
            lin(m + "gate.weight", E, Hd, scale=2.0)
            w[m + "gate.e_score_correction_bias"] = torch.randn(E, generator=g) * 0.05
            lin(m + "routed_expert_down_proj.weight", L, Hd)
            norm(m + "routed_expert_norm.weight", L)
            lin(m + "routed_expert_up_proj.weight", Hd, L)
            for e in range(E):
                situ3(f"{m}experts.{e}", Im, L, L, ("w1", "w3", "w2"))
            situ3(m + "shared_experts", Im * tc["num_shared_experts"], Hd, Hd)
    norm(pre + "norm.weight", Hd)
    res(pre + "output_attn_res")
    lin(models.K3_PREFIX + "lm_head.weight", V, Hd, scale=2.0)
    return w


# K3 lower-bound gate: gl = -5 * sigmoid(exp(A_log) * (graw + dt_bias)); dt_bias ~ N(K3_DT_MEAN, 1) and
# A = exp(A_log) in [0.5, 2.5] put the per-step decay exp(gl) across (e^-5, 1).
K3_DT_MEAN = -2.5


_FP4_MAGS = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def f32_to_mxfp4(w: np.ndarray):
    """Quantise along the last axis in blocks of 32 -> (blocks uint8 [..., K/32, 16], scales uint8 [..., K/32]).

    Scale exponent e = ceil(log2(blockmax / 6)) (so blockmax / 2^e lies in (3, 6] and every
    magnitude code is in use), stored as E8M0 e + 127. Each element is rounded to the nearest
    E2M1 magnitude (ties to the even code), the sign bit is kept (so small negatives give code
    8 = -0). Element 2j of a block goes to the low nibble of byte j, element 2j+1 to the high one.
    """
    *pre, K = w.shape
    assert K % 32 == 0
    x = w.astype(np.float64).reshape(*pre, K // 32, 32)
    amax = np.abs(x).max(axis=-1)
    e = np.where(amax > 0, np.ceil(np.log2(np.where(amax > 0, amax, 1.0) / 6.0)), 0.0)
    e = np.where(amax / np.exp2(e) > 6.0, e + 1, e)
    assert (e > -127).all() and (e < 128).all()
    y = np.abs(x) / np.exp2(e)[..., None]
    d = np.abs(y[..., None] - _FP4_MAGS)  # [..., 32, 8]
    best = d.min(axis=-1, keepdims=True)
    cand = d == best
    # ties: prefer the even code (the lower one when it is even, else the upper one)
    even = cand & (np.arange(8) % 2 == 0)
    mag = np.where(even.any(axis=-1), np.argmax(even, axis=-1), np.argmax(cand, axis=-1))
    codes = (mag | (np.signbit(x).astype(np.int64) << 3)).astype(np.uint8)
    codes = codes.reshape(*pre, K // 32, 16, 2)
    blocks = (codes[..., 0] | (codes[..., 1] << 4)).astype(np.uint8)
    scales = (e + 127).astype(np.uint8)
    return blocks, scales


def is_fp8_weight(name: str, arr: torch.Tensor) -> bool:
    """DeepSeek FP8 layout: every 2-D linear weight in attention and MLP/experts/shared
    experts is FP8; router (mlp.gate.weight), norms, embeddings, lm_head are not."""
    if arr.dim() != 2 or not name.startswith("model.layers."):
        return False
    if name.endswith("mlp.gate.weight"):
        return False
    return ".self_attn." in name or ".mlp." in name


def to_storage(weights: dict, storage: str):
    """-> (stored {name: (dtype, np array)}, dequantised f32 {name: tensor})."""
    stored, deq = {}, {}
    for name, t in weights.items():
        a = t.numpy().astype(np.float32)
        if storage == "mxfp4ct" and ".block_sparse_moe.experts." in name:
            # compressed-tensors mxfp4-pack-quantized: [rows, cols] -> weight_packed [rows, cols/2] +
            # weight_scale [rows, cols/32] (E8M0), quantised along cols (the input dim)
            assert name.endswith(".weight") and a.ndim == 2
            blocks, scales = f32_to_mxfp4(a)
            rows, cols = a.shape
            stored[name + "_packed"] = ("U8", blocks.reshape(rows, cols // 2))
            stored[name + "_scale"] = ("U8", scales)
            deq[name] = torch.from_numpy(models.dequant_mxfp4_packed(blocks.reshape(rows, cols // 2), scales))
            continue
        if storage == "mxfp4ct":
            storage_of = "f32" if name.endswith(("e_score_correction_bias", ".A_log", ".dt_bias")) else "bf16"
            if storage_of == "f32":
                stored[name] = ("F32", a)
                deq[name] = torch.from_numpy(a.copy())
            else:
                bits = models.f32_to_bf16_bits(a)
                stored[name] = ("BF16", bits)
                deq[name] = torch.from_numpy(models.bf16_bits_to_f32(bits).copy())
            continue
        if storage == "mxfp4" and name.endswith(("mlp.experts.gate_up_proj", "mlp.experts.down_proj")):
            # release layout: [E, out, in] quantised along `in`; HF layout is its transpose [E, in, out]
            blocks, scales = f32_to_mxfp4(np.ascontiguousarray(np.swapaxes(a, -1, -2)))
            stored[name + "_blocks"] = ("U8", blocks)
            stored[name + "_scales"] = ("U8", scales)
            deq[name] = torch.from_numpy(np.ascontiguousarray(np.swapaxes(models.dequant_mxfp4(blocks, scales), -1, -2)))
            continue
        if storage == "mxfp4":  # every other tensor BF16, as in the release
            bits = models.f32_to_bf16_bits(a)
            stored[name] = ("BF16", bits)
            deq[name] = torch.from_numpy(models.bf16_bits_to_f32(bits).copy())
            continue
        if storage == "f32" or name.endswith(("e_score_correction_bias", ".A_log", ".dt_bias")):
            stored[name] = ("F32", a)
            deq[name] = torch.from_numpy(a.copy())
        elif storage == "bf16" or not is_fp8_weight(name, t):
            bits = models.f32_to_bf16_bits(a)
            stored[name] = ("BF16", bits)
            deq[name] = torch.from_numpy(models.bf16_bits_to_f32(bits).copy())
        else:  # fp8 block quantisation, 128x128 blocks
            rows, cols = a.shape
            nr, nc = -(-rows // 128), -(-cols // 128)
            scale = np.zeros((nr, nc), dtype=np.float32)
            codes = np.zeros((rows, cols), dtype=np.uint8)
            for bi in range(nr):
                for bj in range(nc):
                    blk = a[bi * 128:(bi + 1) * 128, bj * 128:(bj + 1) * 128]
                    amax = float(np.abs(blk).max())
                    s = np.float32(amax / 448.0) if amax > 0 else np.float32(1.0)
                    scale[bi, bj] = s
                    codes[bi * 128:(bi + 1) * 128, bj * 128:(bj + 1) * 128] = models.f32_to_e4m3(blk / s)
            stored[name] = ("F8_E4M3", codes)
            stored[name + "_scale_inv"] = ("F32", scale)
            deq[name] = torch.from_numpy(models.dequant_fp8_block(codes, scale))
    return stored, deq


# ---------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------


def analyse(model: models.ReferenceModel, seq):
    """Full forward over seq; returns margins / usage stats for the acceptance test."""
    logits = model.forward(seq)
    top2 = torch.topk(logits, 2, dim=-1).values
    logit_margin = float((top2[:, 0] - top2[:, 1]).min())
    route_margin = math.inf
    group_margin = math.inf
    softmax_logit_margin = math.inf
    zero_fill_ok = True
    usage = {}
    n_experts = None
    for tr in model.trace:
        route_margin = min(route_margin, float(tr["margin"].min()))
        group_margin = min(group_margin, float(tr["group_margin"].min()))
        if tr["logit_margin"] is not None:
            softmax_logit_margin = min(softmax_logit_margin, float(tr["logit_margin"].min()))
        zero_fill_ok &= bool(tr["zero_fill_agrees"].all())
        n_experts = tr["criterion"].shape[-1]
        usage[tr["layer"]] = sorted(set(tr["idx"].flatten().tolist()))
    min_used = min((len(u) for u in usage.values()), default=0)
    clamp = None
    if model.clamp_stats:  # gpt-oss: how often swiglu_limit clamps (selected experts only)
        cs = model.clamp_stats
        clamp = {"gate_entries_above_limit": sum(x["gate_hi"] for x in cs),
                 "up_entries_outside_limit": sum(x["up_out"] for x in cs),
                 "entries_per_half": sum(x["entries"] for x in cs),
                 "token_expert_pairs_clamped": sum(x["rows_hit"] for x in cs),
                 "token_expert_pairs": sum(x["rows"] for x in cs)}
    return {
        "clamp": clamp,
        "logits": logits,
        "logit_margin": logit_margin,
        "route_margin": route_margin,
        "group_margin": group_margin,
        "softmax_router_logit_margin": softmax_logit_margin,
        "zero_fill_agrees": zero_fill_ok,
        "experts_used_min": min_used,
        "n_experts": n_experts,
        "usage": usage,
    }


def build_variant(v: dict):
    cfg = v["config"]
    V = cfg.get("text_config", cfg)["vocab_size"]
    n_prompt = v.get("n_prompt", N_PROMPT)
    fam = models.family_module(cfg)
    for attempt in range(MAX_ATTEMPTS):
        seed = v["seed"] + attempt
        torch.manual_seed(seed)
        g = torch.Generator().manual_seed(seed)
        weights = gen_weights(cfg, g)
        tokens = torch.randint(2, V, (n_prompt,), generator=g).tolist()
        if fam is not None:
            stored, deq = fam.to_storage(weights, v["storage"], f32_to_mxfp4)
        else:
            stored, deq = to_storage(weights, v["storage"])
        model = models.ReferenceModel(cfg, deq)
        greedy = model.greedy(tokens, N_GREEDY)
        full = tokens + greedy
        st = analyse(model, full)
        if fam is not None:  # family-specific acceptance (measured over the same 40+ positions)
            st["family"] = fam.analyse_extra(model)
        argmax = torch.argmax(st["logits"], dim=-1).tolist()
        ok = (
            st["logit_margin"] > LOGIT_MARGIN
            and st["route_margin"] > ROUTE_MARGIN
            and st["group_margin"] > ROUTE_MARGIN
            and st["zero_fill_agrees"]
            and 2 * st["experts_used_min"] >= st["n_experts"]
            and argmax[n_prompt - 1:n_prompt - 1 + N_GREEDY] == greedy
            and cfg["eos_token_id"] not in greedy
            and len(set(greedy)) >= 4
            and (st["clamp"] is None or (st["clamp"]["gate_entries_above_limit"] > 0
                                         and st["clamp"]["up_entries_outside_limit"] > 0))
            and (fam is None or fam.accept(model, st["family"]))
        )
        if ok:
            return seed, attempt, weights, stored, deq, tokens, greedy, st
    raise RuntimeError(f"{v['name']}: no acceptable seed in {MAX_ATTEMPTS} attempts")


def write_variant(v, stored, tokens, greedy, prefill_logits, routing):
    d = os.path.join(OUT_ROOT, v["name"])
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(v["config"], f, indent=2)
        f.write("\n")
    if not v["split"]:
        write_safetensors(os.path.join(d, "model.safetensors"), stored)
    else:
        names = list(stored)  # checkpoint (model) order
        sizes = [stored[n][1].nbytes for n in names]
        total = sum(sizes)
        shards = [{}, {}]
        acc = 0
        for n, s in zip(names, sizes):
            shards[0 if acc < total / 2 else 1][n] = stored[n]
            acc += s
        files = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
        wm = {}
        for fn, sh in zip(files, shards):
            write_safetensors(os.path.join(d, fn), sh)
            for n in sh:
                wm[n] = fn
        with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": dict(sorted(wm.items()))}, f, indent=2)
            f.write("\n")
    fam = models.family_module(v["config"])
    if fam is not None and hasattr(fam, "extra_files"):  # e.g. deepseek_v41's tokenizer.json
        for fn, text in fam.extra_files(v["config"]).items():
            with open(os.path.join(d, fn), "w", encoding="utf-8") as f:
                f.write(text)
    with open(os.path.join(d, "tokens.txt"), "w") as f:
        f.write(",".join(str(t) for t in tokens) + "\n")
    with open(os.path.join(d, "greedy.txt"), "w") as f:
        f.write(",".join(str(t) for t in greedy) + "\n")
    prefill_logits.numpy().astype("<f4").tofile(os.path.join(d, "logits.f32"))
    with open(os.path.join(d, "routing.json"), "w") as f:
        json.dump(routing, f)
        f.write("\n")
    return d


def dir_size(d):
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))


def main(argv):
    """No arguments: (re)generate every variant. Otherwise only the named variants; the other
    entries of manifest.json are kept as they are."""
    os.makedirs(OUT_ROOT, exist_ok=True)
    names = [v["name"] for v in VARIANTS]
    unknown = [a for a in argv if a not in names]
    if unknown:
        raise SystemExit(f"unknown variant(s) {unknown}; known: {names}")
    selected = [v for v in VARIANTS if not argv or v["name"] in argv]
    manifest = {"generator": "tests/reference/make_fixtures.py", "n_prompt": N_PROMPT, "n_greedy": N_GREEDY,
                "acceptance": {"logit_margin_gt": LOGIT_MARGIN, "route_margin_gt": ROUTE_MARGIN},
                "variants": {}}
    mpath = os.path.join(OUT_ROOT, "manifest.json")
    if argv and os.path.exists(mpath):
        with open(mpath) as f:
            old = json.load(f)
        manifest["variants"] = {n: old["variants"][n] for n in names if n in old["variants"]}
    for v in selected:
        seed, attempt, weights, stored, deq, tokens, greedy, st = build_variant(v)
        model = models.ReferenceModel(v["config"], deq)
        prefill = model.forward(tokens)
        routing = {str(tr["layer"]): {"experts": tr["idx"].tolist(),
                                      "weights": [[round(float(x), 6) for x in row] for row in tr["weights"]]}
                   for tr in model.trace}
        d = write_variant(v, stored, tokens, greedy, prefill, routing)

        # independent round trip: read the files back and recompute
        logits2, greedy2 = models.run_fixture(d)
        on_disk = np.fromfile(os.path.join(d, "logits.f32"), dtype="<f4").reshape(len(tokens), -1)
        assert np.array_equal(on_disk, logits2.numpy()), f"{v['name']}: reload mismatch"
        assert greedy2 == greedy, f"{v['name']}: greedy reload mismatch"

        nbytes = dir_size(d)
        info = {
            "seed": seed, "rejected_seeds": attempt, "storage": v["storage"], "split": v["split"],
            "bytes": nbytes, "n_tensors": len([n for n in stored]),
            "min_top1_top2_logit_margin": st["logit_margin"],
            "min_route_margin": st["route_margin"],
            "min_group_margin": None if math.isinf(st["group_margin"]) else st["group_margin"],
            "min_softmax_router_logit_margin": None if math.isinf(st["softmax_router_logit_margin"])
            else st["softmax_router_logit_margin"],
            "experts_used_per_moe_layer": {str(k): len(u) for k, u in st["usage"].items()},
            "n_experts": st["n_experts"],
            "max_abs_logit": float(prefill.abs().max()),
            "greedy": greedy,
        }
        fam = models.family_module(v["config"])
        if fam is not None:
            info["family_acceptance_over_prompt_and_greedy"] = st["family"]
            info.update(fam.manifest_info(model, tokens, stored))
        if v["config"]["model_type"] in ("kimi_linear", "kimi_k3"):
            model.forward(tokens)
            d = torch.cat([t.flatten() for t in model.kda_decay_trace]).double()
            info["layer_kinds"] = models.kimi_layer_kinds(v["config"].get("text_config", v["config"]))
            if model.attn_res_trace:
                info["attn_res_banked_inputs_after_layer"] = [int(t) for t in model.attn_res_trace]
            info["kda_decay_over_prefill"] = {
                "quantiles_1_10_50_90_99": [round(float(d.quantile(q)), 4) for q in (0.01, 0.1, 0.5, 0.9, 0.99)],
                "min": float(d.min()), "max": float(d.max()),
                "frac_below_0.05": round(float((d < 0.05).double().mean()), 4),
                "frac_above_0.95": round(float((d > 0.95).double().mean()), 4)}
        if v["config"]["model_type"] == "gpt_oss":
            info["clamp_over_40_positions"] = st["clamp"]
            model.forward(tokens)
            info["clamp_over_prefill"] = analyse(model, tokens)["clamp"]
            info["rope_inv_freq"] = [float(x) for x in model.inv_freq]
            info["rope_attention_factor"] = model.attn_factor
            if v["storage"] == "mxfp4":
                codes = np.concatenate([np.concatenate([(a & 0xF).ravel(), (a >> 4).ravel()])
                                        for n, (dt, a) in stored.items() if n.endswith("_blocks")])
                info["mxfp4_code_histogram"] = np.bincount(codes, minlength=16).tolist()
                info["mxfp4_scale_range"] = [int(min(a.min() for n, (dt, a) in stored.items() if n.endswith("_scales"))),
                                             int(max(a.max() for n, (dt, a) in stored.items() if n.endswith("_scales")))]
        manifest["variants"][v["name"]] = {**manifest["variants"].get(v["name"], {}), **info}
        manifest["variants"] = {n: manifest["variants"][n] for n in names if n in manifest["variants"]}
        print(f"{v['name']:28s} seed={seed:<6d} rejected={attempt:<3d} size={nbytes/1e6:.3f}MB "
              f"logit_margin={st['logit_margin']:.4g} route_margin={st['route_margin']:.4g} "
              f"group_margin={info['min_group_margin']} used={info['experts_used_per_moe_layer']}/{st['n_experts']}",
              flush=True)
    total = sum(x["bytes"] for x in manifest["variants"].values())
    manifest["total_bytes"] = total
    with open(os.path.join(OUT_ROOT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    print(f"total fixture size: {total/1e6:.3f} MB")


if __name__ == "__main__":
    main(sys.argv[1:])
