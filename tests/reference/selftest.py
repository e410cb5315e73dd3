#!/usr/bin/python3
"""Self-checks of the reference and of the fixtures' power to catch mistakes.

    /usr/bin/python3 tests/reference/selftest.py

1. number formats: E4M3 encoder vs brute force, bf16 rounding vs torch.
2. DeepSeek interleaved RoPE == rotating (x[2i], x[2i+1]) pairs as complex numbers
   (the original DeepSeek `apply_rotary_emb` with view_as_complex).
3. MLA in weight-absorbed form (attention over the kv_lora latent, as an
   inference engine would do it) == the naive HF form used by models.py.
4. every fixture recomputed from its files matches logits.f32 / greedy.txt.
5. mutation sensitivity: each plausible implementation mistake is injected and
   the max |logit difference| vs the fixture is printed (a fixture "catches" a
   mistake when that difference is far above float noise).
"""

from __future__ import annotations

import copy
import math
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import models as M  # noqa: E402

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
    cfg, w, toks, ref, greedy = load_fixture(name)
    cfg = copy.deepcopy(cfg)
    if cfg_mut:
        cfg_mut(cfg)
    saved = {}
    if patch:
        for k, v in patch.items():
            saved[k] = getattr(M, k)
            setattr(M, k, v)
    try:
        m = M.ReferenceModel(cfg, w)
        lg = m.forward(toks)
        g = m.greedy(toks, 16)
    finally:
        for k, v in saved.items():
            setattr(M, k, v)
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
    for name, desc, cm, patch in cases:
        d, gchg = mutated_diff(name, cm, patch)
        print(f"{name:26s} {desc:52s} {d:12.4g} {gchg}")


if __name__ == "__main__":
    check_formats()
    check_interleave()
    check_mla_absorbed("deepseek_v3_f32", 1)
    check_mla_absorbed("deepseek_v3_yarn_f32", 1)
    check_mla_absorbed("deepseek_v3_noqlora_f32", 2)
    check_fixtures()
    run_mutations()
