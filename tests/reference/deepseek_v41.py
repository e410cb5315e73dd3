"""Independent plain-PyTorch reference for DeepSeek-V4.1 Flash (``model_type: "deepseek_v41"``, text model under
``text_config``).

Specification: huggingface/transformers ``src/transformers/models/deepseek_v41/modeling_deepseek_v41.py`` and
``configuration_deepseek_v41.py`` (read at commit 0a2080b4); the engram hash from vLLM
``vllm/models/deepseek_v4_1/common/engram.py`` (identical to transformers' ``build_compressed_token_map``,
``compute_hash_multipliers``, ``EngramLayout`` and ``DeepseekV41NgramHashState``). Not written from WARP's C++.
Shared math is reused from ``deepseek_v4.py`` (mHC site + Sinkhorn, interleaved tail RoPE, sink attention,
grouped output, sqrt-softplus routing, clamped SwiGLU, E8M0 / FP8 / FP4 codecs).

What V4.1 changes against V4 (each checked in the transformers source; the function named is where):

* ``DeepseekV41Attention.__init__`` / ``DeepseekV41TextConfig.__post_init__``: ``compress_ratios[i]`` says which
  compressed cache layer i READS (0 = window only, 2 = pooled, 1 = per token); only ``kv_source_layer_ids``
  own a ``DeepseekV41Compressor`` (ratio 2: ``softmax(wgate x)``-gated pooling of closed groups of 2, no ``ape``,
  no overlap; ratio 1: ``norm(wkv x)`` per token, no gate), other compressed layers read the compressed cache of
  the nearest source at or before them (``shared["compress_kv"]``, cache path).
* ``DeepseekV41Indexer``: only ``index_source_layer_ids`` score; keys are ``k_norm(wk(latent))`` of the source's
  pre-RoPE compressor latent (``owns_k``), RoPE'd at the group positions and FP4 round-tripped; later index
  sources score with their own ``wq_b`` / ``weights_proj`` against the source's keys; the layers in between
  reuse the last ``topk_bias``. ``select_candidate_blocks``: the ``candidate_source_layer_id`` layer publishes a
  mask of its ``candidate_topk_blocks`` best blocks of ``candidate_block_size`` compressed positions (block score
  = max, the query's newest block pinned); every later index source scores only inside it.
* RoPE (``DeepseekV41TextConfig.__post_init__``, ``DeepseekV41RotaryEmbedding``): ``main`` = plain rope_theta for
  ratio-0 layers; ``compress`` = compress_rope_theta + YaRN with attention_factor 1.0 for every layer with
  ratio > 0 (its q, window KV, compressed entries and indexer q/k).
* ``DeepseekV41DecoderLayer.forward`` / ``DeepseekV41TextModel.forward``: single-pass hyper-connections: a site's
  ``pre`` is consumed by the NEXT sublayer (attention collapses with the previous layer's FFN ``pre``, the first
  layer with a one-hot on stream 0; the FFN with the attention site's ``pre``); no ``hc_head``: the final
  collapse uses the last FFN ``pre``; comb applied as comb^T . residual. The engram runs first in its layers.
* ``DeepseekV41TopKRouter``: scores = sqrt(softplus(logits / gate_temp)); top-k of scores + bias; weights =
  scores / (sum + 1e-20) * routed_scaling_factor; no hash layers (no ``tid2eid``); ``bias_vl`` only for image
  tokens (unused). ``DeepseekV41Expert``: up clamped +-swiglu_limit, gate clamped above, the routing weight
  multiplies silu(gate)*up before ``w2``; one shared expert (same clamp).
* RMSNorm eps: ``config.rms_norm_eps`` everywhere (release 1e-20), also in the weightless mHC norm and the
  engram gate; there is NO per-head q RMSNorm in V4.1's attention (V4 had one).
* Quantisation round trips that transformers applies even on unquantised runs (``QAT = True`` follows them):
  ``_fake_quant_fp8_block`` on the window KV of every layer (block 32, UE8M0, after RoPE, RoPE tail included);
  ``_fake_quant_fp4_block(.., 16, e4m3_scales=True)`` on the RoPE'd compressed KV; ``_fake_quant_fp4_block(.., 32)``
  on the indexer keys and queries (after RoPE). No Hadamard rotation (V4's release had one).
* ``DeepseekV41Engram``: rows = E4M3 codes x 2^(scale[row, j/32] - 127); ``wkv`` -> hc keys + 1 value; per stream
  c: d = sum(h_c * q_w[c] * k_w[c] * k_c) * rsqrt(mean h_c^2 + eps) * rsqrt(mean k_c^2 + eps) / sqrt(D);
  g = sigmoid(sign(d) sqrt(max(|d|, 1e-6))); h_c += g v. Added to all hc streams before that layer's mHC site.

Where the sources disagree (followed: transformers' modeling code; vLLM for the engram hash):

1. Shared caches without a cache object: transformers' ``use_cache=False`` branch CONCATENATES every source's
   compressed KV and indexer keys into one ``shared`` tensor (``torch.cat([shared["compress_kv"], rotated])``),
   so a reader after a second source would also see the first source's entries; the cache branch (the default,
   ``use_cache`` True) replaces them with the running cache of the source (``shared["compress_kv"] =
   cache_layer.compressed_kv["compressor"]``). The config docstring ("the shared compressed-KV ... for their
   group (layers up to the next source)"), FAMILIES.md and vLLM say "nearest source"; this reference follows the
   cache branch.
2. Pad key: transformers reads ``engram_pad_id``; the release config and vLLM spell it ``engram_pad_token_id``.
   Both are accepted (``engram_pad_id`` first).
3. Engram rows: transformers' ``DeepseekV41EngramEmbedding`` multiplies the per-row / per-32-column E8M0 scales only
   when the table is loaded as float8 ("loaded in a float dtype ... the scales are unused"); vLLM, ds4 and colibri
   always multiply. The reference dequantises code x scale (what the float8 path computes).
4. Dtypes: transformers says "the norms and the ratio-2 compressor gate ship BF16" (``_keep_in_fp32_modules_strict``);
   FAMILIES.md says norms F32. The fixture stores norms BF16 and the loader accepts either.
5. colibri keeps the window / compressed KV and indexer q/k in f32 (no round trips); transformers quantises
   them. Followed: transformers (``QAT``; selftest measures the effect).
6. The FP8 tile of the dense weights is not named by the modeling code; the loader works it out from the shapes
   (weight [R, C], scale [ceil(R/t), ceil(C/t)]) and the fixture uses 32 x 32 as FAMILIES.md reports for the
   release.

Caches: ``forward(tokens)`` is one chunk on fresh state; ``Model.step`` runs any chunk on a ``State`` (window KV,
group buffers, per-source compressed KV and indexer keys, token history), so ``incremental_vs_batched`` can
decode one token at a time and compare with the one-shot prefill.

Only torch, numpy and the standard library (plus ``models`` and ``deepseek_v4`` of this directory).
"""

from __future__ import annotations

import json
import math
import os
import re
import unicodedata
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch

import deepseek_v4 as V4
import models as M

MODEL_TYPE = "deepseek_v41"

QAT = True  # transformers' FP8 / FP4 round trips of window KV, compressed KV and indexer q / k


def text_config(config: dict) -> dict:
    return config.get("text_config", config)


# ---------------------------------------------------------------------------
# Checkpoint (release layout)
# ---------------------------------------------------------------------------

