"""Independent plain-PyTorch reference forward pass for the MoE LLM families below.

Families (selected by ``config["model_type"]``):

* ``deepseek_v3``  - DeepSeek-V3 / Kimi-K2: MLA attention (optional q-LoRA),
  interleaved RoPE on the rope sub-head, optional YaRN, sigmoid +
  ``e_score_correction_bias`` group-limited routing, shared experts,
  ``first_k_dense_replace`` dense layers.
* ``qwen3_moe``    - GQA with per-head q_norm/k_norm (before RoPE), softmax
  router, optional top-k renormalisation, ``mlp_only_layers`` /
  ``decoder_sparse_step``.
* ``glm4_moe``     - GQA with q/k/v biases, optional q/k norm, partial rotary,
  DeepSeek-style sigmoid group routing + shared experts.
* ``mixtral``      - GQA, softmax top-k router, renormalised top-k weights,
  ``block_sparse_moe.experts.N.w{1,2,3}``.
* ``gpt_oss``      - GQA with q/k/v/o biases, learned per-head attention sinks,
  alternating sliding-window / full layers (``layer_types``), YaRN with the
  ``truncate`` flag, router with bias (top-k of raw logits, softmax over the k),
  fused interleaved ``gate_up_proj`` experts with clamped SwiGLU
  (``(up + 1) * gate * sigmoid(1.702 gate)``) and biases; MXFP4 expert
  storage (``*_blocks`` / ``*_scales``) is dequantised by ``load_checkpoint``.
* ``kimi_linear``, ``kimi_k3`` - see README.md.
* ``deepseek_v4``  - in its own module, ``deepseek_v4.py`` (FAMILY_MODULES): mHC streams, sliding +
  compressed (CSA with lightning indexer / HCA) attention with sinks, hash + sqrt-softplus routing.
* ``glm5_next``    - GLM-5.3-Flash, in ``glm5_next.py`` (FAMILY_MODULES): mHC streams, KDA + DSA (NoPE MLA with
  the k-pool indexer), clamped-SwiGLU sigmoid MoE, mean stream head.

Specification: Hugging Face transformers modeling code
(``models/<family>/modeling_<family>.py``, ``modeling_rope_utils.py``).
Everything is computed in float32 on CPU; weights are given to
``ReferenceModel`` already dequantised to float32 (see ``load_checkpoint``).
The implementation deliberately uses a full causal recompute (no KV cache).

This file depends only on torch, numpy and the Python standard library.
"""

from __future__ import annotations

import json
import math
import os
import struct
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch

# ---------------------------------------------------------------------------
# Numeric formats (bf16 / fp8-e4m3) and a minimal safetensors reader
# ---------------------------------------------------------------------------


def bf16_bits_to_f32(bits: np.ndarray) -> np.ndarray:
    """uint16 bf16 bit patterns -> float32 (exact)."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> uint16 bf16 bit patterns, round-to-nearest-even (no NaN input)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    rounding = ((u >> 16) & 1) + 0x7FFF
    return ((u + rounding) >> 16).astype(np.uint16)


def e4m3_table() -> np.ndarray:
    """float32 value of each of the 256 OCP FP8 E4M3 ("fn") codes; 0x7F/0xFF -> NaN."""
    vals = np.zeros(256, dtype=np.float64)
    for code in range(256):
        s = -1.0 if code & 0x80 else 1.0
        e = (code >> 3) & 0xF
        m = code & 0x7
        if e == 0xF and m == 0x7:
            vals[code] = np.nan
        elif e == 0:
            vals[code] = s * (m / 8.0) * 2.0 ** (1 - 7)
        else:
            vals[code] = s * (1.0 + m / 8.0) * 2.0 ** (e - 7)
    return vals.astype(np.float32)


_E4M3 = e4m3_table()


def f32_to_e4m3(x: np.ndarray) -> np.ndarray:
    """Round float32 to the nearest E4M3 code (ties to even mantissa), saturating at +-448."""
    x = np.asarray(x, dtype=np.float32)
    pos = _E4M3[0:0x7F].astype(np.float64)  # codes 0x00..0x7E, strictly increasing 0..448
    a = np.minimum(np.abs(x).astype(np.float64), 448.0)
    hi = np.searchsorted(pos, a, side="left")  # first code with value >= a
    hi = np.clip(hi, 0, len(pos) - 1)
    lo = np.clip(hi - 1, 0, len(pos) - 1)
    d_hi = pos[hi] - a
    d_lo = a - pos[lo]
    pick_lo = (d_lo < d_hi) | ((d_lo == d_hi) & (lo % 2 == 0))
    code = np.where(pick_lo, lo, hi).astype(np.uint8)
    code = np.where(a == pos[hi], hi, code).astype(np.uint8)
    sign = (np.signbit(x) & (code != 0)).astype(np.uint8) << 7
    return (code | sign).astype(np.uint8)


def e4m3_to_f32(codes: np.ndarray) -> np.ndarray:
    return _E4M3[codes.astype(np.int64)]


def read_safetensors(path: str) -> Dict[str, Tuple[str, List[int], bytes]]:
    """Return {name: (dtype, shape, raw bytes)} from one .safetensors file."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n].decode("utf-8"))
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        out[name] = (info["dtype"], list(info["shape"]), blob[base + b : base + e])
    return out


def decode_tensor(dtype: str, shape: List[int], raw: bytes) -> np.ndarray:
    """Raw safetensors payload -> float32 numpy array (F8 / U8 return the raw bytes as uint8)."""
    if dtype == "F32":
        arr = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    elif dtype == "BF16":
        arr = bf16_bits_to_f32(np.frombuffer(raw, dtype="<u2"))
    elif dtype == "F16":
        arr = np.frombuffer(raw, dtype="<f2").astype(np.float32)
    elif dtype in ("F8_E4M3", "U8"):
        arr = np.frombuffer(raw, dtype=np.uint8).copy()
    else:
        raise ValueError(f"unsupported dtype {dtype}")
    return arr.reshape(shape)


def dequant_fp8_block(codes: np.ndarray, scale_inv: np.ndarray, block=(128, 128)) -> np.ndarray:
    """DeepSeek block FP8: w[i, j] = e4m3(codes[i, j]) * scale_inv[i // 128, j // 128]."""
    rows, cols = codes.shape
    br, bc = block
    s = np.repeat(np.repeat(scale_inv, br, axis=0), bc, axis=1)[:rows, :cols]
    return (e4m3_to_f32(codes) * s).astype(np.float32)


# OCP MX FP4 (E2M1) value of each 4-bit code: bit 3 = sign, bits 2..1 = exponent (bias 1), bit 0 = mantissa.
FP4_E2M1 = np.array([+0.0, +0.5, +1.0, +1.5, +2.0, +3.0, +4.0, +6.0,
                     -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0], dtype=np.float32)


