"""Independent plain-PyTorch reference for GLM-5.3-Flash (``model_type: "glm5_next"``, text model
``glm5_next_text`` under ``text_config``).

Specification: huggingface/transformers ``models/glm5_next/modeling_glm5_next.py`` (the generated modeling
file of the version WITH the DSA indexer, ``Glm5NextTextIndexer``; older stored versions have plain causal
MLA and no indexer) and ``configuration_glm5_next.py``. Checkpoint names are the release's, i.e. what
``from_pretrained`` reads before ``conversion_mapping.py`` renames them (``self_attn.f_a_proj`` ->
``self_attn.forget_gate.f_a_proj``, ``hc_attn_fn`` -> ``attn_hc.fn``, per-expert ``mlp.experts.N.*_proj``
-> fused ``gate_up_proj`` / ``down_proj``, ``{q,k,v}_conv1d`` -> one ``conv1d``). Cross-checked against
llama.cpp ``src/models/glm5-next.cpp`` (tensor shapes) and JustVugg/colibri ``c/glm53.c`` (tensor names,
config nesting). README.md (section "GLM-5.3-Flash") has every formula and where the sources disagree.

Per decoder layer (float32, full causal recompute, no cache), with ``hc_mult`` mHC residual streams exactly
as DeepSeek-V4 (``deepseek_v4.hc_weights`` / ``hc_collapse`` / ``hc_expand``):

* attention site: KDA (``linear_attention``: Kimi delta attention with the lower-bound gate and a
  LOW-RANK output gate g_b(g_a(x))) or DSA (``deepseek_sparse_attention``: q-LoRA MLA without RoPE,
  scale qk_nope^-0.5, keys restricted to the token set chosen by the k-pool indexer);
* feed-forward site: clamped-SwiGLU dense MLP (``mlp_layer_types`` "dense") or a sigmoid noaux_tc MoE
  with one shared expert (clamped SwiGLU everywhere, ``swiglu_limit``);
* final head: the UNWEIGHTED MEAN of the streams (not V4's learned hc_head), RMSNorm, lm_head.

Only torch, numpy and the standard library (plus ``models`` and ``deepseek_v4`` of this directory).
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch

import deepseek_v4 as V4
import models as M

MODEL_TYPE = "glm5_next"
PREFIX = "model.language_model."  # the release root is the vision wrapper (Glm5NextForConditionalGeneration)
HEAD = "lm_head.weight"

# switches for selftest.py's mutation table (defaults = the spec)
TAIL_ALWAYS = True  # index_kpool_always_select_tail honoured (False: never append the incomplete pool)
POOL_SOFTMAX = True  # pooled indexer key = per-channel softmax(gate + ape) weighted sum (False: plain mean)
HEAD_MEAN = True  # final stream collapse = unweighted mean (False: stream 0 only)

# ---------------------------------------------------------------------------
# Checkpoint
# ---------------------------------------------------------------------------


def text_config(config: dict) -> dict:
    """The text model's keys: ``text_config`` when nested (the release), else the root (text-only export)."""
    return config.get("text_config") or config


def convert_checkpoint(config: dict, raw: Dict[str, Tuple[str, List[int], bytes]]) -> Dict[str, torch.Tensor]:
    """Release tensors -> float32, dropping the MTP layer (``layers.N.*`` with N >= num_hidden_layers; the
    release's is layer 45, transformers: ``_keys_to_ignore_on_load_unexpected = [r"layers\\.45\\.",
    r"layers\\.\\d+\\.shared_head\\."]``) and ``model.visual.*`` (not used by text prompts). BF16 / F32 only:
    the quantised release formats are not handled (README, open points)."""
    n = text_config(config)["num_hidden_layers"]
    out: Dict[str, torch.Tensor] = {}
    for name, (dtype, shape, data) in raw.items():
        if is_skipped(name, n):
            continue
        assert dtype in ("F32", "BF16", "F16"), f"{name}: dtype {dtype} not handled by the glm5_next reference"
        out[name] = torch.from_numpy(np.ascontiguousarray(M.decode_tensor(dtype, shape, data), dtype=np.float32))
    return out


def is_skipped(name: str, n_layers: int) -> bool:
    if name.startswith("model.visual."):
        return True
    if name.startswith(PREFIX + "layers."):
        return int(name[len(PREFIX + "layers."):].split(".")[0]) >= n_layers
    return False


