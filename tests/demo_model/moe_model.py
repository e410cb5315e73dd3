"""Batched trainable DeepSeek-V3 module computing the same function as ReferenceModel.

tests/reference/models.py's ReferenceModel is the specification (one sequence, per-expert
loop, f32). This module evaluates the identical math on a [B, S] batch, with the routed
experts of a layer stacked into [E, I, H] tensors and run as one padded bmm. It reuses the
reference's RMSNorm / RoPE helpers so the formulas cannot drift. train.py checks the logits
of both on the saved bf16 weights.

Routing (noaux_tc, as route_sigmoid_group): s = sigmoid(x W_gate^T); choice = s + bias;
group score = sum of the top-2 choices per group; keep topk_group groups (others -inf);
top-k of choice; weights = s[idx] (unbiased), / (sum + 1e-20) if norm_topk_prob,
* routed_scaling_factor. The bias is a buffer: it only changes the selection and is
updated by the auxiliary-loss-free balancing rule in train.py, not by gradients.
"""

from __future__ import annotations

import math
import os
import sys
from typing import Dict, List, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import models as ref  # noqa: E402


def _lin(out_f: int, in_f: int, std: float) -> nn.Parameter:
    return nn.Parameter(torch.randn(out_f, in_f) * std)


def linear(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """x @ w^T as a 1x1 convolution: Debian's torch runs F.linear on the netlib reference
    BLAS (~4 GFLOPS) but convolutions on oneDNN (3-4x faster, forward and backward)."""
    y = F.conv2d(x.reshape(-1, x.shape[-1], 1, 1), w[:, :, None, None])
    return y.reshape(*x.shape[:-1], w.shape[0])


def grouped_linear(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """x [C, G, in], w [G, out, in] -> [C, G, out]: per-group x @ w^T as a grouped 1x1 conv."""
    C, G, n_in = x.shape
    y = F.conv2d(x.reshape(C, G * n_in, 1, 1), w.reshape(-1, n_in, 1, 1), groups=G)
    return y.reshape(C, G, w.shape[1])


class MoE(nn.Module):
    """Thread-compatible: routed experts + shared expert of one DeepSeek-V3 layer."""

    def __init__(self, c: dict, std: float, out_std: float):
        super().__init__()
        H, I, E = c["hidden_size"], c["moe_intermediate_size"], c["n_routed_experts"]
        self.c = c
        self.gate = _lin(E, H, std)
        self.register_buffer("bias", torch.zeros(E))
        self.wg = nn.Parameter(torch.randn(E, I, H) * std)
        self.wu = nn.Parameter(torch.randn(E, I, H) * std)
        self.wd = nn.Parameter(torch.randn(E, H, I) * out_std)
        Is = I * c["n_shared_experts"]
        self.sg, self.su, self.sd = _lin(Is, H, std), _lin(Is, H, std), _lin(H, Is, out_std)

    def route(self, x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x [T, H] -> (idx [T, K], weights [T, K], sigmoid scores [T, E])."""
        c = self.c
        T, E = x.shape[0], c["n_routed_experts"]
        ng, kg, k = c["n_group"], c["topk_group"], c["num_experts_per_tok"]
        s = torch.sigmoid(linear(x, self.gate))
        choice = (s + self.bias[None, :]).detach()
        gscore = choice.view(T, ng, E // ng).topk(2, dim=-1)[0].sum(-1)
        gkeep = torch.zeros_like(gscore, dtype=torch.bool)
        gkeep.scatter_(1, gscore.topk(kg, dim=-1)[1], True)
        emask = gkeep[:, :, None].expand(T, ng, E // ng).reshape(T, E)
        idx = choice.masked_fill(~emask, float("-inf")).topk(k, dim=-1)[1]
        w = s.gather(1, idx)
        if c["norm_topk_prob"]:
            w = w / (w.sum(-1, keepdim=True) + 1e-20)
        return idx, w * c["routed_scaling_factor"], s

    def forward(self, x: torch.Tensor):
        """x [T, H] -> (out [T, H], idx [T, K], scores [T, E])."""
        T, H = x.shape
        E = self.c["n_routed_experts"]
        idx, w, s = self.route(x)
        K = idx.shape[1]
        e_flat = idx.reshape(-1)
        order = torch.argsort(e_flat)
        e_sorted = e_flat[order]
        tok_sorted = order // K
        counts = torch.bincount(e_flat, minlength=E)
        starts = torch.cumsum(counts, 0) - counts
        pos = torch.arange(T * K) - starts[e_sorted]
        cap = int(counts.max())
        buf = x.new_zeros(cap, E, H)  # slot-major so the experts form conv groups
        buf[pos, e_sorted] = x[tok_sorted]
        h = F.silu(grouped_linear(buf, self.wg)) * grouped_linear(buf, self.wu)
        y = grouped_linear(h, self.wd)[pos, e_sorted] * w.reshape(-1)[order][:, None]
        out = x.new_zeros(T, H).index_add(0, tok_sorted, y)
        shared = linear(F.silu(linear(x, self.sg)) * linear(x, self.su), self.sd)
        return out + shared, idx, s


class Layer(nn.Module):
    """Thread-compatible: one decoder layer (MLA attention + dense MLP or MoE)."""

    def __init__(self, c: dict, moe: bool, std: float, out_std: float):
        super().__init__()
        H, nh = c["hidden_size"], c["num_attention_heads"]
        dn, dr, dv, r, qr = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"], c["kv_lora_rank"], c["q_lora_rank"]
        self.c = c
        self.ln1 = nn.Parameter(torch.ones(H))
        self.ln2 = nn.Parameter(torch.ones(H))
        self.q_a = _lin(qr, H, std)
        self.q_a_ln = nn.Parameter(torch.ones(qr))
        self.q_b = _lin(nh * (dn + dr), qr, std)
        self.kv_a = _lin(r + dr, H, std)
        self.kv_a_ln = nn.Parameter(torch.ones(r))
        self.kv_b = _lin(nh * (dn + dv), r, std)
        self.o = _lin(H, nh * dv, out_std)
        self.moe = MoE(c, std, out_std) if moe else None
        if not moe:
            I = c["intermediate_size"]
            self.mg, self.mu, self.md = _lin(I, H, std), _lin(I, H, std), _lin(H, I, out_std)

    def attn(self, x, cos, sin, mask):
        c = self.c
        B, S, _ = x.shape
        nh = c["num_attention_heads"]
        dn, dr, dv, r = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"], c["kv_lora_rank"]
        q = linear(ref.rms_norm(linear(x, self.q_a), self.q_a_ln, 1e-6), self.q_b)
        q = q.view(B, S, nh, dn + dr).transpose(1, 2)  # [B, nh, S, dn+dr]
        ckv = linear(x, self.kv_a)
        kv = linear(ref.rms_norm(ckv[..., :r], self.kv_a_ln, 1e-6), self.kv_b)
        kv = kv.view(B, S, nh, dn + dv).transpose(1, 2)
        k_rot = ref.apply_rope_interleave(ckv[..., r:].view(B, 1, S, dr), cos, sin).expand(B, nh, S, dr)
        qs = torch.cat((q[..., :dn], ref.apply_rope_interleave(q[..., dn:], cos, sin)), dim=-1)
        ks = torch.cat((kv[..., :dn], k_rot), dim=-1)
        # Both attention products as grouped convolutions over the B*nh (batch, head) groups.
        G = B * nh
        qg = qs.reshape(G, S, dn + dr).transpose(0, 1)  # [S, G, d]
        scores = grouped_linear(qg, ks.reshape(G, S, dn + dr)).transpose(0, 1)  # [G, Sq, Sk]
        scores = scores.reshape(B, nh, S, S) * (dn + dr) ** -0.5
        p = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
        vt = kv[..., dn:].reshape(G, S, dv).transpose(1, 2)  # [G, dv, Sk]
        o = grouped_linear(p.reshape(G, S, S).transpose(0, 1), vt)  # [Sq, G, dv]
        o = o.reshape(S, B, nh, dv).permute(1, 0, 2, 3).reshape(B, S, nh * dv)
        return linear(o, self.o)

    def forward(self, h, cos, sin, mask):
        eps = self.c["rms_norm_eps"]
        h = h + self.attn(ref.rms_norm(h, self.ln1, eps), cos, sin, mask)
        x = ref.rms_norm(h, self.ln2, eps)
        if self.moe is None:
            return h + linear(F.silu(linear(x, self.mg)) * linear(x, self.mu), self.md), None
        B, S, H = x.shape
        out, idx, s = self.moe(x.reshape(B * S, H))
        return h + out.view(B, S, H), (idx.view(B, S, -1), s.view(B, S, -1))


class DeepseekV3LM(nn.Module):
    """Thread-compatible: batched DeepSeek-V3 causal LM; forward(ids [B,S]) -> (logits, routing)."""

    def __init__(self, c: dict):
        super().__init__()
        self.c = c
        H, V, L = c["hidden_size"], c["vocab_size"], c["num_hidden_layers"]
        std = c["initializer_range"]
        out_std = std / math.sqrt(2 * L)
        self.embed = nn.Parameter(torch.randn(V, H) * std)
        self.layers = nn.ModuleList(Layer(c, i >= c["first_k_dense_replace"], std, out_std) for i in range(L))
        self.norm = nn.Parameter(torch.ones(H))
        self.lm_head = _lin(V, H, std)
        inv_freq, factor = ref.rope_parameters(c, c["qk_rope_head_dim"])
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.attn_factor = factor

    def forward(self, ids: torch.Tensor):
        S = ids.shape[1]
        cos, sin = ref.rope_cos_sin(self.inv_freq, self.attn_factor, S)
        mask = torch.triu(torch.ones(S, S, dtype=torch.bool), diagonal=1)
        h = self.embed[ids]
        routing = []
        for layer in self.layers:
            h, r = layer(h, cos, sin, mask)
            if r is not None:
                routing.append(r)
        return linear(ref.rms_norm(h, self.norm, self.c["rms_norm_eps"]), self.lm_head), routing

    # -- HF checkpoint names --------------------------------------------------
    def hf_items(self) -> List[Tuple[str, torch.Tensor, str]]:
        """(HF name, module tensor or expert slice, kind) in checkpoint order."""
        out = [("model.embed_tokens.weight", self.embed)]
        for i, l in enumerate(self.layers):
            p = f"model.layers.{i}."
            a = p + "self_attn."
            out += [(p + "input_layernorm.weight", l.ln1), (a + "q_a_proj.weight", l.q_a),
                    (a + "q_a_layernorm.weight", l.q_a_ln), (a + "q_b_proj.weight", l.q_b),
                    (a + "kv_a_proj_with_mqa.weight", l.kv_a), (a + "kv_a_layernorm.weight", l.kv_a_ln),
                    (a + "kv_b_proj.weight", l.kv_b), (a + "o_proj.weight", l.o),
                    (p + "post_attention_layernorm.weight", l.ln2)]
            if l.moe is None:
                out += [(p + "mlp.gate_proj.weight", l.mg), (p + "mlp.up_proj.weight", l.mu),
                        (p + "mlp.down_proj.weight", l.md)]
                continue
            m = l.moe
            out += [(p + "mlp.gate.weight", m.gate), (p + "mlp.gate.e_score_correction_bias", m.bias)]
            for e in range(self.c["n_routed_experts"]):
                ep = f"{p}mlp.experts.{e}."
                out += [(ep + "gate_proj.weight", m.wg[e]), (ep + "up_proj.weight", m.wu[e]),
                        (ep + "down_proj.weight", m.wd[e])]
            sp = p + "mlp.shared_experts."
            out += [(sp + "gate_proj.weight", m.sg), (sp + "up_proj.weight", m.su), (sp + "down_proj.weight", m.sd)]
        out += [("model.norm.weight", self.norm), ("lm_head.weight", self.lm_head)]
        return out

    def hf_state(self) -> Dict[str, torch.Tensor]:
        return {n: t.detach().clone().float() for n, t in self.hf_items()}

    @torch.no_grad()
    def load_hf_state(self, w: Dict[str, torch.Tensor]):
        names = [n for n, _ in self.hf_items()]
        assert set(names) == set(w), f"tensor names differ: {sorted(set(names) ^ set(w))[:5]}"
        for n, t in self.hf_items():
            t.copy_(w[n])
