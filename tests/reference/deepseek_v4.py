"""Independent plain-PyTorch reference for DeepSeek-V4 (``model_type: "deepseek_v4"``, V4-Flash / V4-Pro).

Specification: huggingface/transformers ``models/deepseek_v4/modeling_deepseek_v4.py`` (the generated
modeling file, not the older modular file) and ``configuration_deepseek_v4.py``; the checkpoint names are
the release's (``layers.N.attn.wq_a.weight`` ...), which is what ``from_pretrained`` reads (transformers
renames them at load time, ``conversion_mapping.py``). Cross-checked against antirez/ds4 ``ds4.c`` and
``gguf-tools/deepseek4-quantize.c``, llama.cpp ``src/models/deepseek4.cpp`` and a copy of the release
``inference/model.py``. README.md (section "DeepSeek-V4") has every formula and where the sources disagree.

Pieces, per decoder layer (float32 throughout, full causal recompute, no cache):

* mHC (manifold-constrained hyper-connections): ``hc_mult`` residual streams; before each sub-layer a
  weightless RMSNorm over the flattened streams, a projection to (pre, post, comb), Sinkhorn on comb; the
  sub-layer reads sum_k pre_k stream_k and writes stream'_k = post_k y + sum_j comb[j, k] stream_j.
* attention: q-LoRA with a per-head weightless RMSNorm, one shared K=V head, interleaved RoPE on the last
  ``qk_rope_head_dim`` dims, a per-head sink, sliding window over the raw entries plus compressed entries
  (HCA: every closed window of ``ratio`` tokens; CSA: ratio-4 windows with overlap, filtered by the
  lightning indexer's top-k), de-rotation of the output, grouped low-rank output projection.
* MoE: sqrt(softplus) router, hash routing (``tid2eid``) in the first ``num_hash_layers`` layers,
  clamped SwiGLU experts, one shared expert.

The release's quantisation-aware-training round trips (FP8 on the non-RoPE KV dims, Hadamard + FP4 on the
indexer's q and k; antirez/ds4 and inference/model.py do them, transformers does not) are OFF: the
reference follows transformers. ``QAT_FP8_KV`` / ``QAT_FP4_INDEXER`` turn them on (selftest measures them).

Only torch, numpy and the standard library (plus ``models`` of this directory).
"""

from __future__ import annotations

import math
from typing import Dict, List, Tuple

import numpy as np
import torch

import models as M

MODEL_TYPE = "deepseek_v4"

# switches used by selftest.py's mutation table and the QAT measurement (defaults = the spec)
QAT_FP8_KV = False  # the release's FP8 round trip of the non-RoPE KV dims, raw and compressed (transformers: none)
QAT_FP4_INDEXER = False  # the release's Hadamard + FP4 round trip of the indexer's q and k (transformers: none)
CSA_PREV_HALF_FIRST = True  # CSA overlap: previous window reads channels [:D], current window [D:]
COMB_TRANSPOSED = True  # stream'_k = sum_j comb[j, k] stream_j (False: comb[k, j])
DEROTATE_OUTPUT = True  # undo the RoPE on the output's rope slice (K = V carries it)

# ---------------------------------------------------------------------------
# Checkpoint formats (release layout)
# ---------------------------------------------------------------------------


def e8m0_to_f32(b: np.ndarray) -> np.ndarray:
    """OCP E8M0 scale bytes -> float32: 2^(b - 127); b = 0 is 2^-127; b = 0xFF is NaN."""
    b = np.asarray(b, dtype=np.uint8)
    out = np.ldexp(np.ones(b.shape, dtype=np.float64), b.astype(np.int32) - 127).astype(np.float32)
    return np.where(b == 0xFF, np.float32(np.nan), out).astype(np.float32)


def f32_to_e8m0_ceil(x: np.ndarray) -> np.ndarray:
    """The power-of-two scale 2^ceil(log2 x) as an E8M0 byte (x > 0)."""
    e = np.ceil(np.log2(np.asarray(x, dtype=np.float64)))
    assert (e >= -127).all() and (e <= 127).all()
    return (e + 127).astype(np.uint8)