# ---------------------------------------------------------------------------
# Config helpers (Glm5NextTextConfig.__post_init__)
# ---------------------------------------------------------------------------


def layer_types(tc: dict) -> List[str]:
    """Explicit ``layer_types`` (0-based), else KDA for i % 4 != 3; "full_attention" means DSA."""
    n = tc["num_hidden_layers"]
    lt = tc.get("layer_types")
    if lt is None:
        lt = ["linear_attention" if i % 4 != 3 else "deepseek_sparse_attention" for i in range(n)]
    lt = ["deepseek_sparse_attention" if t == "full_attention" else t for t in lt]
    assert len(lt) == n and set(lt) <= {"linear_attention", "deepseek_sparse_attention"}, lt
    return lt


def mlp_layer_types(tc: dict) -> List[str]:
    """Explicit ``mlp_layer_types``, else the first min(3, n) layers dense. transformers does NOT read
    ``first_k_dense_replace``; when both are given they must agree."""
    n = tc["num_hidden_layers"]
    mt = tc.get("mlp_layer_types")
    if mt is None:
        mt = ["dense"] * min(3, n) + ["sparse"] * (n - 3)
    assert len(mt) == n and set(mt) <= {"dense", "sparse"}, mt
    if tc.get("first_k_dense_replace") is not None:
        k = tc["first_k_dense_replace"]
        assert mt == ["dense"] * k + ["sparse"] * (n - k), ("first_k_dense_replace disagrees", k, mt)
    return mt


def indexer_types(tc: dict) -> List[str]:
    """Explicit ``indexer_types``; else ``index_topk_pattern`` ("F"/"S"); else full iff
    max(i - offset + 1, 0) % freq == 0 with ``index_topk_freq`` (1) and ``index_skip_topk_offset`` (2)."""
    n = tc["num_hidden_layers"]
    it = tc.get("indexer_types")
    if it is None:
        pat = tc.get("index_topk_pattern")
        if pat is not None:
            it = [{"F": "full", "S": "shared"}[ch] for ch in pat] if isinstance(pat, str) else list(pat)
        else:
            freq = max(tc.get("index_topk_freq", 1), 1)
            off = tc.get("index_skip_topk_offset", 2)
            it = ["full" if max(i - off + 1, 0) % freq == 0 else "shared" for i in range(n)]
    assert len(it) == n, it
    return list(it)


def kda_params(tc: dict) -> dict:
    """``linear_attn_config`` {head_dim, num_heads, short_conv_kernel_size, gate_lower_bound, safe_gate} if
    present (overrides), else the flat ``linear_*`` keys; defaults 128, 64, 4, -5.0."""
    d = {"head_dim": tc.get("linear_head_dim", 128), "num_heads": tc.get("linear_num_heads", 64),
         "conv": tc.get("linear_conv_kernel_dim", 4), "lower_bound": tc.get("linear_lower_bound", -5.0)}
    lac = tc.get("linear_attn_config")
    if lac is not None:
        d["head_dim"] = lac.get("head_dim", d["head_dim"])
        d["num_heads"] = lac.get("num_heads", d["num_heads"])
        d["conv"] = lac.get("short_conv_kernel_size", d["conv"])
        d["lower_bound"] = lac.get("gate_lower_bound", d["lower_bound"])
        if lac.get("safe_gate", True) and d["lower_bound"] is None:
            d["lower_bound"] = -5.0
    return d


# ---------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------


def layer_norm(x, w, b, eps):
    """nn.LayerNorm: (x - mean) / sqrt(var_biased + eps) * w + b."""
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * w + b


def pool_keys(k: torch.Tensor, gate: torch.Tensor, ape: torch.Tensor, kpool: int) -> torch.Tensor:
    """Glm5NextTextIndexer.get_pooled_states without padding: the complete pools p = 0 .. S//kpool - 1 of
    tokens [p*kpool, (p+1)*kpool); per channel c, pooled[p, c] = sum_j softmax_j(gate[t_j, c] + ape[j, c]) *
    k[t_j, c]. k, gate [S, Di]; ape [kpool, Di] -> [P, Di]."""
    S, Di = k.shape
    P = S // kpool
    kk = k[:P * kpool].view(P, kpool, Di)
    if not POOL_SOFTMAX:
        return kk.mean(1)
    lg = gate[:P * kpool].view(P, kpool, Di) + ape[None]
    return (torch.softmax(lg, dim=1) * kk).sum(1)


