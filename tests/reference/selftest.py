#!/usr/bin/python3
"""Self-checks of the reference and of the fixtures' power to catch mistakes.

    /usr/bin/python3 tests/reference/selftest.py               # checks 1-4, 6, 7, 8 (fast; ctest runs this)
    /usr/bin/python3 tests/reference/selftest.py --mutations   # also the mutation table (5)

1. number formats: E4M3 encoder vs brute force, bf16 rounding vs torch.
2. DeepSeek interleaved RoPE == rotating (x[2i], x[2i+1]) pairs as complex numbers
   (the original DeepSeek `apply_rotary_emb` with view_as_complex).
3. MLA in weight-absorbed form (attention over the kv_lora latent, as an
   inference engine would do it) == the naive HF form used by models.py.
4. every fixture recomputed from its files matches logits.f32 / greedy.txt.
5. mutation sensitivity: each plausible implementation mistake is injected and
   the max |logit difference| vs the fixture is printed (a fixture "catches" a
   mistake when that difference is far above float noise).
6. gpt-oss: MXFP4 dequantisation against hand-computed blocks and against the raw
   bytes of the gpt_oss_mxfp4 fixture (orientation), the sink/sliding-window attention
   against openai/gpt-oss's `sdpa` formulation, YaRN against openai/gpt-oss's
   `_compute_concentration_and_inv_freq`, and gpt-oss mutation rows (the
   mutation table requires every gpt-oss row to move the logits by > 0.05).
7. Kimi-Linear: the token-by-token KDA recurrence against a re-implementation of fla's
   chunkwise `naive_chunk_kda`, the short conv against nn.Conv1d, and Kimi mutation rows
   (asserted > 0.05 like the gpt-oss ones).
8. Kimi-K3: the packed MXFP4 experts against the raw bytes of kimi_k3_mxfp4, AttnRes against
   llama.cpp's split formulation, and Kimi-K3 mutation rows (asserted > 0.05).
9. DeepSeek-V4: Sinkhorn, interleaved RoPE, YaRN, the compressor, the grouped output projection and the
   sliding + compressed + indexer attention masks against second formulations; the release byte layouts
   (FP8 / FP4 with E8M0 scales, I64 tid2eid) of deepseek_v4_native against hand decoding; V4 mutation
   rows (asserted > 0.05) and the size of the release's QAT round trips (reported only).
10. GLM-5.3-Flash (glm5_next): the k-pool indexer selection against a transcription of transformers'
   vectorised Glm5NextTextIndexer (pool indices, finfo.min masking, top-k, tail append, scatter mask), the
   pooled keys against the padded/-inf/nan_to_num form, the DSA attention against a per-query gather, the
   checkpoint (F32 set, MTP layer present on disk and skipped); glm5_next mutation rows (asserted > 0.05).
11. DeepSeek-V4.1 (deepseek_v41): the engram layout / multipliers of the release config against the published
   values, the hash rows against a vectorised int64 transcription of transformers' DeepseekV41NgramHashState,
   the fixture's tokenizer map (merges, U+FFFD bytes, the empty-normalisation case), the FP8 / FP4 round trips
   against brute force, the release byte layout of deepseek_v41_native, and incremental (one token at a time
   with caches) == batched on the fixture's prompt.
"""

from __future__ import annotations

import copy
import json
import math
import os
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import models as M  # noqa: E402
import deepseek_v4 as V4  # noqa: E402
import glm5_next as G5  # noqa: E402
import deepseek_v41 as V41  # noqa: E402

FIX = os.path.normpath(os.path.join(HERE, "..", "fixtures"))
torch.set_num_threads(1)


def check_formats():
    t = M.e4m3_table()
    assert np.nanmax(t) == 448.0 and np.isnan(t[0x7F]) and np.isnan(t[0xFF]) and t[1] == 2.0 ** -9
    rng = np.random.default_rng(0)
    mids = (t[:0x7E] + t[1:0x7F]) / 2
    x = np.concatenate([rng.standard_normal(5000) * 100, rng.standard_normal(1000) * 0.01, mids, -mids,
                        [0.0, 448.0, 1000.0, -1000.0]]).astype(np.float32)
    fin = np.array([i for i in range(256) if not np.isnan(t[i])])
    got = t[M.f32_to_e4m3(x)]
    for v, gv in zip(x, got):
        vv = max(min(float(v), 448.0), -448.0)
        d = np.abs(t[fin].astype(np.float64) - vv)
        cands = fin[d == d.min()]
        if len(set(t[cands].tolist())) > 1:
            cands = [c for c in cands if c % 2 == 0]
        assert t[cands[0]] == gv, (v, gv, t[cands[0]])
    y = (rng.standard_normal(100000) * 3).astype(np.float32)
    tb = torch.from_numpy(y).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    assert (M.f32_to_bf16_bits(y) == tb).all()
    print("formats: ok")