def dequant_fp8_e8m0(codes: np.ndarray, scale: np.ndarray, block=(128, 128)) -> np.ndarray:
    """FP8 E4M3 weight [out, in] with E8M0 block scales [ceil(out/128), ceil(in/128)]:
    w[i, j] = e4m3(codes[i, j]) * 2^(scale[i // 128, j // 128] - 127)."""
    rows, cols = codes.shape
    br, bc = block
    assert scale.shape == (-(-rows // br), -(-cols // bc)), (codes.shape, scale.shape)
    s = np.repeat(np.repeat(e8m0_to_f32(scale), br, axis=0), bc, axis=1)[:rows, :cols]
    return (M.e4m3_to_f32(codes) * s).astype(np.float32)


def dequant_fp4_e8m0(packed: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Routed-expert FP4 (E2M1) weight, stored I8 [out, in/2], with E8M0 scales [out, in/32]:
    byte j of a row holds column 2j in its LOW nibble and column 2j+1 in its HIGH nibble;
    w[r, c] = FP4[nibble] * 2^(scale[r, c // 32] - 127)  (ds4 deepseek4-quantize.c dequant_fp4_weight)."""
    p = np.asarray(packed).view(np.uint8)
    R, C2 = p.shape
    assert scale.shape == (R, 2 * C2 // 32), (packed.shape, scale.shape)
    lo = M.FP4_E2M1[(p & 0x0F).astype(np.int64)]
    hi = M.FP4_E2M1[(p >> 4).astype(np.int64)]
    vals = np.stack((lo, hi), axis=-1).reshape(R, 2 * C2)
    s = np.repeat(e8m0_to_f32(scale), 32, axis=1)
    return (vals * s).astype(np.float32)


def decode(dtype: str, shape: List[int], raw: bytes) -> np.ndarray:
    if dtype == "I64":
        return np.frombuffer(raw, dtype="<i8").reshape(shape).copy()
    if dtype == "I32":
        return np.frombuffer(raw, dtype="<i4").reshape(shape).astype(np.int64)
    if dtype == "I8":
        return np.frombuffer(raw, dtype=np.int8).reshape(shape).copy()
    if dtype == "F8_E8M0":
        return np.frombuffer(raw, dtype=np.uint8).reshape(shape).copy()
    return M.decode_tensor(dtype, shape, raw)


def convert_checkpoint(config: dict, raw: Dict[str, Tuple[str, List[int], bytes]]) -> Dict[str, torch.Tensor]:
    """Release tensors -> float32 (``tid2eid`` -> int64), dropping ``mtp.*`` (transformers:
    ``_keys_to_ignore_on_load_unexpected = [r"(^|\\.)mtp\\..*"]``). ``X.weight`` F8_E4M3 + ``X.scale``
    F8_E8M0 is block FP8; ``X.weight`` I8 + ``X.scale`` F8_E8M0 is packed FP4 (routed experts)."""
    block = tuple((config.get("quantization_config") or {}).get("weight_block_size", [128, 128]))
    out: Dict[str, torch.Tensor] = {}
    for name, (dtype, shape, data) in raw.items():
        if name.startswith("mtp."):
            continue
        if name.endswith(".scale") and name[:-6] + ".weight" in raw:
            continue
        arr = decode(dtype, shape, data)
        if dtype in ("F8_E4M3", "I8"):
            base = name[: -len(".weight")]
            assert name.endswith(".weight") and base + ".scale" in raw, f"{name}: no companion .scale"
            sdt, sshape, sdata = raw[base + ".scale"]
            assert sdt == "F8_E8M0", f"{base}.scale must be F8_E8M0, got {sdt}"
            sc = decode(sdt, sshape, sdata)
            arr = dequant_fp8_e8m0(arr, sc, block) if dtype == "F8_E4M3" else dequant_fp4_e8m0(arr, sc)
        if dtype in ("I64", "I32"):
            out[name] = torch.from_numpy(np.ascontiguousarray(arr, dtype=np.int64))
        else:
            out[name] = torch.from_numpy(np.ascontiguousarray(arr, dtype=np.float32))
    return out


# ---------------------------------------------------------------------------
# Config helpers
# ---------------------------------------------------------------------------


def layer_ratios(c: dict) -> List[int]:
    """``compress_ratios`` (release key; the release lists num_hidden_layers + 1 entries, the last one the
    MTP layer's): 0 = sliding window only, 4 = CSA (overlapping windows + lightning indexer), any other
    ratio = HCA (the release: 128). transformers maps 0/4/128 to its ``layer_types``."""
    L = c["num_hidden_layers"]
    r = list(c["compress_ratios"])
    assert len(r) >= L, (len(r), L)
    return [int(x) for x in r[:L]]


def layer_kind(ratio: int) -> str:
    return "sliding" if ratio == 0 else ("csa" if ratio == 4 else "hca")


def rope_dim(c: dict) -> int:
    return int(c["qk_rope_head_dim"])


def rope_inv_freq(c: dict, compressed: bool) -> torch.Tensor:
    """Sliding layers ("main"): plain RoPE, theta = rope_theta. Compressed layers ("compress", their q/KV,
    compressor and indexer alike): theta = compress_rope_theta with YaRN from ``rope_scaling``, attention
    factor forced to 1.0 (transformers DeepseekV4Config; ds4 cancels its helper's mscale the same way)."""
    rd = rope_dim(c)
    if not compressed:
        return M.rope_parameters({"rope_theta": float(c["rope_theta"]), "rope_scaling": None}, rd)[0]
    rs = c.get("rope_scaling")
    cc = {"rope_theta": float(c["compress_rope_theta"]), "max_position_embeddings": c["max_position_embeddings"]}
    if isinstance(rs, dict) and rs.get("rope_type", rs.get("type")) == "yarn":
        cc["rope_scaling"] = dict(rs, attention_factor=1.0)
    else:
        cc["rope_scaling"] = None
    inv, af = M.rope_parameters(cc, rd)
    assert af == 1.0
    return inv


# ---------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------


def rms_norm_plain(x: torch.Tensor, eps: float) -> torch.Tensor:
    """Weightless RMSNorm (DeepseekV4UnweightedRMSNorm): x * rsqrt(mean(x^2) + eps)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def compressed_pos(n: int, ratio: int) -> torch.Tensor:
    """RoPE position of compressed entry w: w * ratio, its window's first token (transformers
    ``positions * compress_rate + first_window_position``; release ``freqs_cis[:cutoff:ratio]``)."""
    return torch.arange(n) * ratio


def rope_tail(x: torch.Tensor, pos: torch.Tensor, inv_freq: torch.Tensor, inverse: bool = False) -> torch.Tensor:
    """Interleaved RoPE on the LAST 2*len(inv_freq) dims of x [..., S, (heads,) D]; pos [S] (int).
    Pair (2i, 2i+1) of the tail rotates by angle pos * inv_freq[i]:
        out[2i] = x[2i] cos - x[2i+1] sin,  out[2i+1] = x[2i+1] cos + x[2i] sin   (inverse: sin -> -sin).
    x is [S, D] or [S, H, D]."""
    rd = 2 * inv_freq.shape[0]
    ang = pos.float()[:, None] * inv_freq[None, :].float()  # [S, rd/2]
    cos, sin = ang.cos(), ang.sin()
    if inverse:
        sin = -sin
    if x.dim() == 3:
        cos, sin = cos[:, None, :], sin[:, None, :]
    head, tail = x[..., :-rd], x[..., -rd:]
    a, b = tail[..., 0::2], tail[..., 1::2]
    rot = torch.stack((a * cos - b * sin, b * cos + a * sin), dim=-1).flatten(-2)
    return torch.cat((head, rot), dim=-1)


def sinkhorn(logits: torch.Tensor, iters: int, eps: float) -> torch.Tensor:
    """transformers DeepseekV4HyperConnection / ds4 hc_split_sinkhorn_one: logits [..., n, n] ->
    softmax over the last axis + eps, one column normalisation, then (iters - 1) x (row, column);
    every normalisation divides by (sum + eps)."""
    c = torch.softmax(logits, dim=-1) + eps
    c = c / (c.sum(dim=-2, keepdim=True) + eps)
    for _ in range(iters - 1):
        c = c / (c.sum(dim=-1, keepdim=True) + eps)
        c = c / (c.sum(dim=-2, keepdim=True) + eps)
    return c


def hc_weights(streams: torch.Tensor, fn: torch.Tensor, scale: torch.Tensor, base: torch.Tensor,
               hc: int, iters: int, hc_eps: float, rms_eps: float):
    """mHC control for one site. streams [S, hc, D]; fn [(2+hc)*hc, hc*D]; scale [3]; base [(2+hc)*hc].
    Returns pre [S, hc], post [S, hc], comb [S, hc, hc] (comb[s, j, k]: weight of input stream j in output k)."""
    S = streams.shape[0]
    mix = rms_norm_plain(streams.reshape(S, -1), rms_eps) @ fn.t()  # [S, (2+hc)*hc]
    pre = torch.sigmoid(mix[:, :hc] * scale[0] + base[:hc]) + hc_eps
    post = 2.0 * torch.sigmoid(mix[:, hc:2 * hc] * scale[1] + base[hc:2 * hc])
    comb_logits = (mix[:, 2 * hc:] * scale[2] + base[2 * hc:]).view(S, hc, hc)
    comb = sinkhorn(comb_logits, iters, hc_eps)
    return pre, post, comb


def q_head_norm(q: torch.Tensor, eps: float) -> torch.Tensor:
    """q_b_norm: weightless RMSNorm over head_dim, per head (release: q *= rsqrt(mean(q^2) + eps))."""
    return rms_norm_plain(q, eps)


indexer_act = torch.relu  # the indexer's per-head activation on q . k


def hc_collapse(streams: torch.Tensor, pre: torch.Tensor) -> torch.Tensor:
    return (pre[..., None] * streams).sum(dim=1)


def hc_expand(y: torch.Tensor, streams: torch.Tensor, post: torch.Tensor, comb: torch.Tensor) -> torch.Tensor:
    """stream'_k = post_k * y + sum_j comb[j, k] * stream_j   (transformers: comb^T @ streams)."""
    c = comb if COMB_TRANSPOSED else comb.transpose(-1, -2)
    return post[..., None] * y[:, None, :] + torch.einsum("sjk,sjd->skd", c, streams)


def compress_pool(kv: torch.Tensor, gate: torch.Tensor, ape: torch.Tensor, ratio: int, overlap: bool, D: int):
    """Gated pooling of closed windows (transformers DeepseekV4HCACompressor / DeepseekV4CSACompressor
    without a cache; release Compressor.forward at start_pos 0). kv, gate [S, c*D] (c = 2 if overlap);
    ape [ratio, c*D]. Returns pooled [S // ratio, D] (before the norm and RoPE).
    No overlap: entry w = sum_{i<ratio} softmax_i(gate[w*r+i] + ape[i]) * kv[w*r+i]   (per channel).
    Overlap: entry w pools 2*ratio slots: the ratio tokens of window w-1 through channels [:D] and the
    ratio tokens of window w through channels [D:] (window 0: the first half is empty, softmax weight 0)."""
    S = kv.shape[0]
    n = S // ratio
    if n == 0:
        return kv.new_zeros((0, D))
    kv = kv[: n * ratio].view(n, ratio, -1)
    gate = gate[: n * ratio].view(n, ratio, -1) + ape
    if overlap:
        prev, cur = (slice(0, D), slice(D, 2 * D)) if CSA_PREV_HALF_FIRST else (slice(D, 2 * D), slice(0, D))
        V = kv.new_zeros((n, 2 * ratio, D))
        G = gate.new_full((n, 2 * ratio, D), float("-inf"))
        V[:, ratio:] = kv[..., cur]
        G[:, ratio:] = gate[..., cur]
        V[1:, :ratio] = kv[:-1, :, prev]
        G[1:, :ratio] = gate[:-1, :, prev]
        kv, gate = V, G
    return (kv * torch.softmax(gate, dim=1)).sum(dim=1)


def compressed_entries(x, wkv, wgate, ape, norm_w, ratio, overlap, D, inv_freq, eps):
    """Compressor output: RMSNorm(pooled; norm_w) with RoPE at position w*ratio (the window's first token)."""
    pooled = compress_pool(x @ wkv.t(), x @ wgate.t(), ape, ratio, overlap, D)
    comp = M.rms_norm(pooled, norm_w, eps)
    return rope_tail(comp, compressed_pos(comp.shape[0], ratio), inv_freq)


def visible_compressed(S: int, T: int, ratio: int) -> torch.Tensor:
    """[S, T] bool: query t sees compressed entry w iff its window is closed, (w+1)*ratio <= t+1."""
    return torch.arange(T)[None, :] < ((torch.arange(S) + 1) // ratio)[:, None]


def indexer_select(scores: torch.Tensor, causal: torch.Tensor, top_k: int):
    """Lightning indexer selection: scores [S, T]; causal [S, T]. Per query, the top-k (k = min(top_k, T))
    of the causally visible entries (all of them when fewer are visible). Returns (selected [S, T] bool,
    margin [S]: k-th minus (k+1)-th visible score where more than k are visible, else inf)."""
    S, T = scores.shape
    sel = torch.zeros(S, T, dtype=torch.bool)
    margin = torch.full((S,), float("inf"))
    if T == 0:
        return sel, margin
    k = min(top_k, T)
    masked = scores.masked_fill(~causal, float("-inf"))
    idx = masked.topk(k, dim=-1).indices
    sel.scatter_(1, idx, True)
    sel &= causal
    n_vis = causal.sum(-1)
    srt = masked.sort(dim=-1, descending=True).values
    for t in range(S):
        if int(n_vis[t]) > k:
            margin[t] = float(srt[t, k - 1] - srt[t, k])
    return sel, margin


def sink_attention_kv(q, keys, allowed, sinks, scale):
    """q [S, H, D], keys [N, D] (K = V, one head), allowed [S, N] bool, sinks [H].
    softmax over the allowed keys plus one sink logit per head; the sink has no value."""
    scores = torch.einsum("shd,nd->hsn", q, keys) * scale
    scores = scores.masked_fill(~allowed[None], float("-inf"))
    H, S, _ = scores.shape
    logits = torch.cat((scores, sinks.view(H, 1, 1).expand(H, S, 1)), dim=-1)
    p = torch.softmax(logits, dim=-1)[..., :-1]
    return torch.einsum("hsn,nd->shd", p, keys), p


def grouped_out(o: torch.Tensor, wo_a: torch.Tensor, wo_b: torch.Tensor, G: int) -> torch.Tensor:
    """o [S, H, D] -> o.view(S, G, H*D/G) (heads h*G/H .. consecutive per group); group g uses the rows
    [g*R, (g+1)*R) of wo_a [G*R, H*D/G]; the G outputs are concatenated (g-major) and mixed by wo_b."""
    S = o.shape[0]
    og = o.reshape(S, G, -1)
    w = wo_a.view(G, -1, og.shape[-1])  # [G, R, H*D/G]
    low = torch.einsum("sgi,gri->sgr", og, w).reshape(S, -1)
    return low @ wo_b.t()


def score_fn(logits: torch.Tensor, kind: str) -> torch.Tensor:
    if kind == "sqrtsoftplus":
        return torch.nn.functional.softplus(logits).sqrt()
    if kind == "sigmoid":
        return torch.sigmoid(logits)
    if kind == "softmax":
        return torch.softmax(logits, dim=-1)
    raise NotImplementedError(kind)


def route(logits, bias, tid2eid, tokens, top_k, scoring, scaling):
    """DeepseekV4TopKRouter / DeepseekV4HashRouter. s = score(logits) (sqrt(softplus));
    hash layer: idx = tid2eid[token] (no bias); else idx = top-k of (s + bias).
    w = s[idx] / (sum + 1e-20) * routed_scaling_factor (the un-biased scores)."""
    s = score_fn(logits.float(), scoring)
    T, E = s.shape
    if tid2eid is not None:
        idx = tid2eid[tokens].long()
        crit = s
        margin = torch.full((T,), float("inf"))
    else:
        crit = s + bias[None, :].float()
        idx = torch.topk(crit, top_k, dim=-1).indices
        srt = torch.sort(crit, dim=-1, descending=True).values
        margin = srt[:, top_k - 1] - srt[:, top_k] if top_k < E else torch.full((T,), float("inf"))
    w = s.gather(1, idx)
    w = w / (w.sum(dim=-1, keepdim=True) + 1e-20) * scaling
    info = {"criterion": crit, "margin": margin, "group_margin": torch.full((T,), float("inf")),
            "zero_fill_agrees": torch.ones(T, dtype=torch.bool), "logit_margin": None}
    return idx, w, info


def clamped_swiglu(x, w1, w3, w2, limit, stats=None):
    """down(silu(min(gate, limit)) * clamp(up, -limit, limit)); gate = x w1^T, up = x w3^T."""
    g, u = x @ w1.t(), x @ w3.t()
    if stats is not None:
        stats.append({"gate_hi": int((g > limit).sum()), "up_out": int((u.abs() > limit).sum()),
                      "rows_hit": int(((g > limit) | (u.abs() > limit)).any(-1).sum()),
                      "rows": g.shape[0], "entries": g.numel()})
    g = g.clamp(max=limit)
    u = u.clamp(min=-limit, max=limit)
    return (torch.nn.functional.silu(g) * u) @ w2.t()


# ---------------------------------------------------------------------------
# Quantisation-aware-training round trips of the release (QAT_*; not part of the transformers spec)
# ---------------------------------------------------------------------------


def _round_to_grid(v: torch.Tensor, grid: np.ndarray) -> torch.Tensor:
    """Nearest value of a sorted non-negative grid (ties to the even index), sign kept."""
    g = torch.from_numpy(grid.astype(np.float32))
    a = v.abs()
    d = (a[..., None] - g).abs()
    best = d.min(dim=-1, keepdim=True).values
    cand = d == best
    even = cand & (torch.arange(len(grid)) % 2 == 0)
    pick = torch.where(even.any(-1), even.float().argmax(-1), cand.float().argmax(-1))
    return torch.sign(v) * g[pick]


_E4M3_POS = np.unique(M.e4m3_table()[:0x7F].astype(np.float64))
_E2M1_POS = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def fp8_sim_nope(x: torch.Tensor, rd: int, block: int = 64) -> torch.Tensor:
    """inference/model.py act_quant(kv[..., :-rd], 64, ue8m0): per block of 64 non-RoPE dims,
    scale = 2^ceil(log2(amax / 448)), E4M3 round trip (ds4 dsv4_fp8_kv_quantize_row_inplace_cpu)."""
    nope = x[..., :-rd]
    n = nope.shape[-1]
    outs = []
    for off in range(0, n, block):
        b = nope[..., off:off + block]
        amax = b.abs().amax(-1, keepdim=True).clamp(min=1e-4)
        sc = torch.exp2(torch.ceil(torch.log2(amax / 448.0)))
        outs.append(_round_to_grid((b / sc).clamp(-448, 448), _E4M3_POS) * sc)
    return torch.cat(outs + [x[..., -rd:]], dim=-1)


def hadamard(x: torch.Tensor) -> torch.Tensor:
    """Orthonormal Walsh-Hadamard transform of the last axis (power of 2), scale n^-0.5."""
    n = x.shape[-1]
    assert n & (n - 1) == 0
    y = x.clone()
    h = 1
    while h < n:
        y = y.view(*x.shape[:-1], n // (2 * h), 2, h)
        a, b = y[..., 0, :], y[..., 1, :]
        y = torch.stack((a + b, a - b), dim=-2).reshape(x.shape)
        h *= 2
    return y * n ** -0.5


def fp4_sim(x: torch.Tensor, block: int = 32) -> torch.Tensor:
    """fp4_act_quant round trip: per block of 32, scale = 2^ceil(log2(amax / 6)), E2M1 (ties to even)."""
    shp = x.shape
    b = x.reshape(*shp[:-1], shp[-1] // block, block)
    amax = b.abs().amax(-1, keepdim=True).clamp(min=7.052966104933725e-38)
    sc = torch.exp2(torch.ceil(torch.log2(amax / 6.0)))
    return (_round_to_grid((b / sc).clamp(-6, 6), _E2M1_POS) * sc).reshape(shp)


# ---------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------


class Model:
    """DeepSeek-V4 causal LM over release-named float32 weights. ``forward(tokens)`` -> logits [S, vocab]."""

    def __init__(self, config: dict, weights: Dict[str, torch.Tensor]):
        assert config["model_type"] == MODEL_TYPE
        self.c = c = config
        self.w = {k: (v if v.dtype == torch.int64 else v.float()) for k, v in weights.items()}
        self.mt = MODEL_TYPE
        self.ratios = layer_ratios(c)
        self.kinds = [layer_kind(r) for r in self.ratios]
        assert c.get("num_key_value_heads", 1) == 1
        self.inv_main = rope_inv_freq(c, False)
        self.inv_comp = rope_inv_freq(c, True)
        self.trace: List[dict] = []
        self.clamp_stats: List[dict] = []
        self.v4_trace: List[dict] = []

    def W(self, name):
        return self.w[name]

    def is_hash(self, i: int) -> bool:
        return i < int(self.c.get("num_hash_layers", 0))

    # -- attention ----------------------------------------------------------
    def attention(self, i: int, x: torch.Tensor) -> torch.Tensor:
        c, p = self.c, f"layers.{i}.attn."
        S = x.shape[0]
        H, D, rd, eps = c["num_attention_heads"], c["head_dim"], rope_dim(c), c["rms_norm_eps"]
        ratio, kind = self.ratios[i], self.kinds[i]
        inv = self.inv_main if kind == "sliding" else self.inv_comp
        pos = torch.arange(S)
        qr = M.rms_norm(x @ self.W(p + "wq_a.weight").t(), self.W(p + "q_norm.weight"), eps)  # [S, q_lora]
        q = q_head_norm((qr @ self.W(p + "wq_b.weight").t()).view(S, H, D), eps)  # per-head, weightless
        q = rope_tail(q, pos, inv)
        kv = rope_tail(M.rms_norm(x @ self.W(p + "wkv.weight").t(), self.W(p + "kv_norm.weight"), eps), pos, inv)
        if QAT_FP8_KV:
            kv = fp8_sim_nope(kv, rd)
        t, s = pos[:, None], pos[None, :]
        allowed = (s <= t) & ((t - s) < c["sliding_window"])  # self + window-1 previous raw entries
        keys = kv
        info = {"layer": i, "kind": kind}
        if kind != "sliding":
            cp = p + "compressor."
            comp = compressed_entries(x, self.W(cp + "wkv.weight"), self.W(cp + "wgate.weight"), self.W(cp + "ape"),
                                      self.W(cp + "norm.weight"), ratio, kind == "csa", D, inv, eps)
            if QAT_FP8_KV:
                comp = fp8_sim_nope(comp, rd)
            T = comp.shape[0]
            vis = visible_compressed(S, T, ratio)
            info["compressed_causal"] = vis.sum(-1)
            if kind == "csa":
                sel, margin = self.indexer(i, x, qr, vis)
                info["indexer_margin"] = margin
                info["indexer_selected"] = sel.sum(-1)
                vis = sel
            info["compressed_attended"] = vis.sum(-1)
            keys = torch.cat((kv, comp), dim=0)
            allowed = torch.cat((allowed, vis), dim=1)
        o, probs = sink_attention_kv(q, keys, allowed, self.W(p + "attn_sink"), D ** -0.5)
        info["sink_mass"] = 1.0 - probs.sum(-1)  # [H, S]
        if DEROTATE_OUTPUT:
            o = rope_tail(o, pos, inv, inverse=True)
        self.v4_trace.append(info)
        return grouped_out(o, self.W(p + "wo_a.weight"), self.W(p + "wo_b.weight"), c["o_groups"])

    def indexer(self, i: int, x: torch.Tensor, qr: torch.Tensor, causal: torch.Tensor):
        """Lightning indexer (CSA layers): its own overlapping ratio-4 compressor at index_head_dim, queries
        from the q-LoRA latent, score[t, s] = sum_h w[t,h] relu(q[t,h] . k[s]) with
        w = weights_proj(x) * index_head_dim^-0.5 * index_n_heads^-0.5; top index_topk visible entries."""
        c, p = self.c, f"layers.{i}.attn.indexer."
        S = x.shape[0]
        Hi, Di, eps = c["index_n_heads"], c["index_head_dim"], c["rms_norm_eps"]
        kp = p + "compressor."
        k = compressed_entries(x, self.W(kp + "wkv.weight"), self.W(kp + "wgate.weight"), self.W(kp + "ape"),
                               self.W(kp + "norm.weight"), self.ratios[i], True, Di, self.inv_comp, eps)
        q = rope_tail((qr @ self.W(p + "wq_b.weight").t()).view(S, Hi, Di), torch.arange(S), self.inv_comp)
        if QAT_FP4_INDEXER:
            k, q = fp4_sim(hadamard(k)), fp4_sim(hadamard(q))
        wts = (x @ self.W(p + "weights_proj.weight").t()) * (Di ** -0.5 * Hi ** -0.5)  # [S, Hi]
        scores = (indexer_act(torch.einsum("shd,td->sht", q, k)) * wts[..., None]).sum(1)  # [S, T]
        assert k.shape[0] == causal.shape[1]
        return indexer_select(scores, causal, c["index_topk"])

    # -- MoE ------------------------------------------------------------------
    def moe(self, i: int, x: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        c, p = self.c, f"layers.{i}.ffn."
        limit = float(c["swiglu_limit"])
        logits = x @ self.W(p + "gate.weight").t()
        hashed = self.is_hash(i)
        idx, w, info = route(logits, None if hashed else self.W(p + "gate.bias"),
                             self.W(p + "gate.tid2eid") if hashed else None, tokens,
                             c["num_experts_per_tok"], c["scoring_func"], c["routed_scaling_factor"])
        ep = p + "experts."
        fn = lambda e, xx: clamped_swiglu(xx, self.W(f"{ep}{e}.w1.weight"), self.W(f"{ep}{e}.w3.weight"),
                                          self.W(f"{ep}{e}.w2.weight"), limit, self.clamp_stats)
        out = M.moe_combine(x, idx, w, fn)
        if c.get("n_shared_experts", 1):
            sp = p + "shared_experts."
            out = out + clamped_swiglu(x, self.W(sp + "w1.weight"), self.W(sp + "w3.weight"), self.W(sp + "w2.weight"),
                                       limit, self.clamp_stats)
        self.trace.append({"layer": i, "idx": idx, "weights": w, "hash": hashed, **info})
        return out

    # -- full model -------------------------------------------------------------
    def site(self, streams, i, which):
        c = self.c
        return hc_weights(streams, self.W(f"layers.{i}.hc_{which}_fn"), self.W(f"layers.{i}.hc_{which}_scale"),
                          self.W(f"layers.{i}.hc_{which}_base"), c["hc_mult"], c["hc_sinkhorn_iters"],
                          c["hc_eps"], c["rms_norm_eps"])

    @torch.no_grad()
    def forward(self, tokens: List[int]) -> torch.Tensor:
        self.trace, self.clamp_stats, self.v4_trace = [], [], []
        c = self.c
        eps, hc = c["rms_norm_eps"], c["hc_mult"]
        ids = torch.tensor(tokens, dtype=torch.long)
        h = self.W("embed.weight")[ids]
        streams = h[:, None, :].expand(-1, hc, -1).contiguous()  # every stream starts as the embedding
        self.comb_trace = []
        for i in range(c["num_hidden_layers"]):
            pre, post, comb = self.site(streams, i, "attn")
            self.comb_trace.append(comb)
            a = self.attention(i, M.rms_norm(hc_collapse(streams, pre), self.W(f"layers.{i}.attn_norm.weight"), eps))
            streams = hc_expand(a, streams, post, comb)
            pre, post, comb = self.site(streams, i, "ffn")
            self.comb_trace.append(comb)
            m = self.moe(i, M.rms_norm(hc_collapse(streams, pre), self.W(f"layers.{i}.ffn_norm.weight"), eps), ids)
            streams = hc_expand(m, streams, post, comb)
        S = streams.shape[0]
        mix = rms_norm_plain(streams.reshape(S, -1), eps) @ self.W("hc_head_fn").t()
        pre = torch.sigmoid(mix * self.W("hc_head_scale") + self.W("hc_head_base")) + c["hc_eps"]
        out = M.rms_norm(hc_collapse(streams, pre), self.W("norm.weight"), eps)
        return out @ self.W("head.weight").t()

    def greedy(self, tokens: List[int], n: int) -> List[int]:
        seq, out = list(tokens), []
        for _ in range(n):
            nxt = int(torch.argmax(self.forward(seq)[-1]).item())
            out.append(nxt)
            seq.append(nxt)
        return out


# ---------------------------------------------------------------------------
# Fixture generation (used by make_fixtures.py)
# ---------------------------------------------------------------------------

N_PROMPT = 64  # every compressed mechanism fires within the prompt (see README)

# the release config.json key set (DeepSeek-V4-Flash), shrunk; compress_ratios has num_hidden_layers + 1
# entries as in the release (the last one is the MTP layer's, unused here)
BASE_CONFIG = {
    "architectures": ["DeepseekV4ForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 0,
    "compress_ratios": [0, 4, 16, 4, 0],
    "compress_rope_theta": 160000,
    "eos_token_id": 1,
    "hc_eps": 1e-06,
    "hc_mult": 4,
    "hc_sinkhorn_iters": 20,
    "head_dim": 64,
    "hidden_act": "silu",
    "hidden_size": 64,
    "index_head_dim": 32,
    "index_n_heads": 8,
    "index_topk": 4,
    "initializer_range": 0.02,
    "max_position_embeddings": 512,
    "model_type": "deepseek_v4",
    "moe_intermediate_size": 32,
    "n_routed_experts": 8,
    "n_shared_experts": 1,
    "norm_topk_prob": True,
    "num_attention_heads": 4,
    "num_experts_per_tok": 2,
    "num_hash_layers": 2,
    "num_hidden_layers": 4,
    "num_key_value_heads": 1,
    "num_nextn_predict_layers": 1,
    "o_groups": 2,
    "o_lora_rank": 32,
    "q_lora_rank": 32,
    "qk_rope_head_dim": 16,
    "rms_norm_eps": 1e-06,
    "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 16,
                     "original_max_position_embeddings": 32, "type": "yarn"},
    "rope_theta": 10000,
    "routed_scaling_factor": 1.5,
    "scoring_func": "sqrtsoftplus",
    "sliding_window": 8,
    "swiglu_limit": 10.0,
    "tie_word_embeddings": False,
    "topk_method": "noaux_tc",
    "torch_dtype": "bfloat16",
    "use_cache": True,
    "vocab_size": 256,
}
# quantization_config of the release config.json (FP8 with UE8M0 block scales) and its top-level expert_dtype
QUANT_CONFIG = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "scale_fmt": "ue8m0",
                "weight_block_size": [128, 128]}


def variant_config(storage: str) -> dict:
    cfg = {k: (dict(v) if isinstance(v, dict) else (list(v) if isinstance(v, list) else v))
           for k, v in BASE_CONFIG.items()}
    if storage == "native":
        cfg["expert_dtype"] = "fp4"
        cfg["quantization_config"] = dict(QUANT_CONFIG)
    return dict(sorted(cfg.items()))


# weight scales: expert / shared gate-up pre-activations with std ~EXPERT_STD so swiglu_limit 10 clamps
EXPERT_STD = 5.0
EXPERT_DOWN_SCALE = 0.15


def gen_weights(cfg: dict, g: torch.Generator) -> Dict[str, torch.Tensor]:
    """Release names and shapes, float32 master copy, in checkpoint order (plus a few mtp.0.* tensors)."""
    Hd, V, H, D = cfg["hidden_size"], cfg["vocab_size"], cfg["num_attention_heads"], cfg["head_dim"]
    hc, qr, G, R = cfg["hc_mult"], cfg["q_lora_rank"], cfg["o_groups"], cfg["o_lora_rank"]
    Hi, Di = cfg["index_n_heads"], cfg["index_head_dim"]
    E, I, k = cfg["n_routed_experts"], cfg["moe_intermediate_size"], cfg["num_experts_per_tok"]
    mix = (2 + hc) * hc
    w: Dict[str, torch.Tensor] = {}

    def lin(name, out_f, in_f, scale=1.0):
        w[name] = torch.randn(out_f, in_f, generator=g) * (scale / math.sqrt(in_f))

    def norm(name, n):
        w[name] = 0.9 + 0.2 * torch.rand(n, generator=g)

    def hc_site(prefix):
        w[prefix + "_fn"] = torch.randn(mix, hc * Hd, generator=g) * (1.0 / math.sqrt(hc * Hd))
        w[prefix + "_base"] = torch.randn(mix, generator=g) * 0.5
        w[prefix + "_scale"] = 0.5 + torch.rand(3, generator=g)

    def swiglu3(prefix, inter):
        lin(prefix + ".w1.weight", inter, Hd, EXPERT_STD)
        lin(prefix + ".w2.weight", Hd, inter, EXPERT_DOWN_SCALE)
        lin(prefix + ".w3.weight", inter, Hd, EXPERT_STD)

    def compressor(prefix, dim, ratio, overlap):
        cw = (2 if overlap else 1) * dim
        lin(prefix + "wkv.weight", cw, Hd)
        lin(prefix + "wgate.weight", cw, Hd, 1.5)
        w[prefix + "ape"] = torch.randn(ratio, cw, generator=g) * 0.5
        norm(prefix + "norm.weight", dim)

    w["embed.weight"] = torch.randn(V, Hd, generator=g)
    ratios = layer_ratios(cfg)
    for i in range(cfg["num_hidden_layers"]):
        p = f"layers.{i}."
        hc_site(p + "hc_attn")
        norm(p + "attn_norm.weight", Hd)
        a = p + "attn."
        lin(a + "wq_a.weight", qr, Hd)
        norm(a + "q_norm.weight", qr)
        lin(a + "wq_b.weight", H * D, qr)
        lin(a + "wkv.weight", D, Hd)
        norm(a + "kv_norm.weight", D)
        lin(a + "wo_a.weight", G * R, H * D // G)
        lin(a + "wo_b.weight", Hd, G * R)
        w[a + "attn_sink"] = 0.5 + torch.randn(H, generator=g)
        kind = layer_kind(ratios[i])
        if kind != "sliding":
            compressor(a + "compressor.", D, ratios[i], kind == "csa")
        if kind == "csa":
            lin(a + "indexer.wq_b.weight", Hi * Di, qr)
            lin(a + "indexer.weights_proj.weight", Hi, Hd, 2.0)
            compressor(a + "indexer.compressor.", Di, ratios[i], True)
        hc_site(p + "hc_ffn")
        norm(p + "ffn_norm.weight", Hd)
        f = p + "ffn."
        lin(f + "gate.weight", E, Hd, 2.0)
        if i < cfg["num_hash_layers"]:
            # every token id -> k distinct experts (a random permutation's first k)
            w[f + "gate.tid2eid"] = torch.stack([torch.randperm(E, generator=g)[:k] for _ in range(V)]).long()
        else:
            w[f + "gate.bias"] = torch.randn(E, generator=g) * 0.05
        for e in range(E):
            swiglu3(f"{f}experts.{e}", I)
        swiglu3(f + "shared_experts", I * cfg["n_shared_experts"])
    w["hc_head_fn"] = torch.randn(hc, hc * Hd, generator=g) * (1.0 / math.sqrt(hc * Hd))
    w["hc_head_base"] = torch.randn(hc, generator=g) * 0.5
    w["hc_head_scale"] = 0.5 + torch.rand(1, generator=g)
    norm("norm.weight", Hd)
    lin("head.weight", V, Hd, 2.0)
    # a few tensors of the MTP layer (mtp.0.*, release names): the reference and transformers skip them
    lin("mtp.0.e_proj.weight", Hd, Hd)
    lin("mtp.0.h_proj.weight", Hd, Hd)
    norm("mtp.0.enorm.weight", Hd)
    norm("mtp.0.hnorm.weight", Hd)
    norm("mtp.0.norm.weight", Hd)
    lin("mtp.0.attn.wq_a.weight", qr, Hd)
    lin("mtp.0.ffn.experts.0.w1.weight", I, Hd)
    return w


F32_SUFFIXES = ("hc_attn_fn", "hc_attn_base", "hc_attn_scale", "hc_ffn_fn", "hc_ffn_base", "hc_ffn_scale",
                "hc_head_fn", "hc_head_base", "hc_head_scale", ".attn_sink", ".ape", ".gate.bias")
FP8_SUFFIXES = (".attn.wq_a.weight", ".attn.wq_b.weight", ".attn.wkv.weight", ".attn.wo_a.weight",
                ".attn.wo_b.weight", ".attn.indexer.wq_b.weight", ".shared_experts.w1.weight",
                ".shared_experts.w2.weight", ".shared_experts.w3.weight", "mtp.0.e_proj.weight", "mtp.0.h_proj.weight")


def storage_kind(name: str, storage: str) -> str:
    """The release's dtype of each tensor: F32 (mHC, sinks, ape, router bias), I64 (tid2eid), FP8 block
    (attention projections, indexer wq_b, shared experts, MTP e/h_proj), FP4 (routed experts), else BF16
    (embed, head, norms, compressor / indexer-compressor wkv / wgate, indexer weights_proj, router weight).
    The bf16 variant keeps F32 and I64 and stores every FP8 / FP4 tensor as BF16."""
    if name.endswith(".tid2eid"):
        return "I64"
    if name.endswith(F32_SUFFIXES) or name in ("hc_head_fn", "hc_head_base", "hc_head_scale"):
        return "F32"
    if storage == "native":
        if ".experts." in name and ".shared_experts." not in name:
            return "FP4"
        if name.endswith(FP8_SUFFIXES):
            return "FP8"
    return "BF16"


def quant_fp8_e8m0(a: np.ndarray, block=(128, 128)):
    """Block FP8 with power-of-two (UE8M0) scales: s = 2^ceil(log2(blockmax / 448)), codes = RNE(w / s)."""
    rows, cols = a.shape
    nr, nc = -(-rows // block[0]), -(-cols // block[1])
    scale = np.zeros((nr, nc), dtype=np.uint8)
    codes = np.zeros((rows, cols), dtype=np.uint8)
    for bi in range(nr):
        for bj in range(nc):
            sl = (slice(bi * block[0], (bi + 1) * block[0]), slice(bj * block[1], (bj + 1) * block[1]))
            amax = float(np.abs(a[sl]).max())
            b = f32_to_e8m0_ceil(max(amax, 1e-30) / 448.0)
            scale[bi, bj] = b
            codes[sl] = M.f32_to_e4m3(a[sl] / e8m0_to_f32(b))
    return codes, scale


def quant_fp4_e8m0(a: np.ndarray, mxfp4_encode):
    """Per 32 along the input dim: E8M0 e = ceil(log2(blockmax / 6)), E2M1 RNE codes, packed two per byte
    (column 2j low nibble) -> (I8 [out, in/2] as int8, E8M0 [out, in/32]). ``mxfp4_encode`` is
    make_fixtures.f32_to_mxfp4 (the gpt-oss / Kimi-K3 encoder; the same byte layout)."""
    blocks, scales = mxfp4_encode(a)  # [out, in/32, 16], [out, in/32]
    rows, cols = a.shape
    return blocks.reshape(rows, cols // 2).view(np.int8), scales


def to_storage(weights: Dict[str, torch.Tensor], storage: str, mxfp4_encode=None):
    """-> (stored {name: (dtype, np array)}, dequantised {name: tensor} as the reference sees it)."""
    stored, deq = {}, {}
    for name, t in weights.items():
        kind = storage_kind(name, storage)
        if kind == "I64":
            a = t.numpy().astype(np.int64)
            stored[name] = ("I64", a)
            deq[name] = torch.from_numpy(a.copy())
            continue
        a = t.numpy().astype(np.float32)
        if kind == "F32":
            stored[name] = ("F32", a)
            deq[name] = torch.from_numpy(a.copy())
        elif kind == "BF16":
            bits = M.f32_to_bf16_bits(a)
            stored[name] = ("BF16", bits)
            deq[name] = torch.from_numpy(M.bf16_bits_to_f32(bits).copy())
        elif kind == "FP8":
            codes, sc = quant_fp8_e8m0(a)
            base = name[: -len(".weight")]
            stored[name] = ("F8_E4M3", codes)
            stored[base + ".scale"] = ("F8_E8M0", sc)
            deq[name] = torch.from_numpy(dequant_fp8_e8m0(codes, sc))
        else:  # FP4
            packed, sc = quant_fp4_e8m0(a, mxfp4_encode)
            base = name[: -len(".weight")]
            stored[name] = ("I8", packed)
            stored[base + ".scale"] = ("F8_E8M0", sc)
            deq[name] = torch.from_numpy(dequant_fp4_e8m0(packed, sc))
    deq = {k: v for k, v in deq.items() if not k.startswith("mtp.")}
    return stored, deq


INDEXER_MARGIN = 1e-3  # k-th vs (k+1)-th indexer score, like the routing margin


def analyse_extra(model: Model) -> dict:
    """Acceptance data of the last forward: indexer margins, clamp hits, compressed-entry use."""
    im = math.inf
    for tr in model.v4_trace:
        if "indexer_margin" in tr:
            im = min(im, float(tr["indexer_margin"].min()))
    cs = model.clamp_stats
    return {"indexer_margin": im,
            "gate_entries_above_limit": sum(x["gate_hi"] for x in cs),
            "up_entries_outside_limit": sum(x["up_out"] for x in cs)}


def accept(model: Model, extra: dict) -> bool:
    return (extra["indexer_margin"] > INDEXER_MARGIN and extra["gate_entries_above_limit"] > 0
            and extra["up_entries_outside_limit"] > 0)


def manifest_info(model: Model, tokens: List[int], stored: dict) -> dict:
    """Extra manifest entries, measured over ONE prefill of the prompt."""
    model.forward(tokens)
    S = len(tokens)
    info: Dict[str, object] = {"n_prompt": S, "layer_kinds": model.kinds, "compress_ratios": model.ratios,
                               "hash_layers": [i for i in range(len(model.kinds)) if model.is_hash(i)]}
    per_layer = {}
    for tr in model.v4_trace:
        d = {"kind": tr["kind"], "mean_sink_mass": round(float(tr["sink_mass"].mean()), 4)}
        if "compressed_causal" in tr:
            d["compressed_entries_closed_at_last_position"] = int(tr["compressed_causal"][-1])
            d["compressed_entries_attended_at_last_position"] = int(tr["compressed_attended"][-1])
            d["first_position_with_a_compressed_entry"] = int((tr["compressed_causal"] > 0).nonzero()[0])
        if "indexer_selected" in tr:
            n_vis = tr["compressed_causal"]
            d["positions_where_indexer_drops_entries"] = int((n_vis > tr["indexer_selected"]).sum())
            d["min_indexer_margin_prefill"] = float(tr["indexer_margin"].min())
        per_layer[str(tr["layer"])] = d
    info["attention"] = per_layer
    cs = model.clamp_stats
    info["clamp_over_prefill"] = {"gate_entries_above_limit": sum(x["gate_hi"] for x in cs),
                                  "up_entries_outside_limit": sum(x["up_out"] for x in cs),
                                  "entries_per_half": sum(x["entries"] for x in cs)}
    dev_r = max(float((cm.sum(-1) - 1).abs().max()) for cm in model.comb_trace)
    dev_c = max(float((cm.sum(-2) - 1).abs().max()) for cm in model.comb_trace)
    info["mhc_comb_max_abs_rowsum_minus_1"] = dev_r
    info["mhc_comb_max_abs_colsum_minus_1"] = dev_c
    info["rope_inv_freq_main"] = [float(x) for x in model.inv_main]
    info["rope_inv_freq_compress"] = [float(x) for x in model.inv_comp]
    if any(dt == "I8" for dt, _ in stored.values()):
        codes = np.concatenate([np.concatenate([(a.view(np.uint8) & 0xF).ravel(), (a.view(np.uint8) >> 4).ravel()])
                                for n, (dt, a) in stored.items() if dt == "I8"])
        info["fp4_code_histogram"] = np.bincount(codes, minlength=16).tolist()
        sc = np.concatenate([a.ravel() for n, (dt, a) in stored.items() if dt == "F8_E8M0"])
        info["e8m0_scale_byte_range"] = [int(sc.min()), int(sc.max())]
    return info