def dequant_mxfp4(blocks: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """gpt-oss MXFP4 (HF integrations/mxfp4.py ``convert_moe_packed_tensors`` before its transpose).

    blocks uint8 [..., G, 16], scales uint8 (E8M0) [..., G] -> float32 [..., G*32]:
    byte j of block g holds element 32g+2j in its LOW nibble and 32g+2j+1 in its HIGH nibble;
    value = FP4_E2M1[code] * 2^(scale - 127).
    """
    assert blocks.shape[:-1] == scales.shape and blocks.shape[-1] == 16, (blocks.shape, scales.shape)
    lo = FP4_E2M1[(blocks & 0x0F).astype(np.int64)]
    hi = FP4_E2M1[(blocks >> 4).astype(np.int64)]
    vals = np.stack((lo, hi), axis=-1).reshape(*blocks.shape[:-1], 32)  # [..., G, 32]
    vals = np.ldexp(vals, scales.astype(np.int32)[..., None] - 127).astype(np.float32)
    return vals.reshape(*blocks.shape[:-2], blocks.shape[-2] * 32)


def dequant_mxfp4_packed(packed: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """compressed-tensors ``mxfp4-pack-quantized`` (Kimi-K3 routed experts) -> float32 [rows, cols].

    packed uint8 [rows, cols/2], scale uint8 (E8M0) [rows, cols/32]. Byte j of a row holds column 2j in its
    LOW nibble and column 2j+1 in its HIGH nibble (compressed-tensors ``pack_fp4_to_uint8``); column c uses
    scale[r, c // 32]: w[r, c] = FP4_E2M1[code] * 2^(scale - 127). Same byte layout as gpt-oss's blocks.
    """
    R, C2 = packed.shape
    assert C2 % 16 == 0 and scale.shape == (R, C2 // 16), (packed.shape, scale.shape)
    return dequant_mxfp4(packed.reshape(R, C2 // 16, 16), scale)


# Families implemented in a module of their own (tests/reference/<module>.py), by model_type. Such a module
# provides convert_checkpoint(config, raw) -> {name: tensor} and a Model(config, weights) class with
# forward(tokens) / greedy(tokens, n) / trace; load_checkpoint and ReferenceModel hand over to it.
FAMILY_MODULES = {"deepseek_v4": "deepseek_v4", "glm5_next": "glm5_next", "deepseek_v41": "deepseek_v41"}


def family_module(config):
    """The module implementing config["model_type"], or None for the families of this file."""
    name = FAMILY_MODULES.get((config or {}).get("model_type")) if isinstance(config, dict) else None
    if name is None:
        return None
    import importlib
    import sys

    sys.dont_write_bytecode = True
    return importlib.import_module(name)


def load_checkpoint(fixture_dir: str) -> Tuple[dict, Dict[str, torch.Tensor]]:
    """Load config.json and all weights of a checkpoint directory as float32 tensors.

    Handles a single ``model.safetensors`` or a sharded checkpoint with
    ``model.safetensors.index.json``; F8_E4M3 weights are dequantised with
    their ``<name>_scale_inv`` tensor (which is then dropped from the dict).
    gpt-oss MXFP4 experts ``<p>_blocks`` U8 [E, out, in/32, 16] + ``<p>_scales`` U8 [E, out, in/32]
    become ``<p>`` float32 in the transformers layout [E, in, out] (dequantise, then swap the last
    two axes, as HF ``convert_moe_packed_tensors`` does with ``transpose(1, 2)``).
    """
    with open(os.path.join(fixture_dir, "config.json")) as f:
        config = json.load(f)
    index_path = os.path.join(fixture_dir, "model.safetensors.index.json")
    if os.path.exists(index_path):
        with open(index_path) as f:
            index = json.load(f)
        files = sorted(set(index["weight_map"].values()))
    else:
        index = None
        files = ["model.safetensors"]
    raw: Dict[str, Tuple[str, List[int], bytes]] = {}
    for fn in files:
        part = read_safetensors(os.path.join(fixture_dir, fn))
        for k, v in part.items():
            assert k not in raw, f"duplicate tensor {k}"
            if index is not None:
                assert index["weight_map"][k] == fn, f"{k} found in {fn}, index says {index['weight_map'][k]}"
            raw[k] = v
    if index is not None:
        assert set(raw) == set(index["weight_map"]), "index weight_map does not match shard contents"
    fam = family_module(config)
    if fam is not None:
        weights = fam.convert_checkpoint(config, raw)
        if hasattr(fam, "load_extras"):  # what the model needs besides tensors (deepseek_v41: tokenizer.json)
            weights.update(fam.load_extras(fixture_dir, config))
        return config, weights
    block = tuple((config.get("quantization_config") or {}).get("weight_block_size", [128, 128]))
    weights: Dict[str, torch.Tensor] = {}
    for name, (dtype, shape, data) in raw.items():
        if name.endswith("_scale_inv") or (name.endswith("_scales") and name[:-7] + "_blocks" in raw):
            continue
        if name.endswith(".weight_scale") and name[:-13] + ".weight_packed" in raw:
            continue
        if name.endswith(".weight_packed") and dtype == "U8":  # compressed-tensors MXFP4 (Kimi-K3 experts)
            base = name[: -len("_packed")]  # -> <module>.weight
            sdt, sshape, sdata = raw[base + "_scale"]
            assert sdt == "U8", f"{base}_scale must be U8 (E8M0), got {sdt}"
            deq = dequant_mxfp4_packed(decode_tensor(dtype, shape, data), decode_tensor(sdt, sshape, sdata))
            weights[base] = torch.from_numpy(np.ascontiguousarray(deq, dtype=np.float32))
            continue
        if name.endswith("_blocks") and dtype == "U8":
            base = name[: -len("_blocks")]
            sdt, sshape, sdata = raw[base + "_scales"]
            assert sdt == "U8", f"{base}_scales must be U8 (E8M0), got {sdt}"
            deq = dequant_mxfp4(decode_tensor(dtype, shape, data), decode_tensor(sdt, sshape, sdata))
            weights[base] = torch.from_numpy(np.ascontiguousarray(np.swapaxes(deq, -1, -2), dtype=np.float32))
            continue
        arr = decode_tensor(dtype, shape, data)
        if dtype == "F8_E4M3":
            sdt, sshape, sdata = raw[name + "_scale_inv"]
            arr = dequant_fp8_block(arr, decode_tensor(sdt, sshape, sdata), block)
        weights[name] = torch.from_numpy(np.ascontiguousarray(arr, dtype=np.float32))
    return config, weights


# ---------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------


def rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    """HF *RMSNorm: x * rsqrt(mean(x^2, -1) + eps) * weight (float32)."""
    var = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps))


def linear(x: torch.Tensor, w: torch.Tensor, b: Optional[torch.Tensor] = None) -> torch.Tensor:
    y = x @ w.t()
    return y + b if b is not None else y


def swiglu(x, wg, wu, wd):
    """down(silu(gate(x)) * up(x))."""
    return linear(torch.nn.functional.silu(linear(x, wg)) * linear(x, wu), wd)


def yarn_get_mscale(scale: float = 1.0, mscale: float = 1.0) -> float:
    if scale <= 1:
        return 1.0
    return 0.1 * mscale * math.log(scale) + 1.0


def rope_parameters(config: dict, dim: int) -> Tuple[torch.Tensor, float]:
    """inv_freq [dim/2] and the cos/sin attention factor (HF ROPE_INIT_FUNCTIONS).

    default: inv_freq[i] = 1 / theta^(2i/dim), factor 1.
    yarn:    HF _compute_yarn_parameters (modeling_rope_utils.py), including the
             ``truncate`` flag (default true: floor/ceil the correction range;
             gpt-oss configs set it false and keep the fractional bounds).
    """
    base = float(config["rope_theta"])
    rs = config.get("rope_scaling")
    rope_type = None
    if isinstance(rs, dict):
        rope_type = rs.get("rope_type", rs.get("type"))
    idx = torch.arange(0, dim, 2, dtype=torch.int64).float()
    if rope_type in (None, "default"):
        return 1.0 / (base ** (idx / dim)), 1.0
    if rope_type != "yarn":
        raise NotImplementedError(rope_type)
    factor = float(rs["factor"])
    attention_factor = rs.get("attention_factor")
    mscale = rs.get("mscale")
    mscale_all_dim = rs.get("mscale_all_dim")
    orig = rs.get("original_max_position_embeddings") or config["max_position_embeddings"]
    if attention_factor is None:
        if mscale and mscale_all_dim:
            attention_factor = float(yarn_get_mscale(factor, mscale) / yarn_get_mscale(factor, mscale_all_dim))
        else:
            attention_factor = yarn_get_mscale(factor)
    beta_fast = rs.get("beta_fast") or 32
    beta_slow = rs.get("beta_slow") or 1

    def find_correction_dim(num_rot):
        return (dim * math.log(orig / (num_rot * 2 * math.pi))) / (2 * math.log(base))

    low = find_correction_dim(beta_fast)
    high = find_correction_dim(beta_slow)
    if rs.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
    extrap_factor = 1 - ramp
    pos_freqs = base ** (idx / dim)
    inv_extra = 1.0 / pos_freqs
    inv_inter = 1.0 / (factor * pos_freqs)
    inv_freq = inv_inter * (1 - extrap_factor) + inv_extra * extrap_factor
    return inv_freq, float(attention_factor)


def rope_cos_sin(inv_freq: torch.Tensor, attention_factor: float, seq_len: int):
    """cos/sin of shape [S, dim] with HF layout emb = cat(freqs, freqs)."""
    pos = torch.arange(seq_len, dtype=torch.float32)
    freqs = pos[:, None] * inv_freq[None, :].float()
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos() * attention_factor, emb.sin() * attention_factor


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def apply_rope_half(x, cos, sin):
    """NeoX/HF rotate_half RoPE on the first cos.shape[-1] dims of x (partial rotary)."""
    rd = cos.shape[-1]
    xr, xp = x[..., :rd], x[..., rd:]
    return torch.cat((xr * cos + rotate_half(xr) * sin, xp), dim=-1)


def apply_rope_interleave(x, cos, sin):
    """HF apply_rotary_pos_emb_interleave: de-interleave (d/2,2)->(2,d/2), then rotate_half.

    NB: the output is in de-interleaved order [rot(x0,x1).re, rot(x2,x3).re, ...,
    rot(x0,x1).im, ...]; identical permutation is applied to q and k so q.k is
    the same as rotating the (x[2i], x[2i+1]) pairs in place.
    """
    *lead, d = x.shape
    x = x.reshape(*lead, d // 2, 2).transpose(-1, -2).reshape(*lead, d)
    return x * cos + rotate_half(x) * sin


def causal_attention(q, k, v, scale):
    """q [H,S,Dqk], k [H,S,Dqk], v [H,S,Dv] (kv already expanded to H heads)."""
    S = q.shape[1]
    scores = (q @ k.transpose(1, 2)) * scale
    mask = torch.triu(torch.ones(S, S, dtype=torch.bool), diagonal=1)
    scores = scores.masked_fill(mask, float("-inf"))
    p = torch.softmax(scores, dim=-1)
    return p @ v  # [H,S,Dv]


def repeat_kv(x, n_rep):
    """[KV,S,D] -> [KV*n_rep,S,D]; query head h uses kv head h // n_rep."""
    return x.repeat_interleave(n_rep, dim=0) if n_rep > 1 else x


# ---------------------------------------------------------------------------
# Routers
# ---------------------------------------------------------------------------


def route_softmax(logits: torch.Tensor, top_k: int, norm_topk_prob: bool):
    """Qwen3-MoE / Mixtral: softmax over all experts (f32), top-k, optional renorm."""
    probs = torch.softmax(logits.float(), dim=-1)
    w, idx = torch.topk(probs, top_k, dim=-1)
    if norm_topk_prob:
        w = w / w.sum(dim=-1, keepdim=True)
    srt = torch.sort(probs, dim=-1, descending=True).values
    info = {
        "criterion": probs,
        "margin": (srt[:, top_k - 1] - srt[:, top_k]) if top_k < probs.shape[-1] else torch.full((probs.shape[0],), float("inf")),
        "logit_margin": None,
        "group_margin": torch.full((probs.shape[0],), float("inf")),
        "zero_fill_agrees": torch.ones(probs.shape[0], dtype=torch.bool),
    }
    ls = torch.sort(logits, dim=-1, descending=True).values
    if top_k < logits.shape[-1]:
        info["logit_margin"] = ls[:, top_k - 1] - ls[:, top_k]
    return idx, w, info


def route_sigmoid_group(logits, bias, n_group, topk_group, top_k, norm_topk_prob, routed_scaling_factor):
    """DeepSeek-V3 / GLM-4-MoE "noaux_tc" routing.

    scores = sigmoid(logits); choice = scores + bias
    group score = sum of the top-2 `choice` values in each group; keep topk_group groups
    experts of other groups are masked to -inf (never selectable)
    idx = top-k of masked choice; weights = scores[idx] (un-biased)
    if norm_topk_prob: weights /= sum(weights) + 1e-20;  weights *= routed_scaling_factor
    """
    T, E = logits.shape
    scores = torch.sigmoid(logits.float())
    choice = scores + bias[None, :].float()
    g = choice.view(T, n_group, E // n_group)
    group_scores = g.topk(2, dim=-1)[0].sum(dim=-1)  # [T, n_group]
    gidx = torch.topk(group_scores, topk_group, dim=-1)[1]
    gmask = torch.zeros_like(group_scores, dtype=torch.bool)
    gmask.scatter_(1, gidx, True)
    emask = gmask[:, :, None].expand(T, n_group, E // n_group).reshape(T, E)
    masked = choice.masked_fill(~emask, float("-inf"))
    idx = torch.topk(masked, top_k, dim=-1)[1]
    w = scores.gather(1, idx)
    if norm_topk_prob:
        w = w / (w.sum(dim=-1, keepdim=True) + 1e-20)
    w = w * routed_scaling_factor

    # diagnostics: selection margins, and whether HF's masked_fill(..., 0.0) picks the same set
    srt = torch.sort(masked, dim=-1, descending=True).values
    margin = srt[:, top_k - 1] - srt[:, top_k] if top_k < E else torch.full((T,), float("inf"))
    margin = torch.where(torch.isnan(margin), torch.full_like(margin, float("inf")), margin)
    if topk_group < n_group:
        gs = torch.sort(group_scores, dim=-1, descending=True).values
        gmargin = gs[:, topk_group - 1] - gs[:, topk_group]
    else:
        gmargin = torch.full((T,), float("inf"))
    zero_masked = choice.masked_fill(~emask, 0.0)
    idx0 = torch.topk(zero_masked, top_k, dim=-1)[1]
    agree = (torch.sort(idx0, dim=-1).values == torch.sort(idx, dim=-1).values).all(dim=-1)
    info = {"criterion": masked, "margin": margin, "group_margin": gmargin, "zero_fill_agrees": agree,
            "logit_margin": None}
    return idx, w, info


def moe_combine(x, idx, w, expert_fn):
    """sum_k w[t,k] * expert_{idx[t,k]}(x[t])."""
    out = torch.zeros_like(x)
    T, K = idx.shape
    for e in torch.unique(idx).tolist():
        tok, slot = torch.where(idx == e)
        out.index_add_(0, tok, expert_fn(e, x[tok]) * w[tok, slot][:, None])
    return out


# ---------------------------------------------------------------------------
# gpt-oss pieces (HF models/gpt_oss/modeling_gpt_oss.py)
# ---------------------------------------------------------------------------


def sink_attention(q, k, v, sinks, scale, window):
    """HF gpt-oss ``eager_attention_forward``: causal (+ sliding window) attention with a sink.

    q, k, v [H,S,D] (kv already expanded to H heads), sinks [H].  Key s is visible to query t
    iff s <= t and (window is None or t - s < window), i.e. a sliding layer sees the query
    itself and the window-1 tokens before it (HF ``sliding_window_overlay``: kv > q - window).
    The sink logit of head h is appended as one extra column to every row of scores, the
    softmax runs over keys + sink, and the sink column is dropped (so rows sum to < 1).
    """
    H, S, _ = q.shape
    scores = (q @ k.transpose(1, 2)) * scale
    t = torch.arange(S)[:, None]
    s = torch.arange(S)[None, :]
    hidden = s > t
    if window is not None:
        hidden = hidden | ((t - s) >= window)
    scores = scores.masked_fill(hidden, float("-inf"))
    logits = torch.cat((scores, sinks.view(H, 1, 1).expand(H, S, 1)), dim=-1)
    p = torch.softmax(logits, dim=-1)[..., :-1]
    return p @ v


def route_topk_softmax(logits: torch.Tensor, top_k: int):
    """HF ``GptOssTopKRouter``: top-k of the raw logits (router bias included), softmax over those k."""
    vals, idx = torch.topk(logits, top_k, dim=-1)
    w = torch.softmax(vals, dim=-1)
    T, E = logits.shape
    srt = torch.sort(logits, dim=-1, descending=True).values
    margin = srt[:, top_k - 1] - srt[:, top_k] if top_k < E else torch.full((T,), float("inf"))
    info = {"criterion": logits, "margin": margin, "logit_margin": margin,
            "group_margin": torch.full((T,), float("inf")), "zero_fill_agrees": torch.ones(T, dtype=torch.bool)}
    return idx, w, info


def gpt_oss_glu(gate_up: torch.Tensor, alpha: float, limit: float) -> torch.Tensor:
    """HF ``GptOssExperts``: gate = even columns, up = odd columns of the fused [.., 2I] projection;
    gate clamped above at limit, up clamped to [-limit, limit]; (up + 1) * gate * sigmoid(alpha * gate)."""
    gate, up = gate_up[..., ::2], gate_up[..., 1::2]
    gate = gate.clamp(min=None, max=limit)
    up = up.clamp(min=-limit, max=limit)
    glu = gate * torch.sigmoid(gate * alpha)
    return (up + 1) * glu


def gpt_oss_layer_types(c: dict) -> List[str]:
    """``layer_types`` from the config, else HF's default: sliding for even layers, full for odd."""
    lt = c.get("layer_types")
    if lt is None:
        lt = ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(c["num_hidden_layers"])]
    assert len(lt) == c["num_hidden_layers"] and set(lt) <= {"sliding_attention", "full_attention"}, lt
    return list(lt)


def gpt_oss_top_k(c: dict) -> int:
    """``num_experts_per_tok`` (what HF reads); ``experts_per_token`` is openai/gpt-oss's name."""
    k = c.get("num_experts_per_tok")
    if k is None:
        return c["experts_per_token"]
    assert c.get("experts_per_token", k) == k, "num_experts_per_tok != experts_per_token"
    return k


# ---------------------------------------------------------------------------
# Kimi-Linear pieces (Moonshot remote code modeling_kimi.py; fla ops/kda, modules)
# ---------------------------------------------------------------------------


def kimi_layer_kinds(c: dict) -> List[str]:
    """"kda" or "mla" per layer. linear_attn_config lists are 1-BASED: layer i (0-based) is KDA iff
    i + 1 is in kda_layers, MLA (full attention) iff i + 1 is in full_attn_layers; every layer is in
    exactly one of the two lists."""
    lac = c["linear_attn_config"]
    kda, full = set(lac["kda_layers"]), set(lac["full_attn_layers"])
    n = c["num_hidden_layers"]
    kinds = []
    for i in range(n):
        a, b = (i + 1) in kda, (i + 1) in full
        assert a != b, f"layer {i} (1-based {i + 1}) must be in exactly one of kda_layers / full_attn_layers"
        kinds.append("kda" if a else "mla")
    assert kda | full == set(range(1, n + 1)), (sorted(kda), sorted(full), n)
    return kinds


def kda_short_conv(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """fla ``ShortConvolution`` (depthwise causal nn.Conv1d, no bias) + SiLU, whole sequence, no cache.

    x [S, D], w [D, 1, W] -> [S, D]:  y[t, d] = silu( sum_{j<W} w[d, 0, j] * x[t - (W-1) + j, d] ),
    with x[s] = 0 for s < 0 (zero history before position 0). The LAST tap w[d, 0, W-1] multiplies
    the current token.
    """
    S, D = x.shape
    W = w.shape[-1]
    assert tuple(w.shape) == (D, 1, W), w.shape
    xp = torch.cat((torch.zeros(W - 1, D, dtype=x.dtype), x), dim=0)  # [S+W-1, D]
    y = torch.zeros_like(x)
    for j in range(W):
        y = y + xp[j:j + S] * w[:, 0, j][None, :]
    return torch.nn.functional.silu(y)


def kda_gate(g: torch.Tensor, A_log: torch.Tensor, dt_bias: torch.Tensor, lower_bound: Optional[float] = None):
    """fla ``naive_kda_gate`` / ``naive_kda_lowerbound_gate``: g [S, H, K] -> log-decay [S, H, K].

    default:      gl = -exp(A_log[h]) * softplus(g + dt_bias[h*K + k])
    lower_bound:  gl = lower_bound * sigmoid(exp(A_log[h]) * (g + dt_bias[h*K + k]))
    """
    S, H, K = g.shape
    a = A_log.reshape(H).float().exp().view(1, H, 1)
    x = g.float() + dt_bias.reshape(H, K).float()[None]
    if lower_bound is None:
        return -a * torch.nn.functional.softplus(x)
    return lower_bound * torch.sigmoid(a * x)


def l2norm_fla(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """fla ``l2norm_fwd`` (modules/l2norm.py): x * 1/sqrt(sum(x^2) + eps), eps 1e-6 inside the sqrt."""
    return x * torch.rsqrt((x * x).sum(-1, keepdim=True) + eps)


def kda_recurrent(q, k, v, g, beta, scale: float):
    """Token-by-token KDA (fla ``naive_recurrent_kda``), zero initial state.

    q, k [S, H, K] (already l2-normalised), v [S, H, V], g [S, H, K] log-decay (<= 0), beta [S, H].
    State S_h [K, V] per head:
        S   = S * exp(g_t)[:, None]                    # per key channel
        S  += (beta_t k_t) ⊗ (v_t - k_tᵀ S)            # delta rule
        o_t = (scale q_t)ᵀ S
    """
    Sq, H, K = q.shape
    V = v.shape[-1]
    st = torch.zeros(H, K, V, dtype=torch.float32)
    o = torch.zeros(Sq, H, V, dtype=torch.float32)
    qs = q.float() * scale
    for t in range(Sq):
        st = st * g[t].exp()[..., None]
        kt = k[t].float()
        pred = (kt[..., None] * st).sum(-2)  # [H, V]
        st = st + (beta[t][:, None] * kt)[..., None] * (v[t].float() - pred)[:, None, :]
        o[t] = (qs[t][..., None] * st).sum(-2)
    return o


def rms_norm_gated_sigmoid(x: torch.Tensor, w: torch.Tensor, gate: torch.Tensor, eps: float) -> torch.Tensor:
    """fla ``FusedRMSNormGated(activation='sigmoid')``: x * rsqrt(mean(x^2) + eps) * w * sigmoid(gate)."""
    return rms_norm(x, w, eps) * torch.sigmoid(gate)


def kimi_route(logits, bias, c: dict):
    """Moonshot ``KimiMoEGate`` (sigmoid, noaux_tc-style): the DeepSeek router with Kimi key names.
    The correction bias is used for the SELECTION only (see README: the remote code adds it in place)."""
    if c.get("moe_router_activation_func", "sigmoid") != "sigmoid":
        raise NotImplementedError(c.get("moe_router_activation_func"))
    k = c["num_experts_per_token"]
    return route_sigmoid_group(logits, bias, c.get("num_expert_group", 1), c.get("topk_group", 1), k,
                               bool(c["moe_renormalize"]) and k > 1, c["routed_scaling_factor"])


# ---------------------------------------------------------------------------
# Kimi-K3 pieces (transformers models/kimi_k3/modular_kimi_k3.py; llama.cpp src/models/kimi-k3.cpp)
# ---------------------------------------------------------------------------

K3_PREFIX = "language_model."  # the text model sits under the multimodal wrapper in the release
K3_BANK_RAW = True  # AttnRes banks the raw layer input (not the mixed one); a switch for the mutation table


def situ_mul(gate: torch.Tensor, up: torch.Tensor, beta: float, linear_beta: Optional[float]) -> torch.Tensor:
    """SiTU-GLU: beta*tanh(gate/beta)*sigmoid(gate) * (linear_beta*tanh(up/linear_beta) if linear_beta else up)."""
    if linear_beta:
        up = linear_beta * torch.tanh(up / linear_beta)
    return beta * torch.tanh(gate / beta) * torch.sigmoid(gate) * up


def situ_mlp(x, wg, wu, wd, beta, linear_beta):
    return linear(situ_mul(linear(x, wg), linear(x, wu), beta, linear_beta), wd)


def attn_res_mix(cur: torch.Tensor, bank: List[torch.Tensor], proj: torch.Tensor, norm_w: torch.Tensor, eps: float):
    """AttnRes mix (transformers ``KimiK3AttentionResidual``, llama.cpp ``res_mix``): the banked block inputs and
    the current stream are scored by one learned vector and mixed by a softmax over the N = len(bank)+1 sources:
        V = [bank_0, ..., bank_{n-1}, cur]          (each [S, hidden])
        score_j = proj · RMSNorm(V_j; norm_w, eps)   (proj = the [1, hidden] weight)
        out = sum_j softmax(score)_j * V_j           (the RAW values, not the normed ones)
    With an empty bank the stream passes unchanged."""
    if not bank:
        return cur
    V = torch.stack(list(bank) + [cur], dim=0)  # [N, S, D]
    scores = (rms_norm(V, norm_w, eps) * proj.reshape(-1)).sum(-1)  # [N, S]
    probs = torch.softmax(scores, dim=0)
    return (probs[..., None] * V).sum(0)


def k3_a_log(A_log: torch.Tensor, H: int) -> torch.Tensor:
    """The release stores A_log 1-D, zero-padded past the H heads (colibri: [128] for 96 heads); use the first H."""
    flat = A_log.reshape(-1)
    assert flat.numel() >= H, (A_log.shape, H)
    return flat[:H]


# ---------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------


class ReferenceModel:
    """Reference causal LM. ``forward(tokens)`` -> logits [S, vocab] (float32)."""

    def __new__(cls, config=None, weights=None):
        fam = family_module(config)
        if fam is not None:  # a family with a module of its own (FAMILY_MODULES)
            return fam.Model(config, weights)
        return super().__new__(cls)

    def __init__(self, config: dict, weights: Dict[str, torch.Tensor]):
        self.c = config
        self.w = {k: v.float() for k, v in weights.items()}
        self.mt = config["model_type"]
        if self.mt not in ("deepseek_v3", "qwen3_moe", "glm4_moe", "mixtral", "gpt_oss", "kimi_linear", "kimi_k3"):
            raise NotImplementedError(self.mt)
        self.trace: List[dict] = []
        self.clamp_stats: List[dict] = []
        self.kda_decay_trace: List[torch.Tensor] = []
        self.attn_res_trace: List[torch.Tensor] = []
        if self.mt == "kimi_k3":
            self.tc = config["text_config"]
            assert self.tc.get("model_type") == "kimi_linear" and self.tc.get("mla_use_nope", True)
            self.kinds = kimi_layer_kinds(self.tc)
            return
        c = config
        if self.mt == "kimi_linear":
            self.kinds = kimi_layer_kinds(c)
        if self.mt in ("deepseek_v3", "kimi_linear"):  # kimi_linear: no RoPE at all (mla_use_nope)
            self.rope_dim = c["qk_rope_head_dim"]  # DeepseekV3Config.head_dim = qk_rope_head_dim
        else:
            head_dim = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
            self.head_dim = head_dim
            self.rope_dim = int(head_dim * c.get("partial_rotary_factor", 1.0))
        self.inv_freq, self.attn_factor = rope_parameters(c, self.rope_dim)

    # -- helpers ------------------------------------------------------------
    def W(self, name):
        return self.w[name]

    def has(self, name):
        return name in self.w

    def is_moe_layer(self, i: int) -> bool:
        c = self.c
        if self.mt in ("deepseek_v3", "glm4_moe"):
            return i >= c["first_k_dense_replace"]
        if self.mt == "qwen3_moe":
            return (i not in c.get("mlp_only_layers", [])) and c["num_experts"] > 0 and (i + 1) % c["decoder_sparse_step"] == 0
        if self.mt == "kimi_k3":
            c = self.tc
        if self.mt in ("kimi_linear", "kimi_k3"):  # KimiDecoderLayer
            return (c.get("num_experts") is not None and i >= c["first_k_dense_replace"]
                    and i % c.get("moe_layer_freq", 1) == 0)
        return True  # mixtral

    # -- attention ----------------------------------------------------------
    def attn_mla(self, i, x, cos, sin):
        c, p = self.c, f"model.layers.{i}.self_attn."
        S = x.shape[0]
        H = c["num_attention_heads"]
        dn, dr, dv, r = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"], c["kv_lora_rank"]
        if c.get("q_lora_rank") is None:
            q = linear(x, self.W(p + "q_proj.weight"))
        else:
            qa = linear(x, self.W(p + "q_a_proj.weight"))
            # NB: HF builds q_a_layernorm / kv_a_layernorm with the default eps=1e-6
            q = linear(rms_norm(qa, self.W(p + "q_a_layernorm.weight"), 1e-6), self.W(p + "q_b_proj.weight"))
        q = q.view(S, H, dn + dr).transpose(0, 1)  # [H,S,dn+dr]
        q_nope, q_rot = q[..., :dn], q[..., dn:]
        ckv = linear(x, self.W(p + "kv_a_proj_with_mqa.weight"))  # [S, r+dr]
        c_kv, k_rot = ckv[:, :r], ckv[:, r:]
        kv = linear(rms_norm(c_kv, self.W(p + "kv_a_layernorm.weight"), 1e-6), self.W(p + "kv_b_proj.weight"))
        kv = kv.view(S, H, dn + dv).transpose(0, 1)  # [H,S,dn+dv]
        k_nope, v = kv[..., :dn], kv[..., dn:]
        k_rot = k_rot.view(1, S, dr)
        if c.get("rope_interleave", True):
            q_rot = apply_rope_interleave(q_rot, cos, sin)
            k_rot = apply_rope_interleave(k_rot, cos, sin)
        else:
            q_rot = apply_rope_half(q_rot, cos, sin)
            k_rot = apply_rope_half(k_rot, cos, sin)
        k_rot = k_rot.expand(H, S, dr)
        qs = torch.cat((q_nope, q_rot), dim=-1)
        ks = torch.cat((k_nope, k_rot), dim=-1)
        scale = (dn + dr) ** -0.5
        rs = c.get("rope_scaling")
        if isinstance(rs, dict):
            mad = rs.get("mscale_all_dim", 0)
            if mad:
                m = yarn_get_mscale(rs["factor"], mad)
                scale = scale * m * m
        o = causal_attention(qs, ks, v, scale)  # [H,S,dv]
        o = o.transpose(0, 1).reshape(S, H * dv)
        return linear(o, self.W(p + "o_proj.weight"))

    def attn_gqa(self, i, x, cos, sin):
        c, p = self.c, f"model.layers.{i}.self_attn."
        S = x.shape[0]
        H, KV, D = c["num_attention_heads"], c["num_key_value_heads"], self.head_dim
        b = (lambda n: self.w.get(p + n))
        q = linear(x, self.W(p + "q_proj.weight"), b("q_proj.bias")).view(S, H, D)
        k = linear(x, self.W(p + "k_proj.weight"), b("k_proj.bias")).view(S, KV, D)
        v = linear(x, self.W(p + "v_proj.weight"), b("v_proj.bias")).view(S, KV, D)
        use_qk_norm = (self.mt == "qwen3_moe") or (self.mt == "glm4_moe" and c.get("use_qk_norm", False))
        if use_qk_norm:  # per-head RMSNorm over head_dim, BEFORE rope
            q = rms_norm(q, self.W(p + "q_norm.weight"), c["rms_norm_eps"])
            k = rms_norm(k, self.W(p + "k_norm.weight"), c["rms_norm_eps"])
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
        q = apply_rope_half(q, cos, sin)
        k = apply_rope_half(k, cos, sin)
        n_rep = H // KV
        o = causal_attention(q, repeat_kv(k, n_rep), repeat_kv(v, n_rep), D ** -0.5)
        o = o.transpose(0, 1).reshape(S, H * D)
        return linear(o, self.W(p + "o_proj.weight"), b("o_proj.bias"))

    def attn_gpt_oss(self, i, x, cos, sin):
        """q/k/v/o with biases, half-split RoPE, sinks, sliding window on "sliding_attention" layers."""
        c, p = self.c, f"model.layers.{i}.self_attn."
        S = x.shape[0]
        H, KV, D = c["num_attention_heads"], c["num_key_value_heads"], self.head_dim
        q = linear(x, self.W(p + "q_proj.weight"), self.W(p + "q_proj.bias")).view(S, H, D).transpose(0, 1)
        k = linear(x, self.W(p + "k_proj.weight"), self.W(p + "k_proj.bias")).view(S, KV, D).transpose(0, 1)
        v = linear(x, self.W(p + "v_proj.weight"), self.W(p + "v_proj.bias")).view(S, KV, D).transpose(0, 1)
        q = apply_rope_half(q, cos, sin)
        k = apply_rope_half(k, cos, sin)
        window = c["sliding_window"] if gpt_oss_layer_types(c)[i] == "sliding_attention" else None
        n_rep = H // KV
        o = sink_attention(q, repeat_kv(k, n_rep), repeat_kv(v, n_rep), self.W(p + "sinks"), D ** -0.5, window)
        o = o.transpose(0, 1).reshape(S, H * D)
        return linear(o, self.W(p + "o_proj.weight"), self.W(p + "o_proj.bias"))

    def mlp_gpt_oss(self, i, x):
        c, p = self.c, f"model.layers.{i}.mlp."
        logits = linear(x, self.W(p + "router.weight"), self.W(p + "router.bias"))
        idx, w, info = route_topk_softmax(logits, gpt_oss_top_k(c))
        gu_w, gu_b = self.W(p + "experts.gate_up_proj"), self.W(p + "experts.gate_up_proj_bias")  # [E,hid,2I], [E,2I]
        dn_w, dn_b = self.W(p + "experts.down_proj"), self.W(p + "experts.down_proj_bias")  # [E,I,hid], [E,hid]
        alpha = float(c.get("swiglu_alpha", 1.702))
        limit = float(c.get("swiglu_limit", 7.0))

        def expert(e, xx):
            gate_up = xx @ gu_w[e] + gu_b[e]  # [n, 2I]
            g, u = gate_up[..., ::2], gate_up[..., 1::2]
            self.clamp_stats.append({"layer": i, "gate_hi": int((g > limit).sum()), "up_out": int((u.abs() > limit).sum()),
                                     "rows_hit": int(((g > limit) | (u.abs() > limit)).any(-1).sum()),
                                     "rows": g.shape[0], "entries": g.numel()})
            return gpt_oss_glu(gate_up, alpha, limit) @ dn_w[e] + dn_b[e]

        out = moe_combine(x, idx, w, expert)
        self.trace.append({"layer": i, "idx": idx, "weights": w, **info})
        return out

    # -- Kimi-Linear ----------------------------------------------------------
    def attn_kimi_mla(self, i, x):
        """KimiMLAAttention: DeepSeek MLA with q_proj (q_lora_rank null) and NO RoPE (mla_use_nope):
        the qk_rope_head_dim part of q and the shared k_rot = kv_a_proj_with_mqa(x)[:, r:] are used
        as they are (k_rot is one head broadcast to all heads, never rotated)."""
        c, p = self.c, f"model.layers.{i}.self_attn."
        S = x.shape[0]
        H = c["num_attention_heads"]
        dn, dr, dv, r = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"], c["kv_lora_rank"]
        assert c.get("q_lora_rank") is None and c.get("mla_use_nope", True)
        q = linear(x, self.W(p + "q_proj.weight")).view(S, H, dn + dr).transpose(0, 1)  # [H,S,dn+dr]
        ckv = linear(x, self.W(p + "kv_a_proj_with_mqa.weight"))  # [S, r+dr]
        c_kv, k_rot = ckv[:, :r], ckv[:, r:]
        # KimiRMSNorm(kv_lora_rank) is built without eps: the default 1e-6, not rms_norm_eps
        kv = linear(rms_norm(c_kv, self.W(p + "kv_a_layernorm.weight"), 1e-6), self.W(p + "kv_b_proj.weight"))
        kv = kv.view(S, H, dn + dv).transpose(0, 1)
        k_nope, v = kv[..., :dn], kv[..., dn:]
        ks = torch.cat((k_nope, k_rot.view(1, S, dr).expand(H, S, dr)), dim=-1)
        o = causal_attention(q, ks, v, (dn + dr) ** -0.5)  # [H,S,dv]
        return linear(o.transpose(0, 1).reshape(S, H * dv), self.W(p + "o_proj.weight"))

    def attn_kda(self, i, x):
        """KimiDeltaAttention (chunk_kda / fused_recurrent_kda with use_qk_l2norm_in_kernel=True)."""
        c, p = self.c, f"model.layers.{i}.self_attn."
        S = x.shape[0]
        lac = c["linear_attn_config"]
        H, K = lac["num_heads"], lac["head_dim"]
        q = kda_short_conv(linear(x, self.W(p + "q_proj.weight")), self.W(p + "q_conv1d.weight")).view(S, H, K)
        k = kda_short_conv(linear(x, self.W(p + "k_proj.weight")), self.W(p + "k_conv1d.weight")).view(S, H, K)
        v = kda_short_conv(linear(x, self.W(p + "v_proj.weight")), self.W(p + "v_conv1d.weight")).view(S, H, K)
        graw = linear(linear(x, self.W(p + "f_a_proj.weight")), self.W(p + "f_b_proj.weight")).view(S, H, K)
        g = kda_gate(graw, self.W(p + "A_log"), self.W(p + "dt_bias"), lac.get("gate_lower_bound"))
        beta = torch.sigmoid(linear(x, self.W(p + "b_proj.weight")))  # [S, H]
        q, k = l2norm_fla(q), l2norm_fla(k)
        o = kda_recurrent(q, k, v, g, beta, K ** -0.5)  # [S, H, K]
        gate = linear(linear(x, self.W(p + "g_a_proj.weight")), self.W(p + "g_b_proj.weight")).view(S, H, K)
        o = rms_norm_gated_sigmoid(o, self.W(p + "o_norm.weight"), gate, c["rms_norm_eps"])
        self.kda_decay_trace.append(g.exp())
        return linear(o.reshape(S, H * K), self.W(p + "o_proj.weight"))

    def mlp_kimi(self, i, x):
        c, p = self.c, f"model.layers.{i}."
        if not self.is_moe_layer(i):
            return swiglu(x, self.W(p + "mlp.gate_proj.weight"), self.W(p + "mlp.up_proj.weight"),
                          self.W(p + "mlp.down_proj.weight"))
        m = p + "block_sparse_moe."
        logits = linear(x, self.W(m + "gate.weight"))
        idx, w, info = kimi_route(logits, self.W(m + "gate.e_score_correction_bias"), c)
        fn = lambda e, xx: swiglu(xx, self.W(f"{m}experts.{e}.w1.weight"), self.W(f"{m}experts.{e}.w3.weight"),
                                  self.W(f"{m}experts.{e}.w2.weight"))
        out = moe_combine(x, idx, w, fn)
        if c.get("num_shared_experts"):
            out = out + swiglu(x, self.W(m + "shared_experts.gate_proj.weight"), self.W(m + "shared_experts.up_proj.weight"),
                               self.W(m + "shared_experts.down_proj.weight"))
        self.trace.append({"layer": i, "idx": idx, "weights": w, **info})
        return out

    # -- feed-forward -------------------------------------------------------
    def mlp(self, i, x, pos_offset_trace: bool = True):
        c = self.c
        p = f"model.layers.{i}."
        if not self.is_moe_layer(i):
            return swiglu(x, self.W(p + "mlp.gate_proj.weight"), self.W(p + "mlp.up_proj.weight"),
                          self.W(p + "mlp.down_proj.weight"))
        if self.mt == "mixtral":
            logits = linear(x, self.W(p + "block_sparse_moe.gate.weight"))
            idx, w, info = route_softmax(logits, c["num_experts_per_tok"], True)
            ep = p + "block_sparse_moe.experts."
            fn = lambda e, xx: swiglu(xx, self.W(f"{ep}{e}.w1.weight"), self.W(f"{ep}{e}.w3.weight"),
                                      self.W(f"{ep}{e}.w2.weight"))
        elif self.mt == "qwen3_moe":
            logits = linear(x, self.W(p + "mlp.gate.weight"))
            idx, w, info = route_softmax(logits, c["num_experts_per_tok"], c["norm_topk_prob"])
            ep = p + "mlp.experts."
            fn = lambda e, xx: swiglu(xx, self.W(f"{ep}{e}.gate_proj.weight"), self.W(f"{ep}{e}.up_proj.weight"),
                                      self.W(f"{ep}{e}.down_proj.weight"))
        else:  # deepseek_v3 / glm4_moe
            logits = linear(x, self.W(p + "mlp.gate.weight"))
            idx, w, info = route_sigmoid_group(
                logits, self.W(p + "mlp.gate.e_score_correction_bias"), c["n_group"], c["topk_group"],
                c["num_experts_per_tok"], c["norm_topk_prob"], c["routed_scaling_factor"])
            ep = p + "mlp.experts."
            fn = lambda e, xx: swiglu(xx, self.W(f"{ep}{e}.gate_proj.weight"), self.W(f"{ep}{e}.up_proj.weight"),
                                      self.W(f"{ep}{e}.down_proj.weight"))
        out = moe_combine(x, idx, w, fn)
        if self.mt in ("deepseek_v3", "glm4_moe") and c.get("n_shared_experts", 0):
            sp = p + "mlp.shared_experts."
            out = out + swiglu(x, self.W(sp + "gate_proj.weight"), self.W(sp + "up_proj.weight"),
                               self.W(sp + "down_proj.weight"))
        self.trace.append({"layer": i, "idx": idx, "weights": w, **info})
        return out

    # -- full model ---------------------------------------------------------
    # -- Kimi-K3 --------------------------------------------------------------
    def k3_kda(self, i, x):
        """KimiK3DeltaAttention: the Kimi-Linear KDA with the lower-bound gate and a full-rank output gate."""
        tc, p = self.tc, f"{K3_PREFIX}model.layers.{i}.self_attn."
        S = x.shape[0]
        lac = tc["linear_attn_config"]
        H, K = lac["num_heads"], lac["head_dim"]
        q = kda_short_conv(linear(x, self.W(p + "q_proj.weight")), self.W(p + "q_conv1d.weight")).view(S, H, K)
        k = kda_short_conv(linear(x, self.W(p + "k_proj.weight")), self.W(p + "k_conv1d.weight")).view(S, H, K)
        v = kda_short_conv(linear(x, self.W(p + "v_proj.weight")), self.W(p + "v_conv1d.weight")).view(S, H, K)
        graw = linear(linear(x, self.W(p + "f_a_proj.weight")), self.W(p + "f_b_proj.weight")).view(S, H, K)
        g = kda_gate(graw, k3_a_log(self.W(p + "A_log"), H), self.W(p + "dt_bias"), lac.get("gate_lower_bound"))
        beta = torch.sigmoid(linear(x, self.W(p + "b_proj.weight")))
        o = kda_recurrent(l2norm_fla(q), l2norm_fla(k), v, g, beta, K ** -0.5)
        if lac.get("use_full_rank_gate", False):
            gate = linear(x, self.W(p + "g_proj.weight")).view(S, H, K)
        else:
            gate = linear(linear(x, self.W(p + "g_a_proj.weight")), self.W(p + "g_b_proj.weight")).view(S, H, K)
        o = rms_norm_gated_sigmoid(o, self.W(p + "o_norm.weight"), gate, tc["rms_norm_eps"])
        self.kda_decay_trace.append(g.exp())
        return linear(o.reshape(S, H * K), self.W(p + "o_proj.weight"))

    def k3_mla(self, i, x):
        """KimiK3GatedMLA: q-LoRA MLA without RoPE, output * sigmoid(g_proj(x)) before o_proj."""
        tc, p = self.tc, f"{K3_PREFIX}model.layers.{i}.self_attn."
        S = x.shape[0]
        H = tc["num_attention_heads"]
        dn, dr, dv, r = tc["qk_nope_head_dim"], tc["qk_rope_head_dim"], tc["v_head_dim"], tc["kv_lora_rank"]
        if tc.get("q_lora_rank") is None:
            q = linear(x, self.W(p + "q_proj.weight"))
        else:  # KimiK3RMSNorm(q_lora_rank): LlamaRMSNorm default eps 1e-6
            q = linear(rms_norm(linear(x, self.W(p + "q_a_proj.weight")), self.W(p + "q_a_layernorm.weight"), 1e-6),
                       self.W(p + "q_b_proj.weight"))
        q = q.view(S, H, dn + dr).transpose(0, 1)
        ckv = linear(x, self.W(p + "kv_a_proj_with_mqa.weight"))
        c_kv, k_sh = ckv[:, :r], ckv[:, r:]
        kv = linear(rms_norm(c_kv, self.W(p + "kv_a_layernorm.weight"), 1e-6), self.W(p + "kv_b_proj.weight"))
        kv = kv.view(S, H, dn + dv).transpose(0, 1)
        ks = torch.cat((kv[..., :dn], k_sh.view(1, S, dr).expand(H, S, dr)), dim=-1)
        o = causal_attention(q, ks, kv[..., dn:], (dn + dr) ** -0.5).transpose(0, 1).reshape(S, H * dv)
        if tc.get("mla_use_output_gate", False):
            o = o * torch.sigmoid(linear(x, self.W(p + "g_proj.weight")))
        return linear(o, self.W(p + "o_proj.weight"))

    def k3_mlp(self, i, x):
        tc, p = self.tc, f"{K3_PREFIX}model.layers.{i}."
        b1, b2 = tc["activation_situ_beta"], tc.get("activation_situ_linear_beta")
        if not self.is_moe_layer(i):
            return situ_mlp(x, self.W(p + "mlp.gate_proj.weight"), self.W(p + "mlp.up_proj.weight"),
                            self.W(p + "mlp.down_proj.weight"), b1, b2)
        m = p + "block_sparse_moe."
        logits = linear(x, self.W(m + "gate.weight"))  # the router reads the full-width x
        idx, w, info = kimi_route(logits, self.W(m + "gate.e_score_correction_bias"), tc)
        z = linear(x, self.W(m + "routed_expert_down_proj.weight"))  # [S, latent]
        fn = lambda e, zz: situ_mlp(zz, self.W(f"{m}experts.{e}.w1.weight"), self.W(f"{m}experts.{e}.w3.weight"),
                                    self.W(f"{m}experts.{e}.w2.weight"), b1, b2)
        u = moe_combine(z, idx, w, fn)  # weighted sum in the latent (weights include routed_scaling_factor)
        if tc.get("latent_moe_use_norm", True):
            u = rms_norm(u, self.W(m + "routed_expert_norm.weight"), tc["rms_norm_eps"])
        out = linear(u, self.W(m + "routed_expert_up_proj.weight"))
        if tc.get("num_shared_experts"):
            sp = m + "shared_experts."
            out = out + situ_mlp(x, self.W(sp + "gate_proj.weight"), self.W(sp + "up_proj.weight"),
                                 self.W(sp + "down_proj.weight"), b1, b2)
        self.trace.append({"layer": i, "idx": idx, "weights": w, **info})
        return out

    def forward_k3(self, ids: torch.Tensor) -> torch.Tensor:
        tc = self.tc
        eps, bs = tc["rms_norm_eps"], tc["attn_res_block_size"]
        P = K3_PREFIX + "model."
        h = self.W(P + "embed_tokens.weight")[ids]
        bank: List[torch.Tensor] = []
        for i in range(tc["num_hidden_layers"]):
            p = f"{P}layers.{i}."
            prefix = h  # the layer input (partial sum of the current block)
            cur = attn_res_mix(prefix, bank, self.W(p + "self_attention_res_proj.weight"),
                               self.W(p + "self_attention_res_norm.weight"), eps)
            banked = i % bs == 0
            if banked:  # start of a block: bank the raw layer input; the block's sum restarts from the attention
                bank.append(prefix if K3_BANK_RAW else cur)
            x = rms_norm(cur, self.W(p + "input_layernorm.weight"), eps)
            a = self.k3_kda(i, x) if self.kinds[i] == "kda" else self.k3_mla(i, x)
            prefix = a if banked else prefix + a
            cur = attn_res_mix(prefix, bank, self.W(p + "mlp_res_proj.weight"), self.W(p + "mlp_res_norm.weight"), eps)
            x = rms_norm(cur, self.W(p + "post_attention_layernorm.weight"), eps)
            h = prefix + self.k3_mlp(i, x)
            self.attn_res_trace.append(torch.tensor(len(bank)))
        cur = attn_res_mix(h, bank, self.W(P + "output_attn_res_proj.weight"), self.W(P + "output_attn_res_norm.weight"), eps)
        cur = rms_norm(cur, self.W(P + "norm.weight"), eps)
        return linear(cur, self.W(K3_PREFIX + "lm_head.weight"))

    @torch.no_grad()
    def forward(self, tokens: List[int]) -> torch.Tensor:
        self.trace = []
        self.clamp_stats = []
        self.kda_decay_trace = []
        self.attn_res_trace = []
        if self.mt == "kimi_k3":
            return self.forward_k3(torch.tensor(tokens, dtype=torch.long))
        c = self.c
        self.trace = []
        self.clamp_stats = []
        self.kda_decay_trace = []
        ids = torch.tensor(tokens, dtype=torch.long)
        S = ids.shape[0]
        h = self.W("model.embed_tokens.weight")[ids]
        cos, sin = rope_cos_sin(self.inv_freq, self.attn_factor, S)
        eps = c["rms_norm_eps"]
        for i in range(c["num_hidden_layers"]):
            p = f"model.layers.{i}."
            x = rms_norm(h, self.W(p + "input_layernorm.weight"), eps)
            if self.mt == "kimi_linear":
                a = self.attn_kda(i, x) if self.kinds[i] == "kda" else self.attn_kimi_mla(i, x)
            elif self.mt == "deepseek_v3":
                a = self.attn_mla(i, x, cos, sin)
            elif self.mt == "gpt_oss":
                a = self.attn_gpt_oss(i, x, cos, sin)
            else:
                a = self.attn_gqa(i, x, cos, sin)
            h = h + a
            x = rms_norm(h, self.W(p + "post_attention_layernorm.weight"), eps)
            if self.mt == "gpt_oss":
                h = h + self.mlp_gpt_oss(i, x)
            elif self.mt == "kimi_linear":
                h = h + self.mlp_kimi(i, x)
            else:
                h = h + self.mlp(i, x)
        h = rms_norm(h, self.W("model.norm.weight"), eps)
        return linear(h, self.W("lm_head.weight"))

    def greedy(self, tokens: List[int], n: int) -> List[int]:
        """n greedy steps; every step recomputes the full sequence (no cache)."""
        seq = list(tokens)
        out = []
        for _ in range(n):
            nxt = int(torch.argmax(self.forward(seq)[-1]).item())
            out.append(nxt)
            seq.append(nxt)
        return out


def run_fixture(fixture_dir: str):
    """Recompute (logits, greedy) for a fixture directory from its files only."""
    config, weights = load_checkpoint(fixture_dir)
    with open(os.path.join(fixture_dir, "tokens.txt")) as f:
        tokens = [int(t) for t in f.read().strip().split(",")]
    m = ReferenceModel(config, weights)
    return m.forward(tokens), m.greedy(tokens, 16)


if __name__ == "__main__":
    import sys

    for d in sys.argv[1:]:
        logits, greedy = run_fixture(d)
        ref = np.fromfile(os.path.join(d, "logits.f32"), dtype="<f4").reshape(logits.shape)
        with open(os.path.join(d, "greedy.txt")) as f:
            g = [int(t) for t in f.read().strip().split(",")]
        print(d, "max|dlogit| =", float(np.abs(ref - logits.numpy()).max()), "greedy ok =", g == greedy)