def kpool_select(scores: torch.Tensor, S: int, kpool: int, index_topk: int, tail: bool):
    """Token set per query from pool scores [S, P] (P = S // kpool complete pools).

    Pool p is visible to query t iff its LAST token p*kpool + kpool - 1 <= t. Take the top
    min(index_topk // kpool, P) pools by score, visible ones only (invisible ones carry finfo.min and, if
    picked, are dropped), expand to their tokens, and (tail) append the incomplete pool of query t: tokens
    (t+1) - (t+1) % kpool .. t. Returns allowed [S, S] bool, margin [S] (k-th vs (k+1)-th visible score where
    the selection drops a visible pool, else inf), n_visible_pools [S], n_selected_pools [S]."""
    P = scores.shape[1]
    t = torch.arange(S)
    ends = torch.arange(P) * kpool + kpool - 1
    vis = ends[None, :] <= t[:, None]  # [S, P]
    k_sel = min(index_topk // kpool, P)
    allowed = torch.zeros(S, S, dtype=torch.bool)
    margin = torch.full((S,), math.inf)
    n_vis = vis.sum(-1)
    n_sel = torch.zeros(S, dtype=torch.long)
    for q in range(S):
        vp = vis[q].nonzero().flatten()
        if len(vp) > k_sel:
            sc = scores[q, vp]
            srt = torch.sort(sc, descending=True)
            chosen = vp[srt.indices[:k_sel]]
            margin[q] = float(srt.values[k_sel - 1] - srt.values[k_sel])
        else:
            chosen = vp
        n_sel[q] = len(chosen)
        for p in chosen.tolist():
            allowed[q, p * kpool:(p + 1) * kpool] = True
        if tail:
            tc = (q + 1) % kpool
            allowed[q, q + 1 - tc:q + 1] = True
    assert not (allowed & (t[None, :] > t[:, None])).any(), "non-causal selection"
    return allowed, margin, n_vis, n_sel


def masked_attention(q, k, v, allowed, scale):
    """q, k [H, S, dq], v [H, S, dv], allowed [S, S] -> [H, S, dv]; softmax over the allowed keys only."""
    sc = (q @ k.transpose(-1, -2)) * scale
    sc = sc.masked_fill(~allowed[None], float("-inf"))
    return torch.softmax(sc, dim=-1) @ v


# ---------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------


class Model:
    """GLM-5.3-Flash causal LM over release-named float32 weights. ``forward(tokens)`` -> logits [S, vocab]."""

    def __init__(self, config: dict, weights: Dict[str, torch.Tensor]):
        assert config["model_type"] == MODEL_TYPE
        self.config = config
        self.c = c = text_config(config)
        self.w = {k: v.float() for k, v in weights.items()}
        self.mt = MODEL_TYPE
        self.kinds = layer_types(c)
        self.mlp_kinds = mlp_layer_types(c)
        self.index_kinds = indexer_types(c)
        self.kda = kda_params(c)
        assert c.get("qk_rope_head_dim", 0) == 0, "GLM-5.3 DSA layers are NoPE (qk_rope_head_dim 0)"
        assert c["num_key_value_heads"] == c["num_attention_heads"]
        assert c["index_topk"] % c["index_kpool"] == 0
        self.trace: List[dict] = []
        self.clamp_stats: List[dict] = []
        self.dsa_trace: List[dict] = []
        self.kda_decay_trace: List[torch.Tensor] = []
        self.comb_trace: List[torch.Tensor] = []

    def W(self, name):
        return self.w[PREFIX + name]

    # -- KDA ------------------------------------------------------------------
    def attn_kda(self, i: int, x: torch.Tensor) -> torch.Tensor:
        """Glm5NextTextLinearAttention (no cache): Kimi KDA, lower-bound gate, low-rank output gate."""
        p = f"layers.{i}.self_attn."
        S = x.shape[0]
        H, K = self.kda["num_heads"], self.kda["head_dim"]
        q = M.kda_short_conv(x @ self.W(p + "q_proj.weight").t(), self.W(p + "q_conv1d.weight")).view(S, H, K)
        k = M.kda_short_conv(x @ self.W(p + "k_proj.weight").t(), self.W(p + "k_conv1d.weight")).view(S, H, K)
        v = M.kda_short_conv(x @ self.W(p + "v_proj.weight").t(), self.W(p + "v_conv1d.weight")).view(S, H, K)
        graw = ((x @ self.W(p + "f_a_proj.weight").t()) @ self.W(p + "f_b_proj.weight").t()).view(S, H, K)
        g = M.kda_gate(graw, self.W(p + "A_log"), self.W(p + "dt_bias"), self.kda["lower_bound"])
        beta = torch.sigmoid(x @ self.W(p + "b_proj.weight").t())
        o = M.kda_recurrent(M.l2norm_fla(q), M.l2norm_fla(k), v, g, beta, K ** -0.5)
        gate = ((x @ self.W(p + "g_a_proj.weight").t()) @ self.W(p + "g_b_proj.weight").t()).view(S, H, K)
        o = M.rms_norm_gated_sigmoid(o, self.W(p + "o_norm.weight"), gate, self.c["rms_norm_eps"])
        self.kda_decay_trace.append(g.exp())
        return o.reshape(S, H * K) @ self.W(p + "o_proj.weight").t()

    # -- DSA ------------------------------------------------------------------
    def indexer(self, i: int, x: torch.Tensor, qr: torch.Tensor):
        """Glm5NextTextIndexer: score[t, p] = sum_h w[t, h] relu(Di^-0.5 q[t, h] . K[p]),
        w = weights_proj(x) * Hi^-0.5, q = wq_b(q_resid), K = pooled LayerNorm(wk(x))."""
        c, p = self.c, f"layers.{i}.self_attn.indexer."
        S = x.shape[0]
        Hi, Di, kp = c["index_n_heads"], c["index_head_dim"], c["index_kpool"]
        q = (qr @ self.W(p + "wq_b.weight").t()).view(S, Hi, Di)
        k = layer_norm(x @ self.W(p + "wk.weight").t(), self.W(p + "k_norm.weight"), self.W(p + "k_norm.bias"), 1e-6)
        gate = x @ self.W(p + "index_kpool_compress_gate").t()
        pk = pool_keys(k, gate, self.W(p + "index_kpool_compress_ape"), kp)  # [P, Di]
        wts = (x @ self.W(p + "weights_proj.weight").t()) * Hi ** -0.5  # [S, Hi]
        scores = (torch.relu(torch.einsum("shd,pd->shp", q, pk) * Di ** -0.5) * wts[..., None]).sum(1)  # [S, P]
        tail = TAIL_ALWAYS and bool(c.get("index_kpool_always_select_tail", True))
        return kpool_select(scores, S, kp, c["index_topk"], tail)

    def attn_dsa(self, i: int, x: torch.Tensor, prev_allowed: Optional[torch.Tensor]):
        """Glm5NextTextAttention: MLA (q-LoRA, NoPE) over the indexer's token set."""
        c, p = self.c, f"layers.{i}.self_attn."
        S = x.shape[0]
        H, dn, dv, r, eps = c["num_attention_heads"], c["qk_nope_head_dim"], c["v_head_dim"], c["kv_lora_rank"], c["rms_norm_eps"]
        qr = M.rms_norm(x @ self.W(p + "q_a_proj.weight").t(), self.W(p + "q_a_layernorm.weight"), eps)
        q = (qr @ self.W(p + "q_b_proj.weight").t()).view(S, H, dn).transpose(0, 1)
        ckv = M.rms_norm(x @ self.W(p + "kv_a_proj_with_mqa.weight").t(), self.W(p + "kv_a_layernorm.weight"), eps)
        kv = (ckv @ self.W(p + "kv_b_proj.weight").t()).view(S, H, dn + dv).transpose(0, 1)
        info = {"layer": i, "indexer": self.index_kinds[i]}
        if self.index_kinds[i] == "full":
            allowed, margin, n_vis, n_sel = self.indexer(i, x, qr)
            info.update(margin=margin, n_vis=n_vis, n_sel=n_sel)
        else:  # "shared": the previous layer's selection (transformers: only from the immediately preceding layer)
            assert prev_allowed is not None, f"layer {i}: shared indexer without a preceding full DSA layer"
            allowed = prev_allowed
        info["attended"] = allowed.sum(-1)
        self.dsa_trace.append(info)
        o = masked_attention(q, kv[..., :dn], kv[..., dn:], allowed, dn ** -0.5)  # scale qk_head_dim^-0.5
        return o.transpose(0, 1).reshape(S, H * dv) @ self.W(p + "o_proj.weight").t(), allowed

    # -- FFN ------------------------------------------------------------------
    def mlp(self, i: int, x: torch.Tensor) -> torch.Tensor:
        # Glm5NextTextMLP / Experts._apply_gate clamp as V4 does: silu(min(gate, limit)) * clamp(up, +-limit)
        c, p = self.c, f"layers.{i}.mlp."
        lim = float(c.get("swiglu_limit", 10.0))
        if self.mlp_kinds[i] == "dense":
            return V4.clamped_swiglu(x, self.W(p + "gate_proj.weight"), self.W(p + "up_proj.weight"),
                                     self.W(p + "down_proj.weight"), lim, self.clamp_stats)
        logits = x @ self.W(p + "gate.weight").t()
        idx, w, info = M.route_sigmoid_group(logits, self.W(p + "gate.e_score_correction_bias"), c.get("n_group", 1),
                                             c.get("topk_group", 1), c["num_experts_per_tok"],
                                             c.get("norm_topk_prob", True), c["routed_scaling_factor"])
        ep = p + "experts."
        fn = lambda e, xx: V4.clamped_swiglu(xx, self.W(f"{ep}{e}.gate_proj.weight"), self.W(f"{ep}{e}.up_proj.weight"),
                                             self.W(f"{ep}{e}.down_proj.weight"), lim, self.clamp_stats)
        out = M.moe_combine(x, idx, w, fn)
        sp = p + "shared_experts."
        out = out + V4.clamped_swiglu(x, self.W(sp + "gate_proj.weight"), self.W(sp + "up_proj.weight"),
                                      self.W(sp + "down_proj.weight"), lim, self.clamp_stats)
        self.trace.append({"layer": i, "idx": idx, "weights": w, **info})
        return out

    # -- full model -------------------------------------------------------------
    def site(self, streams, i, which):
        c = self.c
        return V4.hc_weights(streams, self.W(f"layers.{i}.hc_{which}_fn"), self.W(f"layers.{i}.hc_{which}_scale"),
                             self.W(f"layers.{i}.hc_{which}_base"), c["hc_mult"], c["hc_sinkhorn_iters"],
                             c["hc_eps"], c["rms_norm_eps"])

    @torch.no_grad()
    def forward(self, tokens: List[int]) -> torch.Tensor:
        self.trace, self.clamp_stats, self.dsa_trace, self.kda_decay_trace, self.comb_trace = [], [], [], [], []
        c = self.c
        eps, hc = c["rms_norm_eps"], c["hc_mult"]
        ids = torch.tensor(tokens, dtype=torch.long)
        streams = self.W("embed_tokens.weight")[ids][:, None, :].expand(-1, hc, -1).contiguous()
        prev_allowed = None
        for i in range(c["num_hidden_layers"]):
            pre, post, comb = self.site(streams, i, "attn")
            self.comb_trace.append(comb)
            x = M.rms_norm(V4.hc_collapse(streams, pre), self.W(f"layers.{i}.input_layernorm.weight"), eps)
            if self.kinds[i] == "linear_attention":
                a = self.attn_kda(i, x)
                prev_allowed = None  # transformers: a KDA layer returns no top-k, the chain breaks
            else:
                a, allowed = self.attn_dsa(i, x, prev_allowed)
                nxt = self.index_kinds[min(i + 1, len(self.index_kinds) - 1)]
                prev_allowed = allowed if (self.index_kinds[i] == "full" and nxt == "shared") else None
            streams = V4.hc_expand(a, streams, post, comb)
            pre, post, comb = self.site(streams, i, "ffn")
            self.comb_trace.append(comb)
            x = M.rms_norm(V4.hc_collapse(streams, pre), self.W(f"layers.{i}.post_attention_layernorm.weight"), eps)
            streams = V4.hc_expand(self.mlp(i, x), streams, post, comb)
        h = streams.mean(dim=1) if HEAD_MEAN else streams[:, 0]  # Glm5NextTextHyperHead
        h = M.rms_norm(h, self.W("norm.weight"), eps)
        return h @ self.w[HEAD].t()

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

N_PROMPT = 48  # pools of 4 close every 4 tokens; the indexer drops pools from position 19 on (README)

TEXT_CONFIG = {
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 0,
    "eos_token_id": 1,
    "first_k_dense_replace": 1,
    "hc_eps": 1e-06,
    "hc_mult": 4,
    "hc_sinkhorn_iters": 20,
    "hidden_act": "silu",
    "hidden_size": 64,
    "index_head_dim": 32,
    "index_kpool": 4,
    "index_kpool_always_select_tail": True,
    "index_n_heads": 8,
    "index_topk": 16,
    "indexer_types": ["full", "full", "full", "full", "full"],
    "initializer_range": 0.02,
    "intermediate_size": 128,
    "kv_lora_rank": 32,
    "layer_types": ["linear_attention", "linear_attention", "deepseek_sparse_attention", "linear_attention",
                    "deepseek_sparse_attention"],
    "linear_attn_config": {"gate_lower_bound": -5.0, "head_dim": 16, "num_heads": 4, "short_conv_kernel_size": 4},
    "max_position_embeddings": 1024,
    "mlp_layer_types": ["dense", "sparse", "sparse", "sparse", "sparse"],
    "model_type": "glm5_next_text",
    "moe_intermediate_size": 32,
    "n_group": 1,
    "n_routed_experts": 16,
    "n_shared_experts": 1,
    "norm_topk_prob": True,
    "num_attention_heads": 4,
    "num_experts_per_tok": 4,
    "num_hidden_layers": 5,
    "num_key_value_heads": 4,
    "num_nextn_predict_layers": 1,
    "pad_token_id": 255,
    "q_lora_rank": 32,
    "qk_nope_head_dim": 16,
    "qk_rope_head_dim": 0,
    "rms_norm_eps": 1e-05,
    "routed_scaling_factor": 2.5,
    "swiglu_limit": 10.0,
    "tie_word_embeddings": False,
    "topk_group": 1,
    "use_cache": True,
    "v_head_dim": 32,
    "vocab_size": 256,
}


def variant_config(storage: str) -> dict:
    assert storage == "bf16"
    tc = {k: (dict(v) if isinstance(v, dict) else (list(v) if isinstance(v, list) else v)) for k, v in TEXT_CONFIG.items()}
    return {"architectures": ["Glm5NextForConditionalGeneration"], "bos_token_id": 0, "eos_token_id": 1,
            "model_type": MODEL_TYPE, "text_config": tc, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}


EXPERT_STD = 5.0  # gate / up pre-activation std, so that swiglu_limit 10 clamps
EXPERT_DOWN_SCALE = 0.15
DT_MEAN = -2.5


def gen_weights(cfg: dict, g: torch.Generator) -> Dict[str, torch.Tensor]:
    """Release names and shapes ([out, in] for every projection), float32 master copy, in checkpoint order,
    plus a few tensors of the MTP layer (layers.<num_hidden_layers>.*)."""
    c = text_config(cfg)
    Hd, V, H = c["hidden_size"], c["vocab_size"], c["num_attention_heads"]
    dn, dv, r, qr = c["qk_nope_head_dim"], c["v_head_dim"], c["kv_lora_rank"], c["q_lora_rank"]
    Hi, Di, kp = c["index_n_heads"], c["index_head_dim"], c["index_kpool"]
    E, I, hc = c["n_routed_experts"], c["moe_intermediate_size"], c["hc_mult"]
    kd = kda_params(c)
    KH, KD, Wc = kd["num_heads"], kd["head_dim"], kd["conv"]
    P = KH * KD
    mix = (2 + hc) * hc
    kinds, mkinds = layer_types(c), mlp_layer_types(c)
    w: Dict[str, torch.Tensor] = {}
    pre = PREFIX

    def lin(name, out_f, in_f, scale=1.0):
        w[name] = torch.randn(out_f, in_f, generator=g) * (scale / math.sqrt(in_f))

    def norm(name, n):
        w[name] = 0.9 + 0.2 * torch.rand(n, generator=g)

    def swiglu3(prefix, inter):
        lin(prefix + "gate_proj.weight", inter, Hd, EXPERT_STD)
        lin(prefix + "up_proj.weight", inter, Hd, EXPERT_STD)
        lin(prefix + "down_proj.weight", Hd, inter, EXPERT_DOWN_SCALE)

    def hc_site(prefix):
        w[prefix + "_fn"] = torch.randn(mix, hc * Hd, generator=g) * (1.0 / math.sqrt(hc * Hd))
        w[prefix + "_base"] = torch.randn(mix, generator=g) * 0.5
        w[prefix + "_scale"] = 0.5 + torch.rand(3, generator=g)

    w[pre + "embed_tokens.weight"] = torch.randn(V, Hd, generator=g)
    for i in range(c["num_hidden_layers"]):
        p = f"{pre}layers.{i}."
        hc_site(p + "hc_attn")
        hc_site(p + "hc_ffn")
        norm(p + "input_layernorm.weight", Hd)
        norm(p + "post_attention_layernorm.weight", Hd)
        a = p + "self_attn."
        if kinds[i] == "linear_attention":
            lin(a + "q_proj.weight", P, Hd)
            lin(a + "k_proj.weight", P, Hd)
            lin(a + "v_proj.weight", P, Hd)
            for n in ("q", "k", "v"):
                t = torch.randn(P, 1, Wc, generator=g) * 0.4
                t[:, 0, Wc - 1] += 1.0
                w[a + f"{n}_conv1d.weight"] = t
            lin(a + "f_a_proj.weight", KD, Hd)
            lin(a + "f_b_proj.weight", P, KD)
            w[a + "dt_bias"] = DT_MEAN + torch.randn(P, generator=g)
            w[a + "A_log"] = torch.log(0.5 + 2.0 * torch.rand(KH, generator=g))
            lin(a + "b_proj.weight", KH, Hd, 2.0)
            lin(a + "g_a_proj.weight", KD, Hd)
            lin(a + "g_b_proj.weight", P, KD, 2.0)
            norm(a + "o_norm.weight", KD)
            lin(a + "o_proj.weight", Hd, P)
        else:
            lin(a + "q_a_proj.weight", qr, Hd)
            norm(a + "q_a_layernorm.weight", qr)
            lin(a + "q_b_proj.weight", H * dn, qr, 2.0)
            lin(a + "kv_a_proj_with_mqa.weight", r, Hd)
            norm(a + "kv_a_layernorm.weight", r)
            lin(a + "kv_b_proj.weight", H * (dn + dv), r, 2.0)
            lin(a + "o_proj.weight", Hd, H * dv)
            if indexer_types(c)[i] == "full":
                ix = a + "indexer."
                lin(ix + "wq_b.weight", Hi * Di, qr, 2.0)
                lin(ix + "wk.weight", Di, Hd)
                norm(ix + "k_norm.weight", Di)
                w[ix + "k_norm.bias"] = torch.randn(Di, generator=g) * 0.1
                lin(ix + "weights_proj.weight", Hi, Hd, 2.0)
                w[ix + "index_kpool_compress_ape"] = torch.randn(kp, Di, generator=g) * 0.5
                lin(ix + "index_kpool_compress_gate", Di, Hd, 1.5)
        m = p + "mlp."
        if mkinds[i] == "dense":
            swiglu3(m, c["intermediate_size"])
        else:
            lin(m + "gate.weight", E, Hd, 2.0)
            w[m + "gate.e_score_correction_bias"] = torch.randn(E, generator=g) * 0.05
            for e in range(E):
                swiglu3(f"{m}experts.{e}.", I)
            swiglu3(m + "shared_experts.", I * c["n_shared_experts"])
    norm(pre + "norm.weight", Hd)
    lin(HEAD, V, Hd, 2.0)
    # a few tensors of the MTP layer (release: layer 45 = num_hidden_layers); the reference skips them
    t = f"{pre}layers.{c['num_hidden_layers']}."
    lin(t + "eh_proj.weight", Hd, 2 * Hd)
    norm(t + "enorm.weight", Hd)
    norm(t + "hnorm.weight", Hd)
    norm(t + "shared_head.norm.weight", Hd)
    norm(t + "input_layernorm.weight", Hd)
    lin(t + "self_attn.q_a_proj.weight", qr, Hd)
    lin(t + "mlp.experts.0.gate_proj.weight", I, Hd)
    return w


F32_SUFFIXES = ("hc_attn_fn", "hc_attn_base", "hc_attn_scale", "hc_ffn_fn", "hc_ffn_base", "hc_ffn_scale",
                ".A_log", ".dt_bias", ".e_score_correction_bias")


def storage_kind(name: str, storage: str) -> str:
    """F32: mHC parameters, A_log, dt_bias, e_score_correction_bias; everything else BF16."""
    return "F32" if name.endswith(F32_SUFFIXES) else "BF16"


def to_storage(weights: Dict[str, torch.Tensor], storage: str, mxfp4_encode=None):
    """-> (stored {name: (dtype, np array)}, dequantised {name: tensor} as the reference sees it)."""
    stored, deq = {}, {}
    n = None
    for name, t in weights.items():
        a = t.numpy().astype(np.float32)
        if storage_kind(name, storage) == "F32":
            stored[name] = ("F32", a)
            deq[name] = torch.from_numpy(a.copy())
        else:
            bits = M.f32_to_bf16_bits(a)
            stored[name] = ("BF16", bits)
            deq[name] = torch.from_numpy(M.bf16_bits_to_f32(bits).copy())
    n = max(int(k[len(PREFIX + "layers."):].split(".")[0]) for k in weights if k.startswith(PREFIX + "layers."))
    deq = {k: v for k, v in deq.items() if not is_skipped(k, n)}  # n = the MTP layer's index
    return stored, deq


INDEXER_MARGIN = 1e-3  # k-th vs (k+1)-th pool score where the indexer drops pools, like the routing margin


def analyse_extra(model: Model) -> dict:
    im = math.inf
    drops = 0
    for tr in model.dsa_trace:
        if "margin" in tr:
            im = min(im, float(tr["margin"].min()))
            drops += int((tr["n_vis"] > tr["n_sel"]).sum())
    cs = model.clamp_stats
    return {"indexer_margin": im, "positions_where_indexer_drops_pools": drops,
            "gate_entries_above_limit": sum(x["gate_hi"] for x in cs),
            "up_entries_outside_limit": sum(x["up_out"] for x in cs)}


def accept(model: Model, extra: dict) -> bool:
    return (extra["indexer_margin"] > INDEXER_MARGIN and extra["positions_where_indexer_drops_pools"] > 0
            and extra["gate_entries_above_limit"] > 0 and extra["up_entries_outside_limit"] > 0)


def manifest_info(model: Model, tokens: List[int], stored: dict) -> dict:
    """Extra manifest entries, measured over ONE prefill of the prompt."""
    model.forward(tokens)
    S = len(tokens)
    info: Dict[str, object] = {"n_prompt": S, "layer_types": model.kinds, "mlp_layer_types": model.mlp_kinds,
                               "indexer_types": model.index_kinds}
    per_layer = {}
    for tr in model.dsa_trace:
        d = {"indexer": tr["indexer"], "keys_attended_at_last_position": int(tr["attended"][-1]),
             "keys_attended_per_position": [int(x) for x in tr["attended"]]}
        if "margin" in tr:
            drop = tr["n_vis"] > tr["n_sel"]
            d["first_position_where_indexer_drops_pools"] = int(drop.nonzero()[0]) if drop.any() else None
            d["positions_where_indexer_drops_pools"] = int(drop.sum())
            d["complete_pools_visible_at_last_position"] = int(tr["n_vis"][-1])
            d["pools_selected_at_last_position"] = int(tr["n_sel"][-1])
            d["min_indexer_margin_prefill"] = float(tr["margin"].min())
        per_layer[str(tr["layer"])] = d
    info["dsa"] = per_layer
    cs = model.clamp_stats
    info["clamp_over_prefill"] = {"gate_entries_above_limit": sum(x["gate_hi"] for x in cs),
                                  "up_entries_outside_limit": sum(x["up_out"] for x in cs),
                                  "entries_per_half": sum(x["entries"] for x in cs)}
    info["mhc_comb_max_abs_rowsum_minus_1"] = max(float((cm.sum(-1) - 1).abs().max()) for cm in model.comb_trace)
    info["mhc_comb_max_abs_colsum_minus_1"] = max(float((cm.sum(-2) - 1).abs().max()) for cm in model.comb_trace)
    d = torch.cat([t.flatten() for t in model.kda_decay_trace]).double()
    info["kda_decay_over_prefill"] = {
        "quantiles_1_10_50_90_99": [round(float(d.quantile(q)), 4) for q in (0.01, 0.1, 0.5, 0.9, 0.99)],
        "min": float(d.min()), "max": float(d.max())}
    info["skipped_mtp_tensors"] = sorted(n for n in stored if is_skipped(n, model.c["num_hidden_layers"]))
    return info