def check_interleave():
    d, S = 16, 9
    inv, _ = M.rope_parameters({"rope_theta": 10000.0}, d)
    cos, sin = M.rope_cos_sin(inv, 1.0, S)
    q, k = torch.randn(S, d), torch.randn(S, d)
    a = M.apply_rope_interleave(q, cos, sin) @ M.apply_rope_interleave(k, cos, sin).T
    f = torch.polar(torch.ones(S, d // 2), torch.arange(S).float()[:, None] * inv[None])
    qc = torch.view_as_real(torch.view_as_complex(q.reshape(S, d // 2, 2)) * f).reshape(S, d)
    kc = torch.view_as_real(torch.view_as_complex(k.reshape(S, d // 2, 2)) * f).reshape(S, d)
    err = (a - qc @ kc.T).abs().max().item()
    assert err < 1e-4, err
    print(f"interleaved rope == complex pair rotation: ok (max err {err:.2e})")


def check_mla_absorbed(fixture="deepseek_v3_f32", layer=1):
    cfg, w = M.load_checkpoint(os.path.join(FIX, fixture))
    m = M.ReferenceModel(cfg, w)
    S = 20
    x = torch.randn(S, cfg["hidden_size"])
    cos, sin = M.rope_cos_sin(m.inv_freq, m.attn_factor, S)
    ref = m.attn_mla(layer, x, cos, sin)
    p = f"model.layers.{layer}.self_attn."
    H, dn, dr, dv, r = (cfg["num_attention_heads"], cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"],
                        cfg["v_head_dim"], cfg["kv_lora_rank"])
    if cfg.get("q_lora_rank") is None:
        q = x @ w[p + "q_proj.weight"].T
    else:
        q = M.rms_norm(x @ w[p + "q_a_proj.weight"].T, w[p + "q_a_layernorm.weight"], 1e-6) @ w[p + "q_b_proj.weight"].T
    q = q.view(S, H, dn + dr)
    ckv = x @ w[p + "kv_a_proj_with_mqa.weight"].T
    c = M.rms_norm(ckv[:, :r], w[p + "kv_a_layernorm.weight"], 1e-6)  # [S, r] latent cache
    kr = M.apply_rope_interleave(ckv[:, r:], cos, sin)  # [S, dr] shared rope key
    wkv = w[p + "kv_b_proj.weight"].view(H, dn + dv, r)
    w_uk, w_uv = wkv[:, :dn, :], wkv[:, dn:, :]  # [H, dn, r], [H, dv, r]
    q_lat = torch.einsum("shd,hdr->hsr", q[..., :dn], w_uk)  # absorbed q_nope
    q_rot = M.apply_rope_interleave(q[..., dn:].transpose(0, 1), cos, sin)  # [H,S,dr]
    scale = (dn + dr) ** -0.5
    rs = cfg.get("rope_scaling")
    if isinstance(rs, dict) and rs.get("mscale_all_dim"):
        scale *= M.yarn_get_mscale(rs["factor"], rs["mscale_all_dim"]) ** 2
    scores = (q_lat @ c.T + q_rot @ kr.T) * scale
    scores = scores.masked_fill(torch.triu(torch.ones(S, S, dtype=torch.bool), 1), float("-inf"))
    o_lat = torch.softmax(scores, -1) @ c  # [H,S,r]
    o = torch.einsum("hsr,hvr->shv", o_lat, w_uv).reshape(S, H * dv)
    out = o @ w[p + "o_proj.weight"].T
    err = (out - ref).abs().max().item()
    assert err < 1e-4, err
    print(f"MLA absorbed == naive ({fixture}, layer {layer}): ok (max err {err:.2e})")


def fixture_names():
    return sorted(d for d in os.listdir(FIX) if os.path.isdir(os.path.join(FIX, d)))


def load_fixture(name):
    d = os.path.join(FIX, name)
    cfg, w = M.load_checkpoint(d)
    toks = [int(t) for t in open(os.path.join(d, "tokens.txt")).read().strip().split(",")]
    ref = torch.from_numpy(np.fromfile(os.path.join(d, "logits.f32"), dtype="<f4").reshape(len(toks), -1).copy())
    greedy = [int(t) for t in open(os.path.join(d, "greedy.txt")).read().strip().split(",")]
    return cfg, w, toks, ref, greedy


def check_fixtures():
    for n in fixture_names():
        cfg, w, toks, ref, greedy = load_fixture(n)
        m = M.ReferenceModel(cfg, w)
        lg = m.forward(toks)
        assert torch.equal(lg, ref), n
        assert m.greedy(toks, 16) == greedy, n
    print(f"{len(fixture_names())} fixtures recomputed from disk: bit-exact")


# ---- mutations -------------------------------------------------------------


def mutated_diff(name, cfg_mut=None, patch=None):
    saved = {}
    if patch:  # patched before loading, so a patch may also change how weights are decoded
        for k, v in patch.items():  # "V4.<name>" / "G5.<name>" patch deepseek_v4 / glm5_next, a bare name models
            mod, attr = (V4, k[3:]) if k.startswith("V4.") else (G5, k[3:]) if k.startswith("G5.") else (M, k)
            saved[k] = (mod, attr, getattr(mod, attr))
            setattr(mod, attr, v)
    try:
        cfg, w, toks, ref, greedy = load_fixture(name)
        cfg = copy.deepcopy(cfg)
        if cfg_mut:
            cfg_mut(cfg)
        m = M.ReferenceModel(cfg, w)
        lg = m.forward(toks)
        g = m.greedy(toks, 16)
    finally:
        for k, (mod, attr, v) in saved.items():
            setattr(mod, attr, v)
    return (lg - ref).abs().max().item(), g != greedy


def run_mutations():
    orig_sig = M.route_sigmoid_group
    orig_soft = M.route_softmax
    orig_rope_params = M.rope_parameters

    def sig_no_bias(logits, bias, *a):
        return orig_sig(logits, torch.zeros_like(bias), *a)

    def sig_biased_weights(logits, bias, n_group, topk_group, top_k, norm, scale):
        idx, w, info = orig_sig(logits, bias, n_group, topk_group, top_k, norm, scale)
        wb = (torch.sigmoid(logits) + bias).gather(1, idx)
        if norm:
            wb = wb / (wb.sum(-1, keepdim=True) + 1e-20)
        return idx, wb * scale, info

    def sig_no_scaling(logits, bias, n_group, topk_group, top_k, norm, scale):
        return orig_sig(logits, bias, n_group, topk_group, top_k, norm, 1.0)

    def sig_no_group_limit(logits, bias, n_group, topk_group, top_k, norm, scale):
        return orig_sig(logits, bias, 1, 1, top_k, norm, scale)

    def sig_group_max(logits, bias, n_group, topk_group, top_k, norm, scale):
        # group score = max instead of sum of top-2
        T, E = logits.shape
        ch = torch.sigmoid(logits) + bias
        gs = ch.view(T, n_group, -1).amax(-1)
        keep = torch.zeros_like(gs, dtype=torch.bool).scatter_(1, gs.topk(topk_group, -1)[1], True)
        ch = ch.masked_fill(~keep[:, :, None].expand(T, n_group, E // n_group).reshape(T, E), float("-inf"))
        idx = ch.topk(top_k, -1)[1]
        wt = torch.sigmoid(logits).gather(1, idx)
        if norm:
            wt = wt / (wt.sum(-1, keepdim=True) + 1e-20)
        _, _, info = orig_sig(logits, bias, n_group, topk_group, top_k, norm, scale)
        return idx, wt * scale, info

    def soft_flip_norm(logits, top_k, norm):
        return orig_soft(logits, top_k, not norm)

    def yarn_old_attention_factor(config, dim):
        inv, af = orig_rope_params(config, dim)
        rs = config.get("rope_scaling")
        if isinstance(rs, dict):
            af = 0.1 * math.log(rs["factor"]) + 1.0  # pre-mscale HF formula
        return inv, af

    def drop_mscale(c):
        c["rope_scaling"] = dict(c["rope_scaling"], mscale_all_dim=0)

    def plain_rope_keep_mscale(config, dim):
        c2 = dict(config, rope_scaling=None)
        return orig_rope_params(c2, dim)

    cases = [
        ("deepseek_v3_f32", "rope NOT interleaved (rotate_half on raw layout)", lambda c: c.update(rope_interleave=False), None),
        ("deepseek_v3_f32", "router: bias not added to choice scores", None, {"route_sigmoid_group": sig_no_bias}),
        ("deepseek_v3_f32", "router: weights taken from biased scores", None, {"route_sigmoid_group": sig_biased_weights}),
        ("deepseek_v3_f32", "router: routed_scaling_factor omitted", None, {"route_sigmoid_group": sig_no_scaling}),
        ("deepseek_v3_f32", "router: no group limit (n_group ignored)", None, {"route_sigmoid_group": sig_no_group_limit}),
        ("deepseek_v3_f32", "router: group score = max instead of top-2 sum", None, {"route_sigmoid_group": sig_group_max}),
        ("deepseek_v3_f32", "norm_topk_prob ignored", lambda c: c.update(norm_topk_prob=False), None),
        ("deepseek_v3_f32", "shared expert omitted", lambda c: c.update(n_shared_experts=0), None),
        ("deepseek_v3_yarn_f32", "yarn: softmax mscale^2 omitted", drop_mscale, None),
        ("deepseek_v3_yarn_f32", "yarn: plain RoPE freqs (keep mscale^2)", None, {"rope_parameters": plain_rope_keep_mscale}),
        ("deepseek_v3_yarn_f32", "yarn: cos/sin x (0.1 ln f + 1) (old HF)", None, {"rope_parameters": yarn_old_attention_factor}),
        ("deepseek_v3_noqlora_f32", "rope NOT interleaved", lambda c: c.update(rope_interleave=False), None),
        ("qwen3_moe_f32", "norm_topk_prob flipped", None, {"route_softmax": soft_flip_norm}),
        ("qwen3_moe_nonorm_f32", "norm_topk_prob flipped (renormalised)", None, {"route_softmax": soft_flip_norm}),
        ("qwen3_moe_f32", "rope theta 10000 instead of 1e6", lambda c: c.update(rope_theta=10000.0), None),
        ("glm4_moe_f32", "full rotary instead of partial 0.5", lambda c: c.update(partial_rotary_factor=1.0), None),
        ("glm4_moe_f32", "q/k norm skipped", lambda c: c.update(use_qk_norm=False), None),
        ("glm4_moe_f32", "routed_scaling_factor omitted", None, {"route_sigmoid_group": sig_no_scaling}),
        ("mixtral_f32", "top-k weights not renormalised", None,
         {"route_softmax": lambda l, k, n: orig_soft(l, k, False)}),
    ]
    print(f"{'fixture':26s} {'injected mistake':52s} {'max|dlogit|':>12s} greedy-changed")
    for name, desc, cm, patch in cases + gpt_oss_mutations() + kimi_mutations() + k3_mutations() + v4_mutations() + g5_mutations():
        d, gchg = mutated_diff(name, cm, patch)
        print(f"{name:26s} {desc:52s} {d:12.4g} {gchg}")
        if name.startswith(("gpt_oss", "kimi", "deepseek_v4", "glm5_next")):
            assert d > 0.05, (name, desc, d)
    v4_qat_measurement()


# ---- gpt-oss ---------------------------------------------------------------


def check_mxfp4():
    # hand-computed: byte = lo | hi << 4, lo -> element 2j, hi -> element 2j+1, value = FP4[code] * 2^(s-127)
    blocks = np.zeros((2, 1, 16), dtype=np.uint8)
    blocks[0, 0, 0] = 0x21  # elem 0 = code 1 (+0.5), elem 1 = code 2 (+1.0)
    blocks[0, 0, 1] = 0xF7  # elem 2 = code 7 (+6.0), elem 3 = code 15 (-6.0)
    blocks[0, 0, 15] = 0x8A  # elem 30 = code 10 (-1.0), elem 31 = code 8 (-0.0)
    blocks[1, 0, :] = 0x53  # every even elem code 3 (+1.5), every odd elem code 5 (+3.0)
    scales = np.array([[127], [125]], dtype=np.uint8)  # x1 and x0.25
    got = M.dequant_mxfp4(blocks, scales)
    assert got.shape == (2, 32) and got.dtype == np.float32
    exp0 = np.zeros(32, dtype=np.float32)
    exp0[:4] = [0.5, 1.0, 6.0, -6.0]
    exp0[30:] = [-1.0, -0.0]
    exp1 = np.tile(np.array([1.5 * 0.25, 3.0 * 0.25], dtype=np.float32), 16)
    assert np.array_equal(got[0], exp0) and np.signbit(got[0, 31]) and np.array_equal(got[1], exp1), got
    # extreme scales: 2^(0-127) (an f32 subnormal, exact) and 2^(254-127)
    big = M.dequant_mxfp4(np.full((1, 16), 0x22, np.uint8), np.array([254], np.uint8))
    tiny = M.dequant_mxfp4(np.full((1, 16), 0x22, np.uint8), np.array([0], np.uint8))
    assert (big == np.float32(2.0 ** 127)).all() and (tiny == np.float32(2.0 ** -127)).all()
    # orientation in the fixture: blocks [E, out, in/32, 16] -> HF gate_up_proj [E, in, out]
    d = os.path.join(FIX, "gpt_oss_mxfp4")
    raw = M.read_safetensors(os.path.join(d, "model.safetensors"))
    cfg, w = M.load_checkpoint(d)
    E, Hd, I = cfg["num_local_experts"], cfg["hidden_size"], cfg["intermediate_size"]
    for name, out_f, in_f in (("gate_up_proj", 2 * I, Hd), ("down_proj", Hd, I)):
        key = f"model.layers.1.mlp.experts.{name}"
        bdt, bshape, bdata = raw[key + "_blocks"]
        sdt, sshape, sdata = raw[key + "_scales"]
        assert (bdt, bshape, sdt, sshape) == ("U8", [E, out_f, in_f // 32, 16], "U8", [E, out_f, in_f // 32])
        assert list(w[key].shape) == [E, in_f, out_f] and key + "_blocks" not in w and key + "_scales" not in w
        b = np.frombuffer(bdata, np.uint8).reshape(bshape)
        sc = np.frombuffer(sdata, np.uint8).reshape(sshape)
        for (e, r, c) in ((0, 0, 0), (E - 1, out_f - 1, in_f - 1), (3, 5, 33), (2, 7, 62), (1, 4, 31)):
            byte = int(b[e, r, c // 32, (c % 32) // 2])
            code = (byte >> 4) if c % 2 else (byte & 0xF)
            val = float(M.FP4_E2M1[code]) * 2.0 ** (int(sc[e, r, c // 32]) - 127)
            assert float(w[key][e, c, r]) == val, (key, e, r, c)
    used = np.unique(np.concatenate([np.frombuffer(raw[k][2], np.uint8) for k in raw if k.endswith("_blocks")]))
    print(f"mxfp4: hand-computed blocks ok, fixture orientation ok, {len(used)} distinct bytes in the blocks")


def check_sink_attention_vs_openai():
    """openai/gpt-oss torch/model.py `sdpa`: mask = triu(-inf, 1) + tril(-inf, -W); cat sinks; softmax; drop."""
    torch.manual_seed(0)
    H, S, D, W = 4, 21, 16, 8
    q, k, v = torch.randn(H, S, D), torch.randn(H, S, D), torch.randn(H, S, D)
    sinks = torch.randn(H)
    for win in (W, None):
        mask = torch.triu(torch.full((S, S), float("-inf")), diagonal=1)
        if win:
            mask = mask + torch.tril(torch.full((S, S), float("-inf")), diagonal=-win)
        qk = q @ k.transpose(1, 2) * D ** -0.5 + mask
        wts = torch.softmax(torch.cat([qk, sinks.view(H, 1, 1).expand(H, S, 1)], -1), -1)[..., :-1]
        err = (wts @ v - M.sink_attention(q, k, v, sinks, D ** -0.5, win)).abs().max().item()
        assert err < 1e-5, (win, err)
    print("sink attention (window 8 and full) == openai/gpt-oss sdpa: ok")


def check_yarn_vs_openai():
    """openai/gpt-oss RotaryEmbedding._compute_concentration_and_inv_freq (no truncation, no clamping,
    asserts 0 < low < high < d/2 - 1) agrees with HF truncate=false on gpt_oss_bf16/mxfp4."""
    for fx in ("gpt_oss_bf16", "gpt_oss_mxfp4"):
        cfg = json.load(open(os.path.join(FIX, fx, "config.json")))
        rs, d, base = cfg["rope_scaling"], cfg["head_dim"], cfg["rope_theta"]
        L, f = cfg["initial_context_length"], rs["factor"]
        assert L == rs["original_max_position_embeddings"] and cfg["max_position_embeddings"] == f * L
        freq = base ** (torch.arange(0, d, 2, dtype=torch.float) / d)
        d_half = d / 2
        low = d_half * math.log(L / (rs["beta_fast"] * 2 * math.pi)) / math.log(base)
        high = d_half * math.log(L / (rs["beta_slow"] * 2 * math.pi)) / math.log(base)
        assert 0 < low < high < d_half - 1
        ramp = (torch.arange(d_half, dtype=torch.float32) - low) / (high - low)
        mask = 1 - ramp.clamp(0, 1)
        inv = (1.0 / (f * freq)) * (1 - mask) + (1.0 / freq) * mask
        conc = 0.1 * math.log(f) + 1.0
        ours, af = M.rope_parameters(cfg, d)
        assert (ours - inv).abs().max().item() < 1e-7 and abs(af - conc) < 1e-12, (ours, inv)
    print(f"yarn (truncate=false, low={low:.4f}, high={high:.4f}) == openai/gpt-oss: ok")


def gpt_oss_mutations():
    orig_attn, orig_route, orig_glu = M.sink_attention, M.route_topk_softmax, M.gpt_oss_glu
    orig_rope_params, orig_dequant = M.rope_parameters, M.dequant_mxfp4

    def no_sink(q, k, v, sinks, scale, window):
        return orig_attn(q, k, v, torch.full_like(sinks, float("-inf")), scale, window)

    def no_window(q, k, v, sinks, scale, window):
        return orig_attn(q, k, v, sinks, scale, None)

    def window_plus_one(q, k, v, sinks, scale, window):
        return orig_attn(q, k, v, sinks, scale, None if window is None else window + 1)

    def softmax_all(logits, k):
        idx, w, info = orig_route(logits, k)
        return idx, torch.softmax(logits, -1).gather(1, idx), info

    def glu_no_clamp(gu, alpha, limit):
        return orig_glu(gu, alpha, float("inf"))

    def glu_no_plus_one(gu, alpha, limit):  # up * glu instead of (up + 1) * glu
        gate, up = gu[..., ::2].clamp(max=limit), gu[..., 1::2].clamp(-limit, limit)
        return up * (gate * torch.sigmoid(alpha * gate))

    def glu_swapped(gu, alpha, limit):  # gate = odd, up = even columns
        sw = torch.stack((gu[..., 1::2], gu[..., ::2]), -1).reshape(gu.shape)
        return orig_glu(sw, alpha, limit)

    def glu_halves(gu, alpha, limit):  # gate = first half, up = second half (concatenated layout)
        h = gu.shape[-1] // 2
        inter = torch.stack((gu[..., :h], gu[..., h:]), -1).reshape(gu.shape)
        return orig_glu(inter, alpha, limit)

    def glu_silu(gu, alpha, limit):  # alpha 1.0 instead of 1.702
        return orig_glu(gu, 1.0, limit)

    def rope_interleaved(x, cos, sin):
        return M.apply_rope_interleave(x, cos, sin)

    def flip_truncate(c):
        c["rope_scaling"] = dict(c["rope_scaling"], truncate=not c["rope_scaling"]["truncate"])

    def plain_rope_keep_factor(config, dim):
        inv, af = orig_rope_params(config, dim)
        return orig_rope_params(dict(config, rope_scaling=None), dim)[0], af

    def no_attention_factor(config, dim):
        return orig_rope_params(config, dim)[0], 1.0

    def yarn_unclamped_low(config, dim):  # floor(low) = -3 used as is (no max(low, 0))
        rs = config["rope_scaling"]
        base, f, L = config["rope_theta"], rs["factor"], rs["original_max_position_embeddings"]
        cd = lambda n: dim * math.log(L / (n * 2 * math.pi)) / (2 * math.log(base))
        low, high = math.floor(cd(rs["beta_fast"])), min(math.ceil(cd(rs["beta_slow"])), dim - 1)
        ramp = ((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low)).clamp(0, 1)
        pf = base ** (torch.arange(0, dim, 2).float() / dim)
        return (1 / (f * pf)) * ramp + (1 / pf) * (1 - ramp), orig_rope_params(config, dim)[1]

    def nibbles_swapped(blocks, scales):
        return orig_dequant(((blocks & 0x0F) << 4) | (blocks >> 4), scales)

    def scale_bias_128(blocks, scales):  # 2^(s-128): every expert weight halved
        return orig_dequant(blocks, scales) * np.float32(0.5)

    orig_load = M.load_checkpoint

    def load_without_router_bias(d):
        cfg, w = orig_load(d)
        return cfg, {k: (torch.zeros_like(v) if k.endswith("mlp.router.bias") else v) for k, v in w.items()}

    B, X, T = "gpt_oss_bf16", "gpt_oss_mxfp4", "gpt_oss_yarn_truncate_f32"
    return [
        (B, "attention sink omitted", None, {"sink_attention": no_sink}),
        (X, "attention sink omitted", None, {"sink_attention": no_sink}),
        (B, "rope interleaved pairs instead of half-split", None, {"apply_rope_half": rope_interleaved}),
        (B, "swiglu clamp omitted", None, {"gpt_oss_glu": glu_no_clamp}),
        (X, "swiglu clamp omitted", None, {"gpt_oss_glu": glu_no_clamp}),
        (B, "+1 on up omitted", None, {"gpt_oss_glu": glu_no_plus_one}),
        (B, "sliding window ignored (all layers full)", None, {"sink_attention": no_window}),
        (X, "sliding window ignored (all layers full)", None, {"sink_attention": no_window}),
        (B, "sliding window off by one (window+1 keys)", None, {"sink_attention": window_plus_one}),
        (B, "router: softmax over all experts, not the top-k", None, {"route_topk_softmax": softmax_all}),
        (B, "router bias omitted", None, {"load_checkpoint": load_without_router_bias}),
        (X, "router: softmax over all experts, not the top-k", None, {"route_topk_softmax": softmax_all}),
        (B, "yarn truncate flipped (false -> true)", flip_truncate, None),
        (T, "yarn truncate flipped (true -> false)", flip_truncate, None),
        (T, "yarn low not clamped at 0", None, {"rope_parameters": yarn_unclamped_low}),
        (B, "plain RoPE freqs (keep attention factor)", None, {"rope_parameters": plain_rope_keep_factor}),
        (B, "yarn attention_factor on cos/sin omitted", None, {"rope_parameters": no_attention_factor}),
        (B, "gate/up de-interleave swapped", None, {"gpt_oss_glu": glu_swapped}),
        (X, "gate/up de-interleave swapped", None, {"gpt_oss_glu": glu_swapped}),
        (B, "gate_up split as halves, not interleaved", None, {"gpt_oss_glu": glu_halves}),
        (B, "swiglu alpha 1.0 instead of 1.702", None, {"gpt_oss_glu": glu_silu}),
        (X, "mxfp4 nibbles swapped (hi = element 2j)", None, {"dequant_mxfp4": nibbles_swapped}),
        (X, "mxfp4 scale bias 128 instead of 127", None, {"dequant_mxfp4": scale_bias_128}),
    ]


# ---- Kimi-Linear -----------------------------------------------------------


def kda_chunk_naive(q, k, v, g, beta, scale, chunk=16):
    """The chunkwise KDA of fla ``naive_chunk_kda`` (ops/kda/naive.py), re-implemented: zero initial state,
    q, k [T, H, K] (l2-normalised), v [T, H, V], g [T, H, K] log-decays, beta [T, H]. The sequence is
    zero-padded to a multiple of ``chunk`` (padding has k = v = beta = 0, g = 0, so it changes nothing
    before it). Per chunk, with G = the inclusive cumsum of g inside the chunk and S0 the incoming state:
        L[i, j]  = <k_i exp(G_i - G_j), k_j>  (j < i),  A = (I + diag(beta) L)^-1 diag(beta)   (forward subst.)
        w = A (exp(G) * k),  u = A v,  v_new = u - w S0
        o_i = (scale q_i exp(G_i)) S0 + sum_{j <= i} <scale q_i exp(G_i - G_j), k_j> v_new_j
        S   = exp(G_last) * S0 + sum_j (exp(G_last - G_j) k_j) ⊗ v_new_j
    Returns (o [T, H, V], final state [H, K, V])."""
    T, H, K = q.shape
    V = v.shape[-1]
    pad = (-T) % chunk
    P = lambda x: torch.cat((x, torch.zeros(pad, *x.shape[1:], dtype=x.dtype)), 0)
    q, k, v, g, beta = (P(x.double()) for x in (q, k, v, g, beta))
    q = q * scale
    n = q.shape[0] // chunk
    S = torch.zeros(H, K, V, dtype=torch.float64)
    out = torch.zeros(n * chunk, H, V, dtype=torch.float64)
    for c in range(n):
        sl = slice(c * chunk, (c + 1) * chunk)
        qc, kc, vc, bc = (x[sl].transpose(0, 1) for x in (q, k, v, beta))  # [H, C, .]
        G = g[sl].transpose(0, 1).cumsum(1)  # [H, C, K]
        diff = (G[:, :, None, :] - G[:, None, :, :])  # [H, i, j, K]
        lower = torch.tril(torch.ones(chunk, chunk, dtype=torch.bool), -1)
        incl = torch.tril(torch.ones(chunk, chunk, dtype=torch.bool), 0)
        dec = torch.where(incl[None, :, :, None], diff, torch.full_like(diff, -math.inf)).exp()
        L = torch.einsum("hik,hijk,hjk->hij", kc, dec, kc) * lower
        # A = (I + diag(beta) L)^-1 diag(beta) by forward substitution, row by row
        Ainv = torch.zeros(H, chunk, chunk, dtype=torch.float64)
        for i in range(chunk):
            row = torch.zeros(H, chunk, dtype=torch.float64)
            row[:, i] = 1.0
            row = row - bc[:, i, None] * torch.einsum("hj,hjm->hm", L[:, i, :], Ainv)
            Ainv[:, i] = row
        A = Ainv * bc[:, None, :]
        wv = A @ (G.exp() * kc)
        u = A @ vc
        v_new = u - wv @ S
        Aqk = torch.einsum("hik,hijk,hjk->hij", qc, dec, kc) * incl
        o = (qc * G.exp()) @ S + Aqk @ v_new
        out[sl] = o.transpose(0, 1)
        Gl = G[:, -1:, :]  # [H, 1, K]
        S = Gl.transpose(1, 2).exp() * S + ((Gl - G).exp() * kc).transpose(1, 2) @ v_new
    return out[:T], S


def check_kda():
    torch.manual_seed(1234)
    for (T, H, K, V, chunk) in ((24, 4, 16, 16, 8), (37, 3, 16, 32, 16), (64, 2, 32, 16, 64)):
        q = M.l2norm_fla(torch.randn(T, H, K))
        k = M.l2norm_fla(torch.randn(T, H, K))
        v = torch.randn(T, H, V)
        g = M.kda_gate(torch.randn(T, H, K), torch.log(1 + 15 * torch.rand(H)).view(1, 1, H, 1),
                       -3.0 + torch.randn(H * K))
        beta = torch.sigmoid(torch.randn(T, H))
        ref = M.kda_recurrent(q, k, v, g, beta, K ** -0.5)
        got, _ = kda_chunk_naive(q, k, v, g, beta, K ** -0.5, chunk)
        err = (ref.double() - got).abs().max().item()
        assert err < 1e-5, (T, H, K, V, chunk, err)
    # the causal depthwise conv against torch's Conv1d (padding W-1, keep the first S outputs)
    x, w = torch.randn(19, 24), torch.randn(24, 1, 4)
    ref = torch.nn.functional.silu(torch.nn.functional.conv1d(x.T[None], w, padding=3, groups=24)[0, :, :19].T)
    err2 = (M.kda_short_conv(x, w) - ref).abs().max().item()
    assert err2 < 1e-5, err2
    print(f"KDA token-by-token recurrence == fla naive_chunk_kda (chunks 8/16/64, padded T): ok "
          f"(max err {err:.2e}); short conv == nn.Conv1d: ok")


def kimi_mutations():
    orig_route, orig_conv, orig_gate = M.kimi_route, M.kda_short_conv, M.kda_gate
    orig_rms = M.rms_norm

    def route_bias_in_weights(logits, bias, c):  # the remote code's in-place `scores_for_choice += bias`
        idx, w, info = orig_route(logits, bias, c)
        wb = (torch.sigmoid(logits) + bias).gather(1, idx)
        wb = wb / (wb.sum(-1, keepdim=True) + 1e-20)
        return idx, wb * c["routed_scaling_factor"], info

    def route_no_scale(logits, bias, c):
        return orig_route(logits, bias, dict(c, routed_scaling_factor=1.0))

    def conv_reversed(x, w):
        return orig_conv(x, w.flip(-1))

    def conv_none(x, w):
        return torch.nn.functional.silu(x)

    def gate_no_A(g, A_log, dt_bias, lb=None):
        return orig_gate(g, torch.zeros_like(A_log), dt_bias, lb)

    def gate_no_dt(g, A_log, dt_bias, lb=None):
        return orig_gate(g, A_log, torch.zeros_like(dt_bias), lb)

    def no_l2(x, eps=1e-6):
        return x

    def ng_silu(x, w, gate, eps):  # transformers' KimiLinearRMSNormGated fallback (silu)
        return M.rms_norm(x, w, eps) * torch.nn.functional.silu(gate)

    def ng_no_gate(x, w, gate, eps):
        return M.rms_norm(x, w, eps)

    def kv_norm_eps_rms(x, w, eps):  # kv_a_layernorm with rms_norm_eps (1e-5) instead of 1e-6
        return orig_rms(x, w, 1e-5 if eps == 1e-6 else eps)

    K = "kimi_linear_bf16"
    return [
        (K, "router: correction bias also in the weights (in-place)", None, {"kimi_route": route_bias_in_weights}),
        (K, "router: routed_scaling_factor omitted", None, {"kimi_route": route_no_scale}),
        (K, "shared expert omitted", lambda c: c.update(num_shared_experts=0), None),
        (K, "KDA conv taps reversed (first tap = current token)", None, {"kda_short_conv": conv_reversed}),
        (K, "KDA short conv skipped (SiLU only)", None, {"kda_short_conv": conv_none}),
        (K, "KDA gate without exp(A_log)", None, {"kda_gate": gate_no_A}),
        (K, "KDA gate without dt_bias", None, {"kda_gate": gate_no_dt}),
        (K, "q/k l2norm skipped", None, {"l2norm_fla": no_l2}),
        (K, "o_norm gate silu instead of sigmoid (HF fallback)", None, {"rms_norm_gated_sigmoid": ng_silu}),
        (K, "o_norm output gate omitted", None, {"rms_norm_gated_sigmoid": ng_no_gate}),
        (K, "kv_a_layernorm eps = rms_norm_eps (1e-5)", None, {"rms_norm": kv_norm_eps_rms}),
    ]


# ---- Kimi-K3 ---------------------------------------------------------------


def check_k3():
    """The packed-MXFP4 experts against the raw bytes of kimi_k3_mxfp4, and AttnRes against a
    second formulation (llama.cpp's res_mix: the bank and the current stream scored apart)."""
    d = os.path.join(FIX, "kimi_k3_mxfp4")
    raw = M.read_safetensors(os.path.join(d, "model.safetensors"))
    cfg, w = M.load_checkpoint(d)
    tc = cfg["text_config"]
    L, Im = tc["routed_expert_hidden_size"], tc["moe_intermediate_size"]
    n_checked = 0
    for proj, rows, cols in (("w1", Im, L), ("w3", Im, L), ("w2", L, Im)):
        key = f"{M.K3_PREFIX}model.layers.2.block_sparse_moe.experts.5.{proj}.weight"
        pdt, pshape, pdata = raw[key + "_packed"]
        sdt, sshape, sdata = raw[key + "_scale"]
        assert (pdt, pshape, sdt, sshape) == ("U8", [rows, cols // 2], "U8", [rows, cols // 32]), (key, pshape, sshape)
        assert key in w and list(w[key].shape) == [rows, cols] and key + "_packed" not in w
        pk = np.frombuffer(pdata, np.uint8).reshape(pshape)
        sc = np.frombuffer(sdata, np.uint8).reshape(sshape)
        for (r, c) in ((0, 0), (rows - 1, cols - 1), (3, 33 % cols), (7, 31), (1, 2)):
            byte = int(pk[r, c // 2])
            code = (byte >> 4) if c % 2 else (byte & 0xF)
            assert float(w[key][r, c]) == float(M.FP4_E2M1[code]) * 2.0 ** (int(sc[r, c // 32]) - 127), (key, r, c)
            n_checked += 1
    codes = np.concatenate([np.frombuffer(raw[k][2], np.uint8) for k in raw if k.endswith(".weight_packed")])
    hist = np.bincount(np.concatenate([codes & 0xF, codes >> 4]), minlength=16)
    assert (hist > 0).all(), hist
    # AttnRes: two formulations of one mix
    torch.manual_seed(7)
    S, D = 5, 64
    bank = [torch.randn(S, D) * s for s in (1.0, 3.0, 0.5)]
    cur, proj, nw = torch.randn(S, D), torch.randn(1, D) * 0.3, 0.9 + 0.2 * torch.rand(D)
    ref = M.attn_res_mix(cur, bank, proj, nw, 1e-5)
    stack = torch.stack(bank, 1)  # [S, n, D]
    sc_b = (stack * torch.rsqrt(stack.pow(2).mean(-1, keepdim=True) + 1e-5) * nw * proj[0]).sum(-1)
    sc_c = (cur * torch.rsqrt(cur.pow(2).mean(-1, keepdim=True) + 1e-5) * nw * proj[0]).sum(-1, keepdim=True)
    pr = torch.softmax(torch.cat((sc_b, sc_c), -1), -1)
    alt = (pr[..., :-1, None] * stack).sum(1) + pr[..., -1:] * cur
    err = (ref - alt).abs().max().item()
    assert err < 1e-5, err
    print(f"kimi-k3: packed MXFP4 == raw bytes ({n_checked} entries, all 16 codes used), "
          f"AttnRes == llama.cpp res_mix form (max err {err:.1e}): ok")


def k3_mutations():
    orig_mix, orig_situ, orig_route, orig_gate, orig_mxp = (M.attn_res_mix, M.situ_mul, M.kimi_route, M.kda_gate,
                                                            M.dequant_mxfp4_packed)
    orig_ng = M.rms_norm_gated_sigmoid

    def no_attn_res(cur, bank, proj, nw, eps):  # a plain residual stream
        return cur

    def res_raw_scores(cur, bank, proj, nw, eps):  # scores from the raw values (no RMSNorm)
        if not bank:
            return cur
        V = torch.stack(list(bank) + [cur], 0)
        p = torch.softmax((V * nw * proj.reshape(-1)).sum(-1), 0)
        return (p[..., None] * V).sum(0)

    def res_normed_values(cur, bank, proj, nw, eps):  # mixes the normed values instead of the raw ones
        if not bank:
            return cur
        V = torch.stack(list(bank) + [cur], 0)
        Vn = M.rms_norm(V, nw, eps)
        p = torch.softmax((Vn * proj.reshape(-1)).sum(-1), 0)
        return (p[..., None] * Vn).sum(0)

    def situ_as_swiglu(g, u, b1, b2):
        return torch.nn.functional.silu(g) * u

    def situ_no_linear_beta(g, u, b1, b2):
        return orig_situ(g, u, b1, None)

    def gate_softplus(g, A_log, dt_bias, lb=None):  # the Kimi-Linear gate instead of the lower-bound one
        return orig_gate(g, A_log, dt_bias, None)

    def route_bias_in_weights(logits, bias, c):
        idx, w, info = orig_route(logits, bias, c)
        wb = (torch.sigmoid(logits) + bias).gather(1, idx)
        wb = wb / (wb.sum(-1, keepdim=True) + 1e-20)
        return idx, wb * c["routed_scaling_factor"], info

    def nibbles_swapped(packed, scale):
        return orig_mxp(((packed & 0x0F) << 4) | (packed >> 4), scale)

    def scale_bias_128(packed, scale):
        return orig_mxp(packed, scale) * np.float32(0.5)

    def text(fn):
        return lambda c: fn(c["text_config"])

    B, X = "kimi_k3_bf16", "kimi_k3_mxfp4"
    return [
        (B, "AttnRes off (plain residual, no final mix)", None, {"attn_res_mix": no_attn_res}),
        (X, "AttnRes off (plain residual, no final mix)", None, {"attn_res_mix": no_attn_res}),
        (B, "AttnRes banks the mixed input, not the raw one", None, {"K3_BANK_RAW": False}),
        (B, "AttnRes scores without the RMSNorm", None, {"attn_res_mix": res_raw_scores}),
        (B, "AttnRes mixes the normed values", None, {"attn_res_mix": res_normed_values}),
        (B, "AttnRes block size 3 instead of 2", text(lambda t: t.update(attn_res_block_size=3)), None),
        (B, "SiTU replaced by SwiGLU", None, {"situ_mul": situ_as_swiglu}),
        (X, "SiTU replaced by SwiGLU", None, {"situ_mul": situ_as_swiglu}),
        (B, "SiTU without the up-branch tanh (linear_beta)", None, {"situ_mul": situ_no_linear_beta}),
        (B, "KDA softplus gate instead of gate_lower_bound", None, {"kda_gate": gate_softplus}),
        (B, "MLA output gate omitted", text(lambda t: t.update(mla_use_output_gate=False)), None),
        (B, "latent routed_expert_norm omitted", text(lambda t: t.update(latent_moe_use_norm=False)), None),
        (B, "shared experts omitted", text(lambda t: t.update(num_shared_experts=0)), None),
        (B, "router: correction bias also in the weights", None, {"kimi_route": route_bias_in_weights}),
        (B, "o_norm gate silu instead of sigmoid", None,
         {"rms_norm_gated_sigmoid": lambda x, w, g, eps: M.rms_norm(x, w, eps) * torch.nn.functional.silu(g)}),
        (X, "mxfp4 nibbles swapped (high = column 2j)", None, {"dequant_mxfp4_packed": nibbles_swapped}),
        (X, "mxfp4 scale bias 128 instead of 127", None, {"dequant_mxfp4_packed": scale_bias_128}),
    ]


# ---- DeepSeek-V4 -----------------------------------------------------------


def check_v4_blocks():
    """DeepSeek-V4 pieces against second formulations: Sinkhorn (scaling-vector form, doubly stochastic),
    interleaved RoPE (the release's view_as_complex form, and inverse = undo), YaRN inv_freq (the release's
    precompute_freqs_cis and ds4's theta-mixing form), the compressor (a token-by-token streaming state machine
    as in the release's decode path / ds4 compressor_decode_one), the grouped output projection (one
    block-diagonal matrix) and the attention masks (a per-query gather with the sink in the denominator, as ds4's
    layer_attention_prefix_batch_worker) on the fixture's CSA and HCA layers."""
    torch.manual_seed(4)
    # Sinkhorn: the same iteration written with row/column scaling vectors r, c (M = diag(r) K diag(c)), float64
    logits = torch.randn(50, 4, 4) * 2
    got = V4.sinkhorn(logits, 20, 1e-6).double()
    K = torch.softmax(logits.double(), -1) + 1e-6
    r, c = torch.ones(50, 4, 1, dtype=torch.float64), torch.ones(50, 1, 4, dtype=torch.float64)
    for it in range(20):
        if it > 0:
            r = r / ((r * K * c).sum(-1, keepdim=True) + 1e-6)
        c = c / ((r * K * c).sum(-2, keepdim=True) + 1e-6)
    alt = r * K * c
    e_sk = (got - alt).abs().max().item()
    assert e_sk < 1e-6, e_sk
    assert (got.sum(-2) - 1).abs().max() < 1e-5 and (got.sum(-1) - 1).abs().max() < 0.1, "not doubly stochastic"
    # interleaved RoPE == complex multiplication of (x[2i], x[2i+1]) pairs; inverse undoes it
    S, H, D, rd = 11, 3, 24, 8
    x = torch.randn(S, H, D)
    inv = 1.0 / (10000.0 ** (torch.arange(0, rd, 2).float() / rd))
    pos = torch.arange(S) * 3 + 1
    y = V4.rope_tail(x, pos, inv)
    f = torch.polar(torch.ones(S, rd // 2), pos.float()[:, None] * inv[None])
    yc = torch.view_as_real(torch.view_as_complex(x[..., -rd:].reshape(S, H, rd // 2, 2).contiguous()) * f[:, None])
    e_rope = max((y[..., -rd:] - yc.reshape(S, H, rd)).abs().max().item(), (y[..., :-rd] - x[..., :-rd]).abs().max().item())
    e_inv = (V4.rope_tail(y, pos, inv, inverse=True) - x).abs().max().item()
    assert e_rope < 1e-5 and e_inv < 1e-5, (e_rope, e_inv)
    # YaRN: the release's linear_ramp_factor / smooth form and ds4's per-pair theta mix, on both fixtures' configs
    cfg, _ = M.load_checkpoint(os.path.join(FIX, "deepseek_v4_bf16"))
    rs, rd = cfg["rope_scaling"], cfg["qk_rope_head_dim"]
    base, fac, L = float(cfg["compress_rope_theta"]), float(rs["factor"]), rs["original_max_position_embeddings"]
    cd = lambda n: rd * math.log(L / (n * 2 * math.pi)) / (2 * math.log(base))
    lo, hi = max(math.floor(cd(rs["beta_fast"])), 0), min(math.ceil(cd(rs["beta_slow"])), rd - 1)
    hi = hi + 0.001 if lo == hi else hi
    freqs = 1.0 / (base ** (torch.arange(0, rd, 2, dtype=torch.float32) / rd))
    smooth = 1 - torch.clamp((torch.arange(rd // 2, dtype=torch.float32) - lo) / (hi - lo), 0, 1)
    official = freqs / fac * (1 - smooth) + freqs * smooth
    ramp_mix = torch.tensor([1 - min(1.0, max(0.0, (i - lo) / max(0.001, hi - lo))) for i in range(rd // 2)])
    ds4 = freqs / fac * (1 - ramp_mix) + freqs * ramp_mix
    ours = V4.rope_inv_freq(cfg, True)
    e_yarn = max((ours - official).abs().max().item(), (ours - ds4).abs().max().item())
    assert e_yarn < 1e-7 and not torch.allclose(ours, freqs), e_yarn
    assert torch.equal(V4.rope_inv_freq(cfg, False), 1.0 / (10000.0 ** (torch.arange(0, rd, 2).float() / rd)))
    # compressor: windowed softmax pooling == token-by-token state machine (emit when (pos+1) % ratio == 0)
    e_comp = 0.0
    for ratio, overlap in ((4, True), (16, False), (4, False), (8, True)):
        Dh = 12
        cw = (2 if overlap else 1) * Dh
        T = 3 * ratio + ratio // 2 + 1
        kv, gate, ape = torch.randn(T, cw), torch.randn(T, cw) * 2, torch.randn(ratio, cw)
        ref = V4.compress_pool(kv, gate, ape, ratio, overlap, Dh)
        st_kv = torch.zeros((2 if overlap else 1) * ratio, cw)
        st_g = torch.full_like(st_kv, float("-inf"))
        outs = []
        for p in range(T):
            row = (ratio if overlap else 0) + p % ratio
            st_kv[row], st_g[row] = kv[p], gate[p] + ape[p % ratio]
            if (p + 1) % ratio:
                continue
            if overlap:  # previous window through channels [:D], current window through [D:]
                vk = torch.cat((st_kv[:ratio, :Dh], st_kv[ratio:, Dh:]), 0)
                vg = torch.cat((st_g[:ratio, :Dh], st_g[ratio:, Dh:]), 0)
                st_kv[:ratio], st_g[:ratio] = st_kv[ratio:].clone(), st_g[ratio:].clone()
            else:
                vk, vg = st_kv, st_g
            outs.append((vk * torch.softmax(vg, 0)).sum(0))
        e_comp = max(e_comp, (torch.stack(outs) - ref).abs().max().item())
    assert e_comp < 1e-5, e_comp
    # grouped output projection == one block-diagonal [G*R, H*D] matrix
    G, R, Hh, Dd = 2, 5, 4, 6
    o, wo_a, wo_b = torch.randn(7, Hh, Dd), torch.randn(G * R, Hh * Dd // G), torch.randn(9, G * R)
    bd = torch.block_diag(*[wo_a[g * R:(g + 1) * R] for g in range(G)])
    e_grp = (V4.grouped_out(o, wo_a, wo_b, G) - (o.reshape(7, -1) @ bd.t()) @ wo_b.t()).abs().max().item()
    assert e_grp < 1e-4, e_grp
    # attention: masked dense form (models) == per-query gather over raw window + allowed compressed rows
    e_att = 0.0
    for fx in ("deepseek_v4_bf16", "deepseek_v4_native"):
        cfg, w, toks, ref, greedy = load_fixture(fx)
        m = M.ReferenceModel(cfg, w)
        m.forward(toks)
        for layer in (1, 2):  # CSA, HCA
            xs = torch.randn(len(toks), cfg["hidden_size"])
            out = m.attention(layer, xs)
            tr = m.v4_trace[-1]
            c, p = cfg, f"layers.{layer}.attn."
            S, Hq, Dq, eps, ratio = len(toks), c["num_attention_heads"], c["head_dim"], c["rms_norm_eps"], m.ratios[layer]
            pos = torch.arange(S)
            qr = M.rms_norm(xs @ w[p + "wq_a.weight"].T, w[p + "q_norm.weight"], eps)
            q = V4.rope_tail(V4.rms_norm_plain((qr @ w[p + "wq_b.weight"].T).view(S, Hq, Dq), eps), pos, m.inv_comp)
            kv = V4.rope_tail(M.rms_norm(xs @ w[p + "wkv.weight"].T, w[p + "kv_norm.weight"], eps), pos, m.inv_comp)
            cp = p + "compressor."
            comp = V4.compressed_entries(xs, w[cp + "wkv.weight"], w[cp + "wgate.weight"], w[cp + "ape"],
                                         w[cp + "norm.weight"], ratio, m.kinds[layer] == "csa", Dq, m.inv_comp, eps)
            if m.kinds[layer] == "csa":
                sel, _ = m.indexer(layer, xs, qr, V4.visible_compressed(S, comp.shape[0], ratio))
            sinks = w[p + "attn_sink"]
            heads = torch.zeros(S, Hq, Dq)
            for t in range(S):
                rows = [kv[s] for s in range(max(0, t - c["sliding_window"] + 1), t + 1)]
                for e in range((t + 1) // ratio):
                    if m.kinds[layer] == "hca" or bool(sel[t, e]):
                        rows.append(comp[e])
                Kt = torch.stack(rows)
                for h in range(Hq):
                    sc = Kt @ q[t, h] * Dq ** -0.5
                    mx = torch.maximum(sc.max(), sinks[h])
                    wts = (sc - mx).exp()
                    heads[t, h] = (wts[:, None] * Kt).sum(0) / (wts.sum() + (sinks[h] - mx).exp())
            heads = V4.rope_tail(heads, pos, m.inv_comp, inverse=True)
            alt = V4.grouped_out(heads, w[p + "wo_a.weight"], w[p + "wo_b.weight"], c["o_groups"])
            e_att = max(e_att, (alt - out).abs().max().item())
    assert e_att < 1e-4, e_att
    print(f"deepseek_v4: sinkhorn == scaling-vector form ({e_sk:.1e}), rope == complex pairs ({e_rope:.1e}, inverse "
          f"{e_inv:.1e}), yarn == release/ds4 forms ({e_yarn:.1e}), compressor == streaming state machine "
          f"({e_comp:.1e}), grouped out == block-diagonal ({e_grp:.1e}), attention == per-query gather ({e_att:.1e}): ok")


def check_v4_native():
    """The release byte layouts in deepseek_v4_native against hand decoding: FP8 E4M3 + E8M0 block scales,
    FP4 E2M1 packed I8 (column 2j = low nibble) + E8M0 per 32, I64 tid2eid, F32 tensors, mtp.* skipped."""
    d = os.path.join(FIX, "deepseek_v4_native")
    raw = M.read_safetensors(os.path.join(d, "model.safetensors"))
    cfg, w = M.load_checkpoint(d)
    assert not [k for k in w if k.startswith("mtp.")] and [k for k in raw if k.startswith("mtp.")]
    assert not [k for k in w if k.endswith(".scale")]
    e8 = lambda b: 2.0 ** (int(b) - 127)
    n = 0
    for key in ("layers.1.attn.wq_b.weight", "layers.3.attn.wo_a.weight", "layers.2.ffn.shared_experts.w2.weight",
                "layers.1.attn.indexer.wq_b.weight"):
        dt, shape, data = raw[key]
        sdt, sshape, sdata = raw[key[:-7] + ".scale"]
        assert dt == "F8_E4M3" and sdt == "F8_E8M0" and sshape == [-(-shape[0] // 128), -(-shape[1] // 128)], key
        codes = np.frombuffer(data, np.uint8).reshape(shape)
        sc = np.frombuffer(sdata, np.uint8).reshape(sshape)
        for (r, c) in ((0, 0), (shape[0] - 1, shape[1] - 1), (shape[0] // 3, shape[1] // 2)):
            assert float(w[key][r, c]) == float(M.e4m3_table()[codes[r, c]]) * e8(sc[r // 128, c // 128]), (key, r, c)
            n += 1
    for key in ("layers.0.ffn.experts.3.w1.weight", "layers.3.ffn.experts.7.w2.weight"):
        dt, shape, data = raw[key]
        sdt, sshape, sdata = raw[key[:-7] + ".scale"]
        rows, cols = shape[0], 2 * shape[1]
        assert dt == "I8" and sdt == "F8_E8M0" and sshape == [rows, cols // 32], key
        assert list(w[key].shape) == [rows, cols]
        pk = np.frombuffer(data, np.uint8).reshape(shape)
        sc = np.frombuffer(sdata, np.uint8).reshape(sshape)
        for (r, c) in ((0, 0), (0, 1), (rows - 1, cols - 1), (5, 33 % cols), (2, cols - 2)):
            byte = int(pk[r, c // 2])
            code = (byte >> 4) if c % 2 else (byte & 0xF)
            assert float(w[key][r, c]) == float(M.FP4_E2M1[code]) * e8(sc[r, c // 32]), (key, r, c)
            n += 1
    for i in range(cfg["num_hidden_layers"]):
        key = f"layers.{i}.ffn.gate.tid2eid"
        if i < cfg["num_hash_layers"]:
            dt, shape, _ = raw[key]
            t = w[key]
            assert dt == "I64" and shape == [cfg["vocab_size"], cfg["num_experts_per_tok"]] and t.dtype == torch.int64
            assert int(t.min()) >= 0 and int(t.max()) < cfg["n_routed_experts"]
            assert all(len(set(row)) == len(row) for row in t.tolist())
            assert f"layers.{i}.ffn.gate.bias" not in raw
        else:
            assert key not in raw and raw[f"layers.{i}.ffn.gate.bias"][0] == "F32"
    f32 = sorted({k.split(".")[-1] for k, (dt, _, _) in raw.items() if dt == "F32"})
    assert f32 == ["ape", "attn_sink", "bias", "hc_attn_base", "hc_attn_fn", "hc_attn_scale", "hc_ffn_base",
                   "hc_ffn_fn", "hc_ffn_scale", "hc_head_base", "hc_head_fn", "hc_head_scale"], f32
    print(f"deepseek_v4_native: FP8/E8M0 and FP4/E8M0 == raw bytes ({n} entries), tid2eid I64, F32 set, mtp skipped: ok")


def v4_mutations():
    o = {k: getattr(V4, k) for k in ("sinkhorn", "hc_weights", "sink_attention_kv", "rope_tail", "rope_inv_freq",
                                      "compress_pool", "visible_compressed", "indexer_select", "route",
                                      "grouped_out", "dequant_fp4_e8m0", "dequant_fp8_e8m0", "compressed_pos")}

    def comb_softmax_only(logits, iters, eps):
        return torch.softmax(logits, -1) + eps

    def post_no_two(*a):
        pre, post, comb = o["hc_weights"](*a)
        return pre, post / 2, comb

    def pre_mean(*a):
        pre, post, comb = o["hc_weights"](*a)
        return torch.full_like(pre, 1.0 / pre.shape[-1]), post, comb

    def no_sink(q, keys, allowed, sinks, scale):
        return o["sink_attention_kv"](q, keys, allowed, torch.full_like(sinks, float("-inf")), scale)

    def rope_half(x, pos, inv, inverse=False):  # rotate_half pairs (j, j + rd/2) inside the tail
        rd = 2 * inv.shape[0]
        perm = torch.cat((torch.arange(0, rd, 2), torch.arange(1, rd, 2)))
        back = torch.argsort(perm)
        t = x[..., -rd:][..., back]  # read pairs (j, j+rd/2) as if they were adjacent
        return torch.cat((x[..., :-rd], o["rope_tail"](t, pos, inv, inverse)[..., perm]), -1)

    def rope_first_dims(x, pos, inv, inverse=False):
        rd = 2 * inv.shape[0]
        y = o["rope_tail"](torch.cat((x[..., rd:], x[..., :rd]), -1), pos, inv, inverse)
        return torch.cat((y[..., -rd:], y[..., :-rd]), -1)

    def no_overlap(kv, gate, ape, ratio, overlap, D):
        if overlap:
            return o["compress_pool"](kv[:, D:], gate[:, D:], ape[:, D:], ratio, False, D)
        return o["compress_pool"](kv, gate, ape, ratio, overlap, D)

    def early_visible(S, T, ratio):  # the entry of a window is visible from the window's first token on
        return torch.arange(T)[None, :] <= (torch.arange(S) // ratio)[:, None]

    def indexer_off(scores, causal, top_k):
        sel, margin = o["indexer_select"](scores, causal, top_k)
        return causal.clone(), margin

    def hash_as_topk(logits, bias, tid2eid, tokens, top_k, scoring, scaling):
        return o["route"](logits, torch.zeros(logits.shape[-1]) if bias is None else bias, None, tokens, top_k,
                          scoring, scaling)

    def no_bias(logits, bias, tid2eid, tokens, top_k, scoring, scaling):
        return o["route"](logits, None if bias is None else torch.zeros_like(bias), tid2eid, tokens, top_k,
                          scoring, scaling)

    def groups_interleaved(ov, wo_a, wo_b, G):  # head h in group h % G instead of h // (H/G)
        H = ov.shape[1]
        order = torch.cat([torch.arange(g, H, G) for g in range(G)])
        return o["grouped_out"](ov[:, order], wo_a, wo_b, G)

    def main_rope_everywhere(c, compressed):
        return o["rope_inv_freq"](c, False)

    def window_end_pos(n, ratio):
        return torch.arange(n) * ratio + ratio - 1

    def fp4_nibbles_swapped(packed, scale):
        p = np.asarray(packed).view(np.uint8)
        return o["dequant_fp4_e8m0"]((((p & 0x0F) << 4) | (p >> 4)).astype(np.uint8).view(np.int8), scale)

    def fp4_bias_128(packed, scale):
        return o["dequant_fp4_e8m0"](packed, scale) * np.float32(0.5)

    def fp8_bias_128(codes, scale, block=(128, 128)):
        return o["dequant_fp8_e8m0"](codes, scale, block) * np.float32(0.5)

    B, N = "deepseek_v4_bf16", "deepseek_v4_native"
    P = lambda **kw: {"V4." + k: v for k, v in kw.items()}
    return [
        (B, "mHC: comb not transposed (comb[k, j])", None, P(COMB_TRANSPOSED=False)),
        (N, "mHC: comb not transposed (comb[k, j])", None, P(COMB_TRANSPOSED=False)),
        (B, "mHC: 1 Sinkhorn iteration instead of 20", lambda c: c.update(hc_sinkhorn_iters=1), None),
        (B, "mHC: comb = softmax only (no Sinkhorn)", None, P(sinkhorn=comb_softmax_only)),
        (B, "mHC: post = sigmoid (without the factor 2)", None, P(hc_weights=post_no_two)),
        (B, "mHC: pre = 1/hc (plain mean of the streams)", None, P(hc_weights=pre_mean)),
        (B, "attention sink omitted", None, P(sink_attention_kv=no_sink)),
        (B, "sliding window 9 instead of 8", lambda c: c.update(sliding_window=9), None),
        (B, "sliding window ignored (all raw entries)", lambda c: c.update(sliding_window=10 ** 6), None),
        (B, "output rope slice not de-rotated", None, P(DEROTATE_OUTPUT=False)),
        (B, "q per-head RMSNorm skipped", None, P(q_head_norm=lambda q, eps: q)),
        (B, "RoPE pairs (j, j+rd/2) instead of interleaved", None, P(rope_tail=rope_half)),
        (B, "RoPE on the first rd dims instead of the last", None, P(rope_tail=rope_first_dims)),
        (B, "compressed layers with the sliding layers' RoPE", None, P(rope_inv_freq=main_rope_everywhere)),
        (B, "compressed layers without YaRN", lambda c: c.update(rope_scaling=None), None),
        (B, "compressed entry RoPE at the window's last token", None, P(compressed_pos=window_end_pos)),
        (B, "CSA overlap halves swapped", None, P(CSA_PREV_HALF_FIRST=False)),
        (B, "CSA without overlap (current window only)", None, P(compress_pool=no_overlap)),
        (B, "compressed entries visible before the window closes", None, P(visible_compressed=early_visible)),
        (B, "indexer ignored (every closed CSA entry attended)", None, P(indexer_select=indexer_off)),
        (N, "indexer ignored (every closed CSA entry attended)", None, P(indexer_select=indexer_off)),
        (B, "indexer without ReLU", None, P(indexer_act=lambda x: x)),
        (B, "hash layers routed by top-k instead of tid2eid", None, P(route=hash_as_topk)),
        (B, "router bias not added to the choice scores", None, P(route=no_bias)),
        (B, "router sigmoid instead of sqrt(softplus)", lambda c: c.update(scoring_func="sigmoid"), None),
        (B, "routed_scaling_factor omitted", lambda c: c.update(routed_scaling_factor=1.0), None),
        (B, "swiglu clamp omitted", lambda c: c.update(swiglu_limit=1e9), None),
        (N, "swiglu clamp omitted", lambda c: c.update(swiglu_limit=1e9), None),
        (B, "shared expert omitted", lambda c: c.update(n_shared_experts=0), None),
        (B, "grouped output: head h in group h % G", None, P(grouped_out=groups_interleaved)),
        (N, "FP4 nibbles swapped (high nibble = column 2j)", None, P(dequant_fp4_e8m0=fp4_nibbles_swapped)),
        (N, "FP4 E8M0 scale bias 128 instead of 127", None, P(dequant_fp4_e8m0=fp4_bias_128)),
        (N, "FP8 E8M0 block scale bias 128 instead of 127", None, P(dequant_fp8_e8m0=fp8_bias_128)),
    ]


def v4_qat_measurement():
    """The release's QAT round trips (V4.QAT_*; transformers does none): report, do not assert."""
    for fx in ("deepseek_v4_bf16", "deepseek_v4_native"):
        for desc, patch in (("(info) release FP8 round trip of the KV nope dims", {"V4.QAT_FP8_KV": True}),
                            ("(info) release Hadamard+FP4 round trip, indexer q/k", {"V4.QAT_FP4_INDEXER": True}),
                            ("(info) both", {"V4.QAT_FP8_KV": True, "V4.QAT_FP4_INDEXER": True})):
            d, g = mutated_diff(fx, None, patch)
            print(f"{fx:26s} {desc:52s} {d:12.4g} {g}")


# ---- GLM-5.3-Flash (glm5_next) ---------------------------------------------


def kpool_select_hf(scores_all, S, kp, topk, tail):
    """A transcription of transformers' vectorised Glm5NextTextIndexer (batch 1, no padding, no cache):
    pools over ceil(S / kp) slots, invalid slots -1, pool_valid = all tokens in range, keep = complete pools;
    candidates = pool_valid & visible(pool end); scores of the others = finfo.min; topk(min(topk // kp, P));
    selected invalid pools -> -1; tail = first_key + visible_count - visible_count % kp + [0, kp - 2] where
    offset < tail_count; scatter_add of the valid indices into a [S, S] count, mask = count != 0."""
    npools = (S + kp - 1) // kp
    pidx = torch.arange(npools * kp).view(npools, kp)
    gvalid = pidx < S
    pool_valid = gvalid.all(-1)
    pidx = pidx.masked_fill(~gvalid, -1)
    keep = pool_valid
    pidx, pool_valid = pidx[keep], pool_valid[keep]
    sc = scores_all[:, :pidx.shape[0]]
    visible = torch.arange(S)[None, :] <= torch.arange(S)[:, None]  # [q, kv]
    pend = pidx[:, -1].clamp(0, S - 1)
    cand = visible[:, pend] & pool_valid[None]
    sc = sc.masked_fill(~cand, torch.finfo(sc.dtype).min)
    k = min(topk // kp, sc.shape[-1])
    sel = sc.topk(k, dim=-1).indices
    sel_valid = cand.gather(-1, sel)
    tok = pidx[sel].flatten(-2).masked_fill(~sel_valid[..., None].expand(S, k, kp).flatten(-2), -1)
    if tail and kp > 1:
        vc = visible.long().sum(-1)
        tcount = vc.remainder(kp)
        offs = torch.arange(kp - 1)
        tidx = (vc - tcount)[:, None] + offs
        tvalid = (offs[None] < tcount[:, None]) & (tidx < S)
        tvalid &= visible.gather(-1, tidx.clamp(0, S - 1))
        tok = torch.cat((tok, tidx.masked_fill(~tvalid, -1)), -1)
    cnt = torch.zeros(S, S, dtype=torch.int32)
    cnt.scatter_add_(-1, tok.clamp(0, S - 1), (tok >= 0).to(torch.int32))
    return cnt != 0


def check_glm5():
    torch.manual_seed(5)
    n_cases = 0
    for S, kp, topk, tail in ((48, 4, 16, True), (48, 4, 16, False), (23, 4, 8, True), (3, 4, 16, True),
                              (37, 8, 16, True), (40, 1, 8, True), (64, 16, 32, True), (20, 4, 80, True)):
        P = S // kp
        scores = torch.randn(S, max(P, 1))[:, :P]
        ours, margin, n_vis, n_sel = G5.kpool_select(scores, S, kp, topk, tail)
        hf = kpool_select_hf(scores, S, kp, topk, tail)
        assert torch.equal(ours, hf), (S, kp, topk, tail)
        n_cases += 1
    # pooled keys: the padded form (ceil pools, -inf on out-of-range slots, softmax over the pool, nan_to_num)
    e_pool = 0.0
    for S, kp in ((48, 4), (30, 4), (17, 8)):
        Di = 12
        k, gate, ape = torch.randn(S, Di), torch.randn(S, Di) * 2, torch.randn(kp, Di)
        npools = (S + kp - 1) // kp
        idx = torch.arange(npools * kp).view(npools, kp)
        valid = idx < S
        lg = (gate[idx.clamp(max=S - 1)] + ape[None]).masked_fill(~valid[..., None], float("-inf"))
        pk = (torch.nan_to_num(lg.softmax(dim=1)) * k[idx.clamp(max=S - 1)]).sum(1)[valid.all(-1)]
        e_pool = max(e_pool, (pk - G5.pool_keys(k, gate, ape, kp)).abs().max().item())
    assert e_pool < 1e-5, e_pool
    # DSA attention on the fixture's layers: masked dense form == per-query gather of the selected keys
    cfg, w, toks, ref, greedy = load_fixture("glm5_next_bf16")
    m = M.ReferenceModel(cfg, w)
    m.forward(toks)
    c, S = m.c, len(toks)
    e_att = 0.0
    for i in [j for j, t in enumerate(m.kinds) if t == "deepseek_sparse_attention"]:
        xs = torch.randn(S, c["hidden_size"])
        out, allowed = m.attn_dsa(i, xs, None)
        p = G5.PREFIX + f"layers.{i}.self_attn."
        H, dn, dv, eps = c["num_attention_heads"], c["qk_nope_head_dim"], c["v_head_dim"], c["rms_norm_eps"]
        qr = M.rms_norm(xs @ w[p + "q_a_proj.weight"].T, w[p + "q_a_layernorm.weight"], eps)
        q = (qr @ w[p + "q_b_proj.weight"].T).view(S, H, dn)
        kv = (M.rms_norm(xs @ w[p + "kv_a_proj_with_mqa.weight"].T, w[p + "kv_a_layernorm.weight"], eps)
              @ w[p + "kv_b_proj.weight"].T).view(S, H, dn + dv)
        heads = torch.zeros(S, H, dv)
        for t in range(S):
            sel = allowed[t].nonzero().flatten()
            assert len(sel) > 0 and int(sel.max()) <= t
            for h in range(H):
                a = torch.softmax(kv[sel, h, :dn] @ q[t, h] / math.sqrt(dn), 0)
                heads[t, h] = a @ kv[sel, h, dn:]
        alt = heads.reshape(S, H * dv) @ w[p + "o_proj.weight"].T
        e_att = max(e_att, (alt - out).abs().max().item())
        assert int(allowed.sum(-1).max()) < S, "the indexer never drops anything"
    assert e_att < 1e-4, e_att
    # checkpoint: the MTP layer and the F32 set on disk; the reference does not see the MTP tensors
    d = os.path.join(FIX, "glm5_next_bf16")
    raw = M.read_safetensors(os.path.join(d, "model.safetensors"))
    n = cfg["text_config"]["num_hidden_layers"]
    mtp = [k for k in raw if k.startswith(G5.PREFIX + f"layers.{n}.")]
    assert mtp and not any(k in w for k in mtp), mtp
    f32 = sorted(k for k, (dt, _, _) in raw.items() if dt == "F32")
    assert all(k.endswith(G5.F32_SUFFIXES) for k in f32) and len(f32) > 0
    assert all(dt == "BF16" for k, (dt, _, _) in raw.items() if k not in f32)
    print(f"glm5_next: k-pool selection == transformers' vectorised form ({n_cases} cases), pooled keys == padded "
          f"form ({e_pool:.1e}), DSA attention == per-query gather ({e_att:.1e}), {len(mtp)} MTP tensors skipped: ok")


def g5_mutations():
    B = "glm5_next_bf16"
    P = lambda **kw: {"G5." + k: v for k, v in kw.items()}
    o_sel = G5.kpool_select

    def indexer_off(scores, S, kp, topk, tail):  # every complete visible pool (+ tail) attended
        return o_sel(scores, S, kp, 10 ** 9, tail)

    def one_pool_less(scores, S, kp, topk, tail):  # index_topk / kpool - 1 pools
        return o_sel(scores, S, kp, topk - kp, tail)

    def tail_self_only(scores, S, kp, topk, tail):  # the query token instead of its whole incomplete pool
        allowed, mg, nv, ns = o_sel(scores, S, kp, topk, False)
        return allowed | torch.eye(S, dtype=torch.bool), mg, nv, ns

    return [
        (B, "indexer ignored (every closed pool attended)", None, P(kpool_select=indexer_off)),
        (B, "one pool less selected (index_topk / kpool - 1)", None, P(kpool_select=one_pool_less)),
        (B, "tail: only the query token, not its incomplete pool", None, P(kpool_select=tail_self_only)),
        (B, "pooled key = plain mean (no gate / ape softmax)", None, P(POOL_SOFTMAX=False)),
        (B, "indexer k_norm as RMSNorm (no mean, no bias)", None,
         P(layer_norm=lambda x, wt, b, eps: M.rms_norm(x, wt, eps))),
        (B, "final head = stream 0 only (not the mean)", None, P(HEAD_MEAN=False)),
        (B, "mHC: comb not transposed (comb[k, j])", None, {"V4.COMB_TRANSPOSED": False}),
        (B, "KDA gate: softplus instead of gate_lower_bound", lambda c: c["text_config"]["linear_attn_config"].update(gate_lower_bound=None, safe_gate=False), None),
        (B, "DSA scale (dn + dv)^-0.5 instead of dn^-0.5", None,
         P(masked_attention=lambda q, k, v, a, s: o_att(q, k, v, a, (q.shape[-1] + v.shape[-1]) ** -0.5))),
        (B, "swiglu clamp omitted", lambda c: c["text_config"].update(swiglu_limit=1e9), None),
        (B, "routed_scaling_factor omitted", lambda c: c["text_config"].update(routed_scaling_factor=1.0), None),
    ]


o_att = G5.masked_attention


def check_v41():
    # 1. release engram layout and multipliers (published values, FAMILIES.md / vLLM)
    rel = {"engram_layer_ids": [1, 14], "engram_vocab_size": 16000000, "engram_max_ngram_size": 4, "engram_n_heads": 8}
    pr = V41.engram_primes(rel)
    flat = [x for row in pr for x in row]
    assert flat[:3] == [16000057, 16000079, 16000081] and flat[-3:] == [16000877, 16000879, 16000889], flat
    assert len(set(flat)) == 48 and [sum(r) for r in pr] == [384006168, 384016682], [sum(r) for r in pr]
    mu = V41.engram_multipliers(rel, 99092)
    assert mu[0] == [76632096046245, 4839876093313, 35959672319349, 73987337458391], mu[0]
    assert mu[1] == [67716810739261, 51510806800915, 30921347202721, 82619226485591], mu[1]
    # 2. the fixture: tokenizer map, hash rows (vectorised int64 transcription of DeepseekV41NgramHashState)
    d = os.path.join(FIX, "deepseek_v41_native")
    cfg, w, toks, ref, greedy = load_fixture("deepseek_v41_native")
    tc = cfg["text_config"]
    tok = V41.load_tokenizer(d)
    lookup, n = V41.compressed_token_map(tok)
    assert n == tc["engram_compressed_vocab_size"] and w[V41.TOKEN_MAP].tolist() == lookup
    vid = tok["model"]["vocab"]
    bl = lambda text: "".join(V41.bytes_to_unicode()[b] for b in text.encode())
    same = lambda *ts: len({lookup[vid[bl(t)]] for t in ts}) == 1
    assert same("A", "a", "\uff21") and same("the", " THE") and same(" ", "\n\n", "\t\t") and same("café", "cafe")
    assert same("\ufb01", "fi") and not same("e", "\u0301")
    hi = [vid[V41.bytes_to_unicode()[b]] for b in (0xC3, 0xA9, 0xCC)]
    assert len({lookup[i] for i in hi}) == 3 and all("\ufffd" in V41.decode_one(tok, i) for i in hi)
    h = V41.EngramHash(tc, lookup)
    seq = toks + greedy
    P = torch.arange(len(seq))
    cmp = torch.tensor([lookup[t] for t in seq])
    for li in range(len(tc["engram_layer_ids"])):
        ts, blocked = [], torch.zeros(len(seq), dtype=torch.bool)
        for s_ in range(tc["engram_max_ngram_size"]):
            src = cmp[(P - s_).clamp_min(0)]
            blocked = blocked | (P < s_)
            ts.append(torch.where(blocked, torch.full_like(src, h.pad), src))
        prod = torch.stack(ts, -1) * torch.tensor(h.mult[li])
        roll, cols = prod[:, 0], []
        pri = torch.tensor(h.primes[li]).view(tc["engram_max_ngram_size"] - 1, -1)
        for k in range(1, tc["engram_max_ngram_size"]):
            roll = torch.bitwise_xor(roll, prod[:, k])
            cols.append(roll[:, None] % pri[k - 1])
        vec = torch.cat(cols, -1) + torch.tensor(h.offsets[li])
        loop = torch.tensor([h.rows(li, seq, p) for p in range(len(seq))])
        assert torch.equal(vec, loop), li
    # 3. round trips against brute force
    g = torch.Generator().manual_seed(5)
    x = torch.randn(4000, generator=g) * 3
    x = torch.cat((x, torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -0.25, -2.5, 0.0, 6.0])))
    grid = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
    a = x.clamp(-6, 6).abs()
    dist = (a[:, None] - grid).abs()
    best = dist.min(-1, keepdim=True).values
    cand = (dist == best)
    code = torch.where(cand[:, ::2].any(-1) & (cand.sum(-1) > 1), (cand & (torch.arange(8) % 2 == 0)).float().argmax(-1),
                       cand.float().argmax(-1))
    assert torch.equal(V41.to_e2m1(x.clamp(-6, 6)).abs(), grid[code])
    t = torch.rand(3000, generator=g) * 10 ** torch.randint(-30, 10, (3000,), generator=g).float()
    t = torch.cat((t, torch.tensor([1.0, 0.5, 2.0 ** -126, 3.0])))
    assert torch.equal(V41.pow2_ceil(t), torch.exp2(torch.ceil(torch.log2(t.double()))).float())
    assert torch.equal(V41.to_e4m3(torch.tensor([448.0, -0.0, 0.0013])), torch.tensor([448.0, -0.0, 0.001953125]))
    # 4. release byte layout of the fixture
    raw = M.read_safetensors(os.path.join(d, "model.safetensors"))
    dt = {k: v[0] for k, v in raw.items()}
    assert not any(k.startswith("model.") for k in raw) and {"embed.weight", "head.weight", "norm.weight"} <= set(raw)
    assert dt["layers.0.attn.wq_b.weight"] == "F8_E4M3" and raw["layers.0.attn.wq_b.scale"][1] == [8, 1]
    assert dt["layers.0.ffn.experts.0.w1.weight"] == "I8" and raw["layers.0.ffn.experts.0.w1.scale"][1] == [32, 2]
    for L in tc["engram_layer_ids"]:
        e = f"layers.{L}.engram."
        assert dt[e + "embed.weight"] == "F8_E4M3" and dt[e + "embed.scale"] == "F8_E8M0"
        assert raw[e + "embed.scale"][1] == [raw[e + "embed.weight"][1][0], tc["engram_head_dim"] // 32]
        assert dt[e + "wkv.weight"] == "F8_E4M3" and dt[e + "q_weight"] == "BF16"
    assert "layers.6.attn.compressor.wgate.weight" not in raw and "layers.2.attn.compressor.wgate.weight" in raw
    assert "layers.3.attn.compressor.wkv.weight" not in raw and "layers.8.attn.indexer.wk.weight" not in raw
    skipped = [k for k in raw if k.startswith(("mtp.", "vision."))]
    assert skipped and not any(k in w for k in skipped)
    # 5. incremental (one token at a time, caches) == batched, with and without the round trips
    m = M.ReferenceModel(cfg, w)
    inc = V41.incremental_vs_batched(m, toks)
    assert inc <= V41.INCREMENTAL_TOL, inc
    V41.QAT = False
    try:
        inc0 = V41.incremental_vs_batched(m, toks)
        moved = float((m.forward(toks) - ref).abs().max())
    finally:
        V41.QAT = True
    print(f"deepseek_v41: release engram layout/multipliers, hash rows, tokenizer map, FP8/FP4 round trips, byte "
          f"layout: ok; incremental vs batched max|dlogit| {inc:.2e} (round trips off: {inc0:.2e}); "
          f"round trips off move the logits by {moved:.3g}")


if __name__ == "__main__":
    t0 = time.time()
    check_formats()
    check_interleave()
    check_mla_absorbed("deepseek_v3_f32", 1)
    check_mla_absorbed("deepseek_v3_yarn_f32", 1)
    check_mla_absorbed("deepseek_v3_noqlora_f32", 2)
    check_mxfp4()
    check_sink_attention_vs_openai()
    check_yarn_vs_openai()
    check_kda()
    check_k3()
    check_v4_blocks()
    check_v4_native()
    check_glm5()
    check_v41()
    check_fixtures()
    if "--mutations" in sys.argv[1:]:
        run_mutations()
    else:
        print("mutation table skipped (slow, ~50 s of CPU): run with --mutations")
    print(f"selftest: all checks passed in {time.time() - t0:.1f} s")