SKIP_PREFIXES = ("mtp.", "vision.", "aligner.", "image_start", "image_end", "image_newline")


def tile_of(shape, sshape) -> Tuple[int, int]:
    """The square FP8 tile t with scale [ceil(R/t), ceil(C/t)] (smallest power of two that fits)."""
    R, C = shape
    for t in (32, 64, 128, 256):
        if (-(-R // t), -(-C // t)) == tuple(sshape):
            return (t, t)
    raise ValueError(f"no square tile maps {shape} to scale {sshape}")


def convert_checkpoint(config: dict, raw: Dict[str, Tuple[str, List[int], bytes]]) -> Dict[str, torch.Tensor]:
    """Release tensors -> float32, skipping ``mtp.*`` (DSpark), ``vision.*``, ``aligner.*`` and the image
    delimiters (transformers ``_keys_to_ignore_on_load_unexpected``). ``X.weight`` F8_E4M3 + ``X.scale`` F8_E8M0 is
    a tiled FP8 weight (the engram table: one scale per row per 32 columns); I8 + F8_E8M0 is packed FP4."""
    out: Dict[str, torch.Tensor] = {}
    for name, (dtype, shape, data) in raw.items():
        if name.startswith(SKIP_PREFIXES):
            continue
        if name.endswith(".scale") and name[:-6] + ".weight" in raw:
            continue
        arr = V4.decode(dtype, shape, data)
        if dtype in ("F8_E4M3", "I8"):
            base = name[: -len(".weight")]
            assert name.endswith(".weight") and base + ".scale" in raw, f"{name}: no companion .scale"
            sdt, sshape, sdata = raw[base + ".scale"]
            assert sdt == "F8_E8M0", f"{base}.scale must be F8_E8M0, got {sdt}"
            sc = V4.decode(sdt, sshape, sdata)
            if dtype == "I8":
                arr = V4.dequant_fp4_e8m0(arr, sc)
            elif name.endswith(".engram.embed.weight"):
                arr = dequant_rows_e8m0(arr, sc)
            else:
                arr = V4.dequant_fp8_e8m0(arr, sc, tile_of(shape, sshape))
        out[name] = torch.from_numpy(np.ascontiguousarray(arr, dtype=np.float32))
    return out


def dequant_rows_e8m0(codes: np.ndarray, scale: np.ndarray, block: int = 32) -> np.ndarray:
    """Engram table: E4M3 [rows, d] x 2^(scale[rows, d/32] - 127) per row per 32 columns."""
    assert scale.shape == (codes.shape[0], codes.shape[1] // block), (codes.shape, scale.shape)
    return (M.e4m3_to_f32(codes) * np.repeat(V4.e8m0_to_f32(scale), block, axis=1)).astype(np.float32)


# the compressed token map travels with the weights (an int64 tensor under this key, not a checkpoint tensor):
# load_extras derives it from the checkpoint's tokenizer.json, the fixture generator from the tokenizer it writes
TOKEN_MAP = "engram.compressed_token_map"


def load_tokenizer(fixture_dir: str) -> dict:
    with open(os.path.join(fixture_dir, "tokenizer.json"), encoding="utf-8") as f:
        return json.load(f)


def load_extras(fixture_dir: str, config: dict) -> Dict[str, torch.Tensor]:
    """models.load_checkpoint hook: what the model needs besides the tensors (the engram's compressed token map,
    built from tokenizer.json)."""
    if not text_config(config).get("engram_layer_ids"):
        return {}
    lookup, _ = compressed_token_map(load_tokenizer(fixture_dir))
    return {TOKEN_MAP: torch.tensor(lookup, dtype=torch.int64)}


# ---------------------------------------------------------------------------
# Tokenizer-derived compressed token map (vLLM / transformers build_compressed_token_map)
# ---------------------------------------------------------------------------


def bytes_to_unicode() -> Dict[int, str]:
    """GPT-2 / tokenizers ByteLevel byte -> char table."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


_BYTE_OF = {c: b for b, c in bytes_to_unicode().items()}


def tokenizer_vocab_size(tok: dict) -> int:
    ids = set(tok["model"]["vocab"].values()) | {a["id"] for a in tok.get("added_tokens", [])}
    return max(ids) + 1


def id_to_token(tok: dict, i: int) -> str:
    for a in tok.get("added_tokens", []):
        if a["id"] == i:
            return a["content"]
    inv = {v: k for k, v in tok["model"]["vocab"].items()}
    return inv[i]


def decode_one(tok: dict, i: int) -> str:
    """``backend.decode([i], skip_special_tokens=False)`` for a ByteLevel-decoder BPE tokenizer: an added token is
    its content; a vocab token's chars map back to bytes, decoded as UTF-8 with U+FFFD for invalid sequences."""
    assert tok["decoder"]["type"] == "ByteLevel", tok["decoder"]
    for a in tok.get("added_tokens", []):
        if a["id"] == i:
            return a["content"]
    s = id_to_token(tok, i)
    return bytes(_BYTE_OF[c] for c in s).decode("utf-8", errors="replace")


_SENTINEL = "\ue000"


def engram_normalize(text: str) -> str:
    """The normalizers.Sequence of build_compressed_token_map: NFKC, NFD, StripAccents (drop combining marks),
    Lowercase, ``[ \\t\\r\\n]+`` -> " ", a lone " " -> sentinel, Strip, sentinel -> " "."""
    t = unicodedata.normalize("NFKC", text)
    t = unicodedata.normalize("NFD", t)
    t = "".join(c for c in t if unicodedata.category(c) != "Mn")
    t = t.lower()
    t = re.sub(r"[ \t\r\n]+", " ", t)
    if t == " ":
        t = _SENTINEL
    t = t.strip()
    return t.replace(_SENTINEL, " ")


def compressed_token_map(tok: dict) -> Tuple[List[int], int]:
    """token id -> compressed id (first-seen order over ids 0..len-1) and the compressed vocab size."""
    key_to_new: Dict[str, int] = {}
    lookup = []
    for i in range(tokenizer_vocab_size(tok)):
        text = decode_one(tok, i)
        if "\ufffd" in text:
            key = id_to_token(tok, i)
        else:
            key = engram_normalize(text) or text
        lookup.append(key_to_new.setdefault(key, len(key_to_new)))
    return lookup, len(key_to_new)


# ---------------------------------------------------------------------------
# Engram layout and hash (vLLM common/engram.py: EngramLayout, compute_hash_multipliers, _hash_ids_kernel)
# ---------------------------------------------------------------------------


def is_prime(n: int) -> bool:
    if n < 2:
        return False
    if n % 2 == 0:
        return n == 2
    f = 3
    while f * f <= n:
        if n % f == 0:
            return False
        f += 2
    return True


def engram_primes(c: dict) -> List[List[int]]:
    """Per engram layer, the (max_ngram - 1) * n_heads primes in (n-gram, head) order: for each n-gram size the
    search restarts at engram_vocab_size - 1 and takes the next primes not yet handed out (one set for all layers)."""
    seen, out = set(), []
    for _ in c["engram_layer_ids"]:
        row = []
        for _ in range(c["engram_max_ngram_size"] - 1):
            cur = c["engram_vocab_size"] - 1
            for _ in range(c["engram_n_heads"]):
                cur += 1
                while not is_prime(cur) or cur in seen:
                    cur += 1
                seen.add(cur)
                row.append(cur)
        out.append(row)
    return out


def engram_multipliers(c: dict, compressed_vocab: int) -> List[List[int]]:
    """numpy default_rng(10007 * layer).integers(0, B, max_ngram, int64) * 2 + 1, B = (INT64_MAX // V) // 2.
    Python ints (exact, > 2^53)."""
    bound = max(1, (np.iinfo(np.int64).max // compressed_vocab) // 2)
    rows = []
    for L in c["engram_layer_ids"]:
        v = np.random.default_rng(10007 * L).integers(0, bound, size=(c["engram_max_ngram_size"],), dtype=np.int64)
        rows.append([int(x) * 2 + 1 for x in v])
    return rows


def engram_pad_key(c: dict) -> int:
    return int(c["engram_pad_id"] if "engram_pad_id" in c else c["engram_pad_token_id"])


class EngramHash:
    def __init__(self, c: dict, token_map: List[int]):
        self.token_map, n = token_map, max(token_map) + 1
        assert n == c["engram_compressed_vocab_size"], (
            f"compressed vocab {n} != engram_compressed_vocab_size {c['engram_compressed_vocab_size']}")
        self.pad = self.token_map[engram_pad_key(c)]
        self.N = c["engram_max_ngram_size"]
        self.H = c["engram_n_heads"]
        self.primes = engram_primes(c)
        self.mult = engram_multipliers(c, n)
        self.offsets = [[sum(p[:j]) for j in range(len(p))] for p in self.primes]
        for li, p in enumerate(self.primes):
            assert sum(p) == c["engram_num_embeddings"][li], (sum(p), c["engram_num_embeddings"][li])

    def ngram_ids(self, history: List[int], p: int) -> List[int]:
        """Compressed ids t_0 (at p) .. t_{N-1} (N-1 back); pad past the sequence start (no image spans here)."""
        out, blocked = [], False
        for s in range(self.N):
            blocked = blocked or p - s < 0
            out.append(self.pad if blocked else self.token_map[history[p - s]])
        return out

    def rows(self, li: int, history: List[int], p: int) -> List[int]:
        """The (N-1) * H table rows of engram layer li at position p (int64 arithmetic, exact in Python ints)."""
        t = self.ngram_ids(history, p)
        m = self.mult[li]
        rolling = t[0] * m[0]
        out = []
        for n in range(1, self.N):
            rolling ^= t[n] * m[n]
            assert 0 <= rolling < 2 ** 63
            for h in range(self.H):
                col = (n - 1) * self.H + h
                out.append(rolling % self.primes[li][col] + self.offsets[li][col])
        return out


# ---------------------------------------------------------------------------
# Quantisation round trips (transformers _fake_quant_fp8_block / _fake_quant_fp4_block)
# ---------------------------------------------------------------------------


def pow2_ceil(t: torch.Tensor) -> torch.Tensor:
    """2^ceil(log2 t) from the float32 bits (exponent - 127, + 1 if any mantissa bit), t > 0."""
    bits = t.contiguous().float().view(torch.int32)
    k = ((bits >> 23) & 0xFF) - 127 + ((bits & 0x7FFFFF) != 0).to(torch.int32)
    return torch.exp2(k.float())


def to_e4m3(x: torch.Tensor) -> torch.Tensor:
    """float32 -> nearest E4M3 value (ties to even; |x| <= 448 here), sign kept (also on zero)."""
    codes = M.f32_to_e4m3(x.detach().numpy())
    v = torch.from_numpy(M.e4m3_to_f32(codes).astype(np.float32))
    return torch.where(torch.signbit(x), -v.abs(), v.abs())


_E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def to_e2m1(q: torch.Tensor) -> torch.Tensor:
    """Round (pre-clamped) values onto the E2M1 grid, ties to the even code; sign kept."""
    mag = q.abs()
    bounds = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0])
    up_at_tie = torch.tensor([False, True, False, True, False, True, False])
    code = torch.where(up_at_tie, mag[..., None] >= bounds, mag[..., None] > bounds).sum(-1)
    v = _E2M1[code]
    return torch.where(torch.signbit(q), -v, v)


def fake_fp8(x: torch.Tensor, block: int = 32) -> torch.Tensor:
    n = x.shape[-1]
    if n % block:
        return x
    b = x.float().reshape(*x.shape[:-1], n // block, block)
    amax = b.abs().amax(-1).clamp_min(1e-4)
    sc = pow2_ceil(amax * (1.0 / 448.0))
    q = (b / sc[..., None]).clamp(-448.0, 448.0)
    return (to_e4m3(q) * sc[..., None]).reshape(x.shape)


def fake_fp4(x: torch.Tensor, block: int, e4m3_scales: bool = False) -> torch.Tensor:
    n = x.shape[-1]
    if n % block:
        return x
    b = x.float().reshape(*x.shape[:-1], n // block, block)
    amax = b.abs().amax(-1)
    if e4m3_scales:
        sc = to_e4m3(amax.clamp_min(6.0 * 2.0 ** -9) / 6.0)
    else:
        sc = pow2_ceil(amax.clamp_min(6.0 * 2.0 ** -126) * (1.0 / 6.0))
    q = (b / sc[..., None]).clamp(-6.0, 6.0)
    return (to_e2m1(q) * sc[..., None]).reshape(x.shape)


def rope(x, pos, inv, inverse=False):
    return V4.rope_tail(x, pos, inv, inverse)


# ---------------------------------------------------------------------------
# Layer roles
# ---------------------------------------------------------------------------


class Roles:
    """Per layer: ratio (cache read), KV source owned / read, index source, candidate role."""

    def __init__(self, c: dict):
        n = c["num_hidden_layers"]
        self.ratios = [int(r) for r in c["compress_ratios"][:n]]
        self.kv_src = list(c["kv_source_layer_ids"])
        self.idx_src = list(c["index_source_layer_ids"])
        cs = c.get("candidate_source_layer_id")
        self.cand = (self.kv_src[-1] if self.kv_src else -1) if cs is None else int(cs)
        self.reads: List[Optional[int]] = []
        for i in range(n):
            if self.ratios[i] == 0:
                self.reads.append(None)
                continue
            src = max(s for s in self.kv_src if s <= i)
            assert self.ratios[src] == self.ratios[i], f"layer {i} (ratio {self.ratios[i]}) reads source {src}"
            self.reads.append(src)
        for s in self.kv_src:
            assert self.ratios[s] > 0 and s in self.idx_src, f"KV source {s} must have ratio > 0 and an indexer"
        for s in self.idx_src:
            assert self.ratios[s] > 0
        assert self.cand < 0 or self.cand in self.idx_src

    def kind(self, i):
        r = self.ratios[i]
        if r == 0:
            return "window"
        role = "source" if i in self.kv_src else ("reindex" if i in self.idx_src else "reader")
        return f"ratio{r}_{role}"


# ---------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------


class State:
    """Everything a cached decode keeps between calls."""

    def __init__(self, n_layers: int):
        self.tokens: List[int] = []
        self.win: List[Optional[torch.Tensor]] = [None] * n_layers  # quantised window KV of all past positions
        self.buf: Dict[int, Tuple[torch.Tensor, torch.Tensor]] = {}  # source -> (kv, gate) of an open group
        self.ckv: Dict[int, torch.Tensor] = {}  # source -> compressed KV entries [T, D]
        self.ik: Dict[int, torch.Tensor] = {}  # source -> indexer keys [T, Di]
        self.count: Dict[int, int] = {}  # source -> groups emitted


class Model:
    """DeepSeek-V4.1 causal LM over release-named float32 weights. ``forward(tokens)`` -> logits [S, vocab]."""

    def __init__(self, config: dict, weights: Dict[str, torch.Tensor]):
        assert config["model_type"] == MODEL_TYPE
        self.cfg = config
        self.c = c = text_config(config)
        self.w = {k: v.float() for k, v in weights.items() if k != TOKEN_MAP}
        self.mt = MODEL_TYPE
        self.roles = Roles(c)
        self.ratios = self.roles.ratios
        self.kinds = [self.roles.kind(i) for i in range(c["num_hidden_layers"])]
        assert c.get("num_key_value_heads", 1) == 1 and c.get("n_shared_experts", 1) == 1
        self.inv_main = V4.rope_inv_freq(c, False)
        self.inv_comp = V4.rope_inv_freq(c, True)
        self.engram_layers = list(c.get("engram_layer_ids") or [])
        self.hash = EngramHash(c, weights[TOKEN_MAP].tolist()) if self.engram_layers else None
        self.trace: List[dict] = []
        self.clamp_stats: List[dict] = []
        self.v41_trace: List[dict] = []
        self.engram_trace: List[dict] = []

    def W(self, name):
        return self.w[name]

    # -- engram -----------------------------------------------------------------
    def engram(self, i: int, streams: torch.Tensor, state: State, pos: torch.Tensor) -> torch.Tensor:
        c, p = self.c, f"layers.{i}.engram."
        li = self.engram_layers.index(i)
        rows = torch.tensor([self.hash.rows(li, state.tokens, int(t)) for t in pos], dtype=torch.long)  # [S, cols]
        self.engram_trace.append({"layer": i, "rows": rows,
                                  "ngrams": [self.hash.ngram_ids(state.tokens, int(t)) for t in pos]})
        x = self.W(p + "embed.weight")[rows].flatten(1)  # [S, cols * head_dim]
        kv = x @ self.W(p + "wkv.weight").t()
        hc, D = c["hc_mult"], c["hidden_size"]
        key, value = kv[:, : hc * D].view(-1, hc, D), kv[:, hc * D:]
        wgt = self.W(p + "q_weight") * self.W(p + "k_weight")
        eps = c["rms_norm_eps"]
        rstd = torch.rsqrt(streams.square().mean(-1) + eps) * torch.rsqrt(key.square().mean(-1) + eps)
        dot = (streams * wgt * key).sum(-1) * rstd * D ** -0.5
        gate = torch.sigmoid(torch.copysign(dot.abs().clamp_min(1e-6).sqrt(), dot))  # [S, hc]
        self.engram_trace[-1]["gate"] = gate
        return streams + gate[..., None] * value[:, None, :]

    # -- attention --------------------------------------------------------------
    def compressor(self, i: int, x: torch.Tensor, state: State):
        """The source's new latents (pre-RoPE, normed) and the absolute position of the first one."""
        c, p, r = self.c, f"layers.{i}.attn.compressor.", self.ratios[i]
        eps = c["rms_norm_eps"]
        first = state.count.get(i, 0) * r
        if r == 1:
            return M.rms_norm(x @ self.W(p + "wkv.weight").t(), self.W(p + "norm.weight"), eps), first
        kv, gate = x @ self.W(p + "wkv.weight").t(), x @ self.W(p + "wgate.weight").t()
        if i in state.buf:
            bkv, bg = state.buf[i]
            kv, gate = torch.cat((bkv, kv)), torch.cat((bg, gate))
        use = (kv.shape[0] // r) * r
        state.buf[i] = (kv[use:], gate[use:])
        n = use // r
        if n == 0:
            return None, first
        kv, gate = kv[:use].view(n, r, -1), gate[:use].view(n, r, -1)
        lat = (kv * torch.softmax(gate, dim=1)).sum(1)
        return M.rms_norm(lat, self.W(p + "norm.weight"), eps), first

    def indexer(self, i, x, qr, latent, first, pos, state, shared, info):
        c, p, r = self.c, f"layers.{i}.attn.indexer.", self.ratios[i]
        S = x.shape[0]
        Hi, Di = c["index_n_heads"], c["index_head_dim"]
        if i in self.roles.kv_src:  # owns_k: publish the keys of the groups that closed in this call
            if latent is not None:
                k = M.rms_norm(latent @ self.W(p + "wk.weight").t(), self.W(p + "k_norm.weight"), c["rms_norm_eps"])
                k = rope(k, first + r * torch.arange(latent.shape[0]), self.inv_comp)
                if QAT:
                    k = fake_fp4(k, 32)
                state.ik[i] = k if i not in state.ik else torch.cat((state.ik[i], k))
            shared["index_k"] = state.ik.get(i)
        keys = shared.get("index_k")
        T = 0 if keys is None else keys.shape[0]
        if T == 0:
            return
        q = rope((qr @ self.W(p + "wq_b.weight").t()).view(S, Hi, Di), pos, self.inv_comp)
        if QAT:
            q = fake_fp4(q, 32)
        sc = torch.relu(torch.einsum("shd,td->sht", q, keys)) * Di ** -0.5
        wts = (x @ self.W(p + "weights_proj.weight").t()) * Hi ** -0.5
        scores = (sc * wts[..., None]).sum(1)  # [S, T]
        lens = (pos + 1) // r  # visible groups per query
        vis = torch.arange(T)[None, :] < lens[:, None]
        scores = scores.masked_fill(~vis, float("-inf"))
        info["compressed_visible"] = vis.sum(-1)
        if i == self.roles.cand:
            cand, bmargin, ndrop = candidate_blocks(scores, lens, c["candidate_topk_blocks"], c["candidate_block_size"])
            shared["candidates"] = cand
            info["candidate_block_margin"] = bmargin
            info["candidate_blocks_dropped"] = ndrop
            info["candidate_entries"] = (cand & vis).sum(-1)
        elif 0 <= self.roles.cand < i and shared.get("candidates") is not None:
            assert shared["candidates"].shape == scores.shape, "candidate mask from another source's key set"
            scores = scores.masked_fill(~shared["candidates"], float("-inf"))
        sel, margin = topk_select(scores, c["index_topk"])
        info["indexer_margin"] = margin
        info["indexer_selected"] = sel.sum(-1)
        info["indexer_eligible"] = torch.isfinite(scores).sum(-1)
        shared["topk"] = sel

    def attention(self, i: int, x: torch.Tensor, pos: torch.Tensor, state: State, shared: dict) -> torch.Tensor:
        c, p = self.c, f"layers.{i}.attn."
        S = x.shape[0]
        H, D, eps, r = c["num_attention_heads"], c["head_dim"], c["rms_norm_eps"], self.ratios[i]
        inv = self.inv_comp if r else self.inv_main
        qr = M.rms_norm(x @ self.W(p + "wq_a.weight").t(), self.W(p + "q_norm.weight"), eps)
        q = rope((qr @ self.W(p + "wq_b.weight").t()).view(S, H, D), pos, inv)
        kv = rope(M.rms_norm(x @ self.W(p + "wkv.weight").t(), self.W(p + "kv_norm.weight"), eps), pos, inv)
        if QAT:
            kv = fake_fp8(kv, 32)
        past = state.win[i]
        win = kv if past is None else torch.cat((past, kv))
        state.win[i] = win
        kpos = torch.arange(win.shape[0])
        t, s = pos[:, None], kpos[None, :]
        allowed = (s <= t) & ((t - s) < c["sliding_window"])
        keys = win
        info = {"layer": i, "kind": self.kinds[i]}
        if r:
            latent, first = (None, 0)
            if i in self.roles.kv_src:
                latent, first = self.compressor(i, x, state)
            if i in self.roles.idx_src:
                self.indexer(i, x, qr, latent, first, pos, state, shared, info)
            if latent is not None:
                ck = rope(latent, first + r * torch.arange(latent.shape[0]), self.inv_comp)
                if QAT:
                    ck = fake_fp4(ck, 16, e4m3_scales=True)
                state.ckv[i] = ck if i not in state.ckv else torch.cat((state.ckv[i], ck))
                state.count[i] = state.count.get(i, 0) + latent.shape[0]
            if i in self.roles.kv_src:
                shared["compress_kv"] = state.ckv.get(i)
            ckv = shared.get("compress_kv")
            if ckv is not None:
                sel = shared.get("topk")
                if sel is None:
                    sel = torch.zeros(S, ckv.shape[0], dtype=torch.bool)
                assert sel.shape == (S, ckv.shape[0]), (sel.shape, ckv.shape)
                keys = torch.cat((win, ckv))
                allowed = torch.cat((allowed, sel), dim=1)
                info["compressed_attended"] = sel.sum(-1)
                info["compressed_total"] = ckv.shape[0]
        o, probs = V4.sink_attention_kv(q, keys, allowed, self.W(p + "attn_sink"), D ** -0.5)
        info["sink_mass"] = 1.0 - probs.sum(-1)
        o = rope(o, pos, inv, inverse=True)
        self.v41_trace.append(info)
        return V4.grouped_out(o, self.W(p + "wo_a.weight"), self.W(p + "wo_b.weight"), c["o_groups"])

    # -- MoE --------------------------------------------------------------------
    def moe(self, i: int, x: torch.Tensor) -> torch.Tensor:
        c, p = self.c, f"layers.{i}.ffn."
        limit = float(c["swiglu_limit"])
        logits = (x @ self.W(p + "gate.weight").t()) / float(c.get("gate_temp", 1.0))
        assert c.get("norm_topk_prob", True) and c["num_experts_per_tok"] > 1
        idx, w, info = V4.route(logits, self.W(p + "gate.bias"), None, None, c["num_experts_per_tok"],
                                c["scoring_func"], c["routed_scaling_factor"])
        y = torch.zeros_like(x)
        ep = p + "experts."
        for e in range(c["n_routed_experts"]):
            tok, slot = torch.where(idx == e)
            if tok.numel() == 0:
                continue
            y[tok] += expert(x[tok], self.W(f"{ep}{e}.w1.weight"), self.W(f"{ep}{e}.w3.weight"),
                             self.W(f"{ep}{e}.w2.weight"), limit, w[tok, slot][:, None], self.clamp_stats)
        sp = p + "shared_experts."
        y += expert(x, self.W(sp + "w1.weight"), self.W(sp + "w3.weight"), self.W(sp + "w2.weight"), limit, None,
                    self.clamp_stats)
        self.trace.append({"layer": i, "idx": idx, "weights": w, "hash": False, **info})
        return y

    # -- full model ---------------------------------------------------------------
    def site(self, streams, i, which):
        c = self.c
        return V4.hc_weights(streams, self.W(f"layers.{i}.hc_{which}_fn"), self.W(f"layers.{i}.hc_{which}_scale"),
                             self.W(f"layers.{i}.hc_{which}_base"), c["hc_mult"], c["hc_sinkhorn_iters"],
                             c["hc_eps"], c["rms_norm_eps"])

    @torch.no_grad()
    def step(self, tokens: List[int], state: State) -> torch.Tensor:
        """Run the chunk ``tokens`` (positions len(state.tokens)...) on ``state``; logits [len(tokens), vocab]."""
        c = self.c
        eps, hc = c["rms_norm_eps"], c["hc_mult"]
        start = len(state.tokens)
        state.tokens.extend(tokens)
        pos = torch.arange(start, start + len(tokens))
        ids = torch.tensor(tokens, dtype=torch.long)
        streams = self.W("embed.weight")[ids][:, None, :].expand(-1, hc, -1).contiguous()
        pre_mix = torch.zeros(len(tokens), hc)
        pre_mix[:, 0] = 1.0
        shared: dict = {}
        self.comb_trace = []
        for i in range(c["num_hidden_layers"]):
            if i in self.engram_layers:
                streams = self.engram(i, streams, state, pos)
            a_pre, a_post, a_comb = self.site(streams, i, "attn")
            self.comb_trace.append(a_comb)
            a = self.attention(i, M.rms_norm(V4.hc_collapse(streams, pre_mix), self.W(f"layers.{i}.attn_norm.weight"),
                                             eps), pos, state, shared)
            streams = V4.hc_expand(a, streams, a_post, a_comb)
            f_pre, f_post, f_comb = self.site(streams, i, "ffn")
            self.comb_trace.append(f_comb)
            m = self.moe(i, M.rms_norm(V4.hc_collapse(streams, a_pre), self.W(f"layers.{i}.ffn_norm.weight"), eps))
            streams = V4.hc_expand(m, streams, f_post, f_comb)
            pre_mix = f_pre
        out = M.rms_norm(V4.hc_collapse(streams, pre_mix), self.W("norm.weight"), eps)
        return out @ self.W("head.weight").t()

    def forward(self, tokens: List[int]) -> torch.Tensor:
        self.trace, self.clamp_stats, self.v41_trace, self.engram_trace = [], [], [], []
        return self.step(list(tokens), State(self.c["num_hidden_layers"]))

    def greedy(self, tokens: List[int], n: int) -> List[int]:
        seq, out = list(tokens), []
        for _ in range(n):
            nxt = int(torch.argmax(self.forward(seq)[-1]).item())
            out.append(nxt)
            seq.append(nxt)
        return out

    def incremental(self, tokens: List[int]) -> torch.Tensor:
        """Decode one token at a time on one State; logits [S, vocab]."""
        st = State(self.c["num_hidden_layers"])
        rows = [self.step([t], st)[0] for t in tokens]
        return torch.stack(rows)


def expert(x, w1, w3, w2, limit, weight, stats=None):
    """DeepseekV41Expert: w2((weight *) silu(min(w1 x, limit)) * clamp(w3 x, +-limit))."""
    g, u = x @ w1.t(), x @ w3.t()
    if stats is not None:
        stats.append({"gate_hi": int((g > limit).sum()), "up_out": int((u.abs() > limit).sum()),
                      "rows_hit": int(((g > limit) | (u.abs() > limit)).any(-1).sum()),
                      "rows": g.shape[0], "entries": g.numel()})
    y = torch.nn.functional.silu(g.clamp(max=limit)) * u.clamp(min=-limit, max=limit)
    if weight is not None:
        y = weight * y
    return y @ w2.t()


def topk_select(scores: torch.Tensor, top_k: int):
    """Per query the top-k finite scores (k = min(top_k, T)); -inf picks are dropped. Returns (selected [S, T],
    margin [S]: k-th minus (k+1)-th finite score where more than k are finite, else inf)."""
    S, T = scores.shape
    k = min(top_k, T)
    sel = torch.zeros(S, T, dtype=torch.bool)
    margin = torch.full((S,), float("inf"))
    if k == 0:
        return sel, margin
    top = scores.topk(k, dim=-1)
    sel.scatter_(1, top.indices, top.values > float("-inf"))
    srt = scores.sort(dim=-1, descending=True).values
    nfin = torch.isfinite(scores).sum(-1)
    for t in range(S):
        if int(nfin[t]) > k:
            margin[t] = float(srt[t, k - 1] - srt[t, k])
    return sel, margin


def candidate_blocks(scores: torch.Tensor, lens: torch.Tensor, topk_blocks: int, block: int):
    """transformers select_candidate_blocks: block score = max over its positions (-inf = unreachable), the
    query's newest block pinned to +inf, keep the top ``topk_blocks`` finite ones. Returns (mask [S, T], margin [S]
    between the last kept and the first dropped reachable block score, dropped reachable blocks [S])."""
    S, T = scores.shape
    pad = -T % block
    b = torch.cat((scores, scores.new_full((S, pad), float("-inf"))), 1).view(S, -1, block).amax(-1)
    nb = b.shape[1]
    last = (lens - 1).div(block, rounding_mode="floor")
    b = b.masked_fill(torch.arange(nb)[None, :] == last[:, None], float("inf"))
    k = min(topk_blocks, nb)
    top = b.topk(k, dim=-1)
    keep = torch.zeros(S, nb, dtype=torch.bool).scatter_(1, top.indices, top.values > float("-inf"))
    reach = b > float("-inf")
    margin = torch.full((S,), float("inf"))
    srt = b.sort(dim=-1, descending=True).values
    for t in range(S):
        if int(reach[t].sum()) > k:
            margin[t] = float(srt[t, k - 1] - srt[t, k])
    dropped = (reach & ~keep).sum(-1)
    return keep.repeat_interleave(block, dim=1)[:, :T], margin, dropped


def incremental_vs_batched(model: Model, tokens: List[int]) -> float:
    """max |logits(one-token decode with caches) - logits(one prefill)|."""
    a = model.forward(tokens)
    b = model.incremental(tokens)
    return float((a - b).abs().max())


# ---------------------------------------------------------------------------
# Fixture generation (used by make_fixtures.py)
# ---------------------------------------------------------------------------

N_PROMPT = 64

# A tiny byte-level BPE tokenizer (tokenizers' JSON format, DeepSeek's ByteLevel decoder). Words that normalise
# alike (case, accents, NFKC compatibility forms, whitespace runs) merge in the compressed map; the lone high bytes
# decode to U+FFFD and are keyed by their raw form; a lone combining accent normalises to "" and keeps its text.
TOKENIZER_WORDS = ["the", "The", "THE", " the", " The", " THE", "café", "Café", "CAFÉ", "cafe", "e\u0301",
                   "\u0301", "naïve", "naive", "NAÏVE", "\ufb01", "fi", "\uff21", " hello", "Hello", "HELLO",
                   "hello", " Hello", "  ", "\n\n", " \n", "\t\t", "  \t", "ﬀ", "ff", " world", "World"]
TOKENIZER_HIGH_BYTES = [0xC3, 0xA9, 0xCC, 0x81, 0xEF]
BOS, EOS = "<\uff5cbegin\u2581of\u2581sentence\uff5c>", "<\uff5cend\u2581of\u2581sentence\uff5c>"


def build_tokenizer(vocab_size: int) -> dict:
    b2u = bytes_to_unicode()
    bl = lambda text: "".join(b2u[b] for b in text.encode("utf-8"))
    vocab: Dict[str, int] = {BOS: 0, EOS: 1}
    merges: List[str] = []

    def add(t):
        if t not in vocab:
            vocab[t] = len(vocab)

    for b in list(range(0x20, 0x7F)) + [0x0A, 0x09] + TOKENIZER_HIGH_BYTES:
        add(b2u[b])
    for w in TOKENIZER_WORDS:
        s = bl(w)
        for ch in s:
            add(ch)
        for k in range(2, len(s) + 1):
            if s[:k] not in vocab:
                merges.append(f"{s[:k - 1]} {s[k - 1]}")
                add(s[:k])
    assert len(vocab) <= vocab_size, len(vocab)
    for b in range(0x80, 0x100):  # fill up with more lone high bytes (U+FFFD when decoded alone)
        if len(vocab) == vocab_size:
            break
        add(b2u[b])
    assert len(vocab) == vocab_size
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for i, t in ((0, BOS), (1, EOS))]
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                              "use_regex": True},
            "post_processor": None,
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                      "vocab": vocab, "merges": merges}}


# the release text_config key set (DeepSeek-V4.1-Flash), shrunk; compress_ratios has num_hidden_layers +
# num_nextn_predict_layers entries as in the release (the DSpark one 0)
TEXT_BASE = {
    "model_type": "deepseek_v41_text",
    "vocab_size": 256,
    "hidden_size": 64,
    "num_hidden_layers": 9,
    "num_attention_heads": 4,
    "num_key_value_heads": 1,
    "head_dim": 64,
    "qk_rope_head_dim": 16,
    "q_lora_rank": 32,
    "o_lora_rank": 32,
    "o_groups": 2,
    "hidden_act": "silu",
    "swiglu_limit": 10.0,
    "rms_norm_eps": 1e-20,
    "attention_bias": False,
    "attention_dropout": 0.0,
    "initializer_range": 0.02,
    "tie_word_embeddings": False,
    "max_position_embeddings": 512,
    "rope_theta": 10000,
    "rope_scaling": {"rope_type": "yarn", "factor": 16, "beta_fast": 32, "beta_slow": 1,
                     "original_max_position_embeddings": 32},
    "n_routed_experts": 8,
    "n_shared_experts": 1,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 32,
    "scoring_func": "sqrtsoftplus",
    "topk_method": "noaux_tc",
    "norm_topk_prob": True,
    "routed_scaling_factor": 1.5,
    "gate_temp": 0.8,
    "sliding_window": 8,
    "compress_ratios": [0, 0, 2, 2, 2, 2, 1, 1, 1, 0],
    "compress_rope_theta": 160000,
    "kv_source_layer_ids": [2, 4, 6],
    "index_source_layer_ids": [2, 4, 6, 8],
    "index_n_heads": 8,
    "index_head_dim": 32,
    "index_topk": 8,
    "candidate_source_layer_id": 6,
    "candidate_topk_blocks": 3,
    "candidate_block_size": 4,
    "hc_mult": 4,
    "hc_sinkhorn_iters": 20,
    "hc_eps": 1e-06,
    "engram_layer_ids": [1, 4],
    "engram_max_ngram_size": 4,
    "engram_vocab_size": 40,
    "engram_n_heads": 2,
    "engram_head_dim": 32,
    "engram_pad_token_id": 2,
    "num_nextn_predict_layers": 1,
    "dspark_block_size": 5,
    "dspark_noise_token_id": 255,
    "dspark_target_layer_ids": [5, 7, 8],
    "dspark_markov_rank": 16,
    "dspark_n_routed_experts": 4,
    "dspark_num_experts_per_tok": 2,
    "bos_token_id": 0,
    "eos_token_id": 1,
    "use_cache": True,
}
VISION = {"model_type": "deepseek_v41_vision", "num_hidden_layers": 1, "hidden_size": 32, "num_attention_heads": 2,
          "intermediate_size": 64, "patch_size": 14, "rope_theta": 10000, "downsample_ratio": 3,
          "max_image_tokens": 16, "min_pixels": 295936, "max_wh_ratio": None}
QUANT_CONFIG = {"activation_scheme": "dynamic", "expert_dtype": "fp4", "fmt": "e4m3", "quant_method": "fp8",
                "scale_fmt": "ue8m0", "weight_block_size": [32, 32]}  # the release's, with its FP4 experts


def variant_config(storage: str, engram: bool = True) -> dict:
    """The fixture's config; without `engram`, engram_layer_ids is empty (the attention alone)."""
    assert storage == "native"
    tc = json.loads(json.dumps(TEXT_BASE))
    if not engram:
        tc["engram_layer_ids"] = []
    tc["engram_num_embeddings"] = [sum(p) for p in engram_primes(tc)]
    _, n = compressed_token_map(build_tokenizer(tc["vocab_size"]))
    tc["engram_compressed_vocab_size"] = n
    cfg = {"architectures": ["DeepseekV41ForCausalLM"], "bos_token_id": 0, "eos_token_id": 1, "image_token_id": 250,
           "model_type": "deepseek_v41", "quantization_config": dict(QUANT_CONFIG), "text_config": dict(sorted(tc.items())),
           "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vision_config": VISION}
    return cfg


def extra_files(config: dict) -> Dict[str, str]:
    """Files written next to the weights (make_fixtures.write_variant)."""
    tok = build_tokenizer(text_config(config)["vocab_size"])
    return {"tokenizer.json": json.dumps(tok, ensure_ascii=False, indent=1) + "\n"}


EXPERT_STD = 5.0
EXPERT_DOWN_SCALE = 0.15


def gen_weights(cfg: dict, g: torch.Generator) -> Dict[str, torch.Tensor]:
    """Release names and shapes, float32 master copy, checkpoint order (plus mtp.* / vision.* to be skipped)."""
    c = text_config(cfg)
    Hd, V, H, D = c["hidden_size"], c["vocab_size"], c["num_attention_heads"], c["head_dim"]
    hc, qr, G, R = c["hc_mult"], c["q_lora_rank"], c["o_groups"], c["o_lora_rank"]
    Hi, Di = c["index_n_heads"], c["index_head_dim"]
    E, I = c["n_routed_experts"], c["moe_intermediate_size"]
    roles = Roles(c)
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

    w["embed.weight"] = torch.randn(V, Hd, generator=g)
    ncols = (c["engram_max_ngram_size"] - 1) * c["engram_n_heads"]
    for i in range(c["num_hidden_layers"]):
        p = f"layers.{i}."
        if i in c["engram_layer_ids"]:
            e = p + "engram."
            rows = c["engram_num_embeddings"][c["engram_layer_ids"].index(i)]
            # per-row magnitudes spread over a few binades, so the row scales differ
            w[e + "embed.weight"] = torch.randn(rows, c["engram_head_dim"], generator=g) * torch.exp2(
                torch.randint(-2, 3, (rows, 1), generator=g).float())
            lin(e + "wkv.weight", Hd * (hc + 1), ncols * c["engram_head_dim"])
            w[e + "q_weight"] = 0.5 + torch.rand(hc, Hd, generator=g)
            w[e + "k_weight"] = 0.5 + torch.rand(hc, Hd, generator=g) * 2.0
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
        if i in roles.kv_src:
            lin(a + "compressor.wkv.weight", D, Hd)
            if roles.ratios[i] > 1:
                lin(a + "compressor.wgate.weight", D, Hd, 1.5)
            norm(a + "compressor.norm.weight", D)
            lin(a + "indexer.wk.weight", Di, D)
            norm(a + "indexer.k_norm.weight", Di)
        if i in roles.idx_src:
            lin(a + "indexer.wq_b.weight", Hi * Di, qr)
            lin(a + "indexer.weights_proj.weight", Hi, Hd, 2.0)
        hc_site(p + "hc_ffn")
        norm(p + "ffn_norm.weight", Hd)
        f = p + "ffn."
        lin(f + "gate.weight", E, Hd, 2.0)
        w[f + "gate.bias"] = torch.randn(E, generator=g) * 0.05
        w[f + "gate.bias_vl"] = torch.randn(E, generator=g) * 0.05
        for e in range(E):
            swiglu3(f"{f}experts.{e}", I)
        swiglu3(f + "shared_experts", I)
    norm("norm.weight", Hd)
    lin("head.weight", V, Hd, 2.0)
    # a few DSpark (mtp.*) and vision tower tensors: skipped by transformers and the reference
    lin("mtp.0.e_proj.weight", Hd, Hd)
    lin("mtp.0.h_proj.weight", Hd, Hd)
    norm("mtp.0.enorm.weight", Hd)
    lin("mtp.0.ffn.experts.0.w1.weight", I, Hd)
    lin("vision.patch_embed.proj.weight", 32, 3 * 14 * 14 // 3 * 3 // 3)
    norm("vision.norm.weight", 32)
    return w


F32_SUFFIXES = ("hc_attn_fn", "hc_attn_base", "hc_attn_scale", "hc_ffn_fn", "hc_ffn_base", "hc_ffn_scale",
                ".attn_sink", ".gate.bias", ".gate.bias_vl")
FP8_SUFFIXES = (".attn.wq_a.weight", ".attn.wq_b.weight", ".attn.wkv.weight", ".attn.wo_a.weight",
                ".attn.wo_b.weight", ".attn.indexer.wq_b.weight", ".shared_experts.w1.weight",
                ".shared_experts.w2.weight", ".shared_experts.w3.weight", ".engram.wkv.weight", "mtp.0.e_proj.weight",
                "mtp.0.h_proj.weight")


def storage_kind(name: str) -> str:
    """The release dtypes: F32 (mHC, sinks, router biases); FP8 32x32 (attention, indexer wq_b, shared experts,
    engram wkv, DSpark projections); FP4 (routed experts); E4M3 rows (engram tables); BF16 the rest (embed,
    head, norms, router weight, compressor, indexer wk / weights_proj, engram q / k weights, vision)."""
    if name.endswith(F32_SUFFIXES):
        return "F32"
    if ".experts." in name and ".shared_experts." not in name:
        return "FP4"
    if name.endswith(".engram.embed.weight"):
        return "ROWS"
    if name.endswith(FP8_SUFFIXES):
        return "FP8"
    return "BF16"


def quant_rows_e8m0(a: np.ndarray, block: int = 32):
    """Engram table: per row per 32 columns s = 2^ceil(log2(amax / 448)), codes = E4M3(RNE(w / s))."""
    rows, cols = a.shape
    b = a.reshape(rows, cols // block, block)
    amax = np.maximum(np.abs(b).max(-1), 1e-30)
    sc = V4.f32_to_e8m0_ceil(amax / 448.0)
    codes = M.f32_to_e4m3((b / V4.e8m0_to_f32(sc)[..., None]).reshape(rows, cols))
    return codes, sc


def to_storage(weights: Dict[str, torch.Tensor], storage: str, mxfp4_encode=None, config: Optional[dict] = None):
    """-> (stored {name: (dtype, np array)}, dequantised {name: tensor} as the reference sees it)."""
    stored, deq = {}, {}
    for name, t in weights.items():
        kind = storage_kind(name)
        a = t.numpy().astype(np.float32)
        base = name[: -len(".weight")]
        if kind == "F32":
            stored[name] = ("F32", a)
            deq[name] = torch.from_numpy(a.copy())
        elif kind == "BF16":
            bits = M.f32_to_bf16_bits(a)
            stored[name] = ("BF16", bits)
            deq[name] = torch.from_numpy(M.bf16_bits_to_f32(bits).copy())
        elif kind == "FP8":
            codes, sc = V4.quant_fp8_e8m0(a, (32, 32))
            stored[name] = ("F8_E4M3", codes)
            stored[base + ".scale"] = ("F8_E8M0", sc)
            deq[name] = torch.from_numpy(V4.dequant_fp8_e8m0(codes, sc, (32, 32)))
        elif kind == "ROWS":
            codes, sc = quant_rows_e8m0(a)
            stored[name] = ("F8_E4M3", codes)
            stored[base + ".scale"] = ("F8_E8M0", sc)
            deq[name] = torch.from_numpy(dequant_rows_e8m0(codes, sc))
        else:
            packed, sc = V4.quant_fp4_e8m0(a, mxfp4_encode)
            stored[name] = ("I8", packed)
            stored[base + ".scale"] = ("F8_E8M0", sc)
            deq[name] = torch.from_numpy(V4.dequant_fp4_e8m0(packed, sc))
    deq = {k: v for k, v in deq.items() if not k.startswith(SKIP_PREFIXES)}
    lookup, _ = compressed_token_map(build_tokenizer(weights["embed.weight"].shape[0]))
    deq[TOKEN_MAP] = torch.tensor(lookup, dtype=torch.int64)
    return stored, deq


INDEXER_MARGIN = 5e-4  # k-th vs (k+1)-th indexer / candidate-block score (required: 1e-4)
INCREMENTAL_TOL = 5e-5  # one-token decode with caches vs one prefill, max |dlogit| over the prompt


def engram_stats(model: Model) -> dict:
    """Over the last forward, per engram layer: rows whose n-gram reaches past the start (pads) and hash
    collisions (one row reached from two different compressed n-grams, in any column)."""
    out = {}
    for tr in model.engram_trace:
        rows, ngrams = tr["rows"], tr["ngrams"]
        N = len(ngrams[0])
        H = rows.shape[1] // (N - 1)
        owner, coll, pads = {}, set(), 0
        for s, ng in enumerate(ngrams):
            for col in range(rows.shape[1]):
                n = col // H + 2  # n-gram size of this column
                key = tuple(ng[:n])
                pads += int(s < n - 1)
                r = int(rows[s, col])
                if owner.setdefault(r, key) != key:
                    coll.add(r)
        g = tr["gate"]
        out[str(tr["layer"])] = {"rows_read": int(rows.numel()), "distinct_rows": len(owner),
                                 "rows_with_pad": pads, "colliding_rows": len(coll),
                                 "gate_min": round(float(g.min()), 4), "gate_max": round(float(g.max()), 4)}
    return out


def analyse_extra(model: Model) -> dict:
    """Acceptance data of the last forward (prompt + greedy): margins and what fired."""
    im, cm = math.inf, math.inf
    drops = {}
    for tr in model.v41_trace:
        if "indexer_margin" in tr:
            im = min(im, float(tr["indexer_margin"].min()))
            drops[f"indexer_{tr['layer']}_positions_dropping"] = int((tr["indexer_eligible"] > tr["indexer_selected"]).sum())
        if "candidate_block_margin" in tr:
            cm = min(cm, float(tr["candidate_block_margin"].min()))
            drops["candidate_positions_dropping_blocks"] = int((tr["candidate_blocks_dropped"] > 0).sum())
    cs = model.clamp_stats
    return {"indexer_margin": im, "candidate_block_margin": cm, **drops,
            "gate_entries_above_limit": sum(x["gate_hi"] for x in cs),
            "up_entries_outside_limit": sum(x["up_out"] for x in cs),
            "engram": engram_stats(model)}


def accept(model: Model, extra: dict) -> bool:
    """Acceptance hooks: margins, and every mechanism fired (asserted where it is structural)."""
    roles = model.roles
    readers = {s: [i for i in range(len(roles.ratios)) if roles.reads[i] == s and i != s] for s in roles.kv_src}
    assert {roles.ratios[s] for s in roles.kv_src} == {1, 2}, "both compressed ratios"
    assert max(len(r) for r in readers.values()) >= 2, f"a source with several readers: {readers}"
    assert any(i in roles.idx_src and i not in roles.kv_src for i in range(len(roles.ratios))), "a reindex layer"
    for L in roles.idx_src:
        assert extra[f"indexer_{L}_positions_dropping"] > 0, f"indexer {L} top-k drops nothing"
    assert extra["candidate_positions_dropping_blocks"] > 0, "candidate filter drops no block"
    for L, e in extra["engram"].items():
        assert e["rows_with_pad"] > 0 and e["colliding_rows"] > 0, f"engram {L}: {e}"
    if not (extra["indexer_margin"] > INDEXER_MARGIN and extra["candidate_block_margin"] > INDEXER_MARGIN
            and extra["gate_entries_above_limit"] > 0 and extra["up_entries_outside_limit"] > 0):
        return False
    return True


def manifest_info(model: Model, tokens: List[int], stored: dict) -> dict:
    """Extra manifest entries, measured over ONE prefill of the prompt (and the incremental check)."""
    inc = incremental_vs_batched(model, tokens)
    assert inc <= INCREMENTAL_TOL, f"incremental vs batched {inc}"
    model.forward(tokens)
    info: Dict[str, object] = {"n_prompt": len(tokens), "layer_kinds": model.kinds,
                               "compress_ratios": model.ratios,
                               "kv_source_read_by_layer": model.roles.reads,
                               "incremental_vs_batched_max_abs_dlogit": inc}
    per_layer = {}
    for tr in model.v41_trace:
        d = {"kind": tr["kind"], "mean_sink_mass": round(float(tr["sink_mass"].mean()), 4)}
        if "compressed_total" in tr:
            d["compressed_entries_at_last_position"] = int(tr["compressed_total"])
            d["compressed_attended_at_last_position"] = int(tr["compressed_attended"][-1])
        if "indexer_selected" in tr:
            d["positions_where_indexer_drops_entries"] = int((tr["indexer_eligible"] > tr["indexer_selected"]).sum())
            d["min_indexer_margin_prefill"] = float(tr["indexer_margin"].min())
        if "candidate_blocks_dropped" in tr:
            d["positions_where_candidate_blocks_drop"] = int((tr["candidate_blocks_dropped"] > 0).sum())
            d["candidate_entries_at_last_position"] = int(tr["candidate_entries"][-1])
            d["min_candidate_block_margin_prefill"] = float(tr["candidate_block_margin"].min())
        per_layer[str(tr["layer"])] = d
    info["attention"] = per_layer
    info["engram_prefill"] = engram_stats(model)
    cs = model.clamp_stats
    info["clamp_over_prefill"] = {"gate_entries_above_limit": sum(x["gate_hi"] for x in cs),
                                  "up_entries_outside_limit": sum(x["up_out"] for x in cs),
                                  "entries_per_half": sum(x["entries"] for x in cs)}
    info["rope_inv_freq_main"] = [float(x) for x in model.inv_main]
    info["rope_inv_freq_compress"] = [float(x) for x in model.inv_comp]
    if model.hash is not None:  # a config without engram layers has no hash
        info["engram_primes"] = model.hash.primes
        info["engram_multipliers"] = [[str(x) for x in r] for r in model.hash.mult]
        info["engram_compressed_vocab_size"] = max(model.hash.token_map) + 1
    info["tensor_dtypes"] = {dt: sum(1 for d, _ in stored.values() if d == dt)
                             for dt in sorted({d for d, _ in stored.values()})}
    return info
