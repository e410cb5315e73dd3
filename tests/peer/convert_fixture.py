#!/usr/bin/env python3
"""llama.cpp's own convert_hf_to_gguf.py on a golden fixture, with Debian's python3 only.

  convert_fixture.py LLAMA_CPP_SOURCE FIXTURE_DIR OUT.gguf
                     [--mla-norm-eps EPS] [--indexer-head-dim N]

Runs the peer's converter unmodified (runpy, `--outtype f32 --no-lazy`) after
four run-time adaptations, none of which touches a llama.cpp file or changes
how a weight is read or mapped:

1. `transformers` is replaced by a stub. The converter imports it only for
   AutoConfig (whose failure it already handles by reading config.json as is:
   the path every model transformers does not know takes) and AutoTokenizer
   (step 3). Debian 12 packages no transformers, and a stub makes the result
   independent of whichever one is installed.
2. torch 1.13 (Debian's) predates float8. The converter names
   torch.float8_e4m3fn / float8_e5m2 when it is imported, so stand-ins are set.
   An F8_E4M3 tensor (DeepSeek-V4's release weights) is decoded exactly into
   float64, the stand-in's role, and DeepSeek-V4's dequant_model, which looks
   for the float8 dtypes, is told that float64 is that dtype. Its own
   `weight.float() * 2^(scale - 127)` then runs unchanged. --no-lazy: torch
   1.13's meta tensors cannot repeat_interleave its block scales.
3. The fixtures ship no tokenizer. set_vocab writes a byte-level "gpt2" vocab
   of vocab_size tokens (the 256 byte symbols, no merges but one that is never
   used: llama.cpp requires the key) and the config's bos/eos ids. The test
   passes token ids, never text.
4. DeepSeek-V4's tensor_force_quant stores its FP8 weights as Q8_0 and its
   BF16 matrices as BF16 whatever --outtype says. The oracle is an F32 twin of
   the dequantized weights, so those become F32 (FP8 times a power of two and
   BF16 are exact in F32). Routed experts stay MXFP4, which holds them exactly;
   `llama_probe dequantize` makes their F32 twin with ggml's own dequantizer.

On request (5), weights are rewritten, exactly up to rounding, so that
llama.cpp's graph computes the release's function where it departs from it by
design (tests/reference/README.md, "Outside oracles"): --mla-norm-eps for
Kimi's MLA latent norms, --indexer-head-dim for DeepSeek-V4's lightning
indexer. Without them the conversion is llama.cpp's own.
"""

import argparse
import os
import runpy
import sys
import types

import numpy as np
import torch

parser = argparse.ArgumentParser()
parser.add_argument("source", help="llama.cpp's source tree (build/peer/llama.cpp)")
parser.add_argument("fixture")
parser.add_argument("out")
parser.add_argument("--mla-norm-eps", type=float, help="Kimi: the release's eps of the MLA latent norms")
parser.add_argument("--indexer-head-dim", type=int, help="DeepSeek-V4: pad the indexer heads to this")
args = parser.parse_args()
sys.path[:0] = [args.source, os.path.join(args.source, "gguf-py")]

# 1. transformers: AutoConfig fails as for an unknown model_type -> config.json.
stub = types.ModuleType("transformers")


class AutoConfig:
    @staticmethod
    def from_pretrained(*_, **__):
        raise ValueError("transformers stub (tests/peer/convert_fixture.py): read config.json")


stub.AutoConfig = AutoConfig
sys.modules["transformers"] = stub


# 2. torch without float8: stand-ins, and E4M3 decoded into float64.
class Float8StandIn:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name} (stand-in)"


for name in ("float8_e4m3fn", "float8_e5m2"):
    if not hasattr(torch, name):
        setattr(torch, name, Float8StandIn(name))
NATIVE_FLOAT8 = not isinstance(torch.float8_e4m3fn, Float8StandIn)


def e4m3fn_table():
    """float64 value of each E4M3FN byte (bias 7, no infinities, S.1111.111 is NaN)."""
    table = np.empty(256, dtype=np.float64)
    for byte in range(256):
        sign = -1.0 if byte & 0x80 else 1.0
        exponent, mantissa = (byte >> 3) & 0xF, byte & 0x7
        if exponent == 0:
            value = mantissa / 8 * 2.0 ** -6
        elif exponent == 15 and mantissa == 7:
            value = float("nan")
        else:
            value = (1 + mantissa / 8) * 2.0 ** (exponent - 7)
        table[byte] = sign * value
    return table


import gguf  # noqa: E402  (after sys.path)
from conversion import deepseek, kimi_k3, kimi_linear  # noqa: E402

if not NATIVE_FLOAT8:
    E4M3 = e4m3fn_table()

    class DecodedE4M3(gguf.utility.LocalTensor):
        """An F8_E4M3 tensor handed over as the F64 tensor of its exact values."""

        def mmap_bytes(self):
            return E4M3[super().mmap_bytes()].view(np.uint8)

    read_safetensors = gguf.utility.SafetensorsLocal.__init__

    def read_safetensors_e4m3(self, filename):
        read_safetensors(self, filename)
        for name, t in self.tensors.items():
            if t.dtype == "F8_E4M3":
                self.tensors[name] = DecodedE4M3(dtype="F64", shape=t.shape, data_range=t.data_range)

    gguf.utility.SafetensorsLocal.__init__ = read_safetensors_e4m3
    deepseek.DeepseekV4Model._float8_dtypes = staticmethod(lambda: (torch.float64,))


# 3. a byte-level vocab in place of the missing tokenizer.
def set_vocab_bytes(self):
    size = self.hparams["vocab_size"]
    assert size >= 256, size
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) +
                 list(range(ord("®"), ord("ÿ") + 1)))
    chars, extra = {}, 0
    for b in range(256):  # GPT-2's bytes_to_unicode
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    tokens = [chars[b] for b in range(256)] + [f"[PAD{i}]" for i in range(256, size)]
    types_ = [gguf.TokenType.NORMAL] * 256 + [gguf.TokenType.UNUSED] * (size - 256)
    self.gguf_writer.add_tokenizer_model("gpt2")
    self.gguf_writer.add_tokenizer_pre("default")
    self.gguf_writer.add_token_list(tokens)
    self.gguf_writer.add_token_types(types_)
    self.gguf_writer.add_token_merges([f"{chars[32]} {chars[32]}"])
    for key, add in (("bos_token_id", self.gguf_writer.add_bos_token_id),
                     ("eos_token_id", self.gguf_writer.add_eos_token_id)):
        if self.hparams.get(key) is not None:
            add(self.hparams[key])


for cls in (kimi_linear.KimiLinearModel, kimi_k3.KimiK3Model, deepseek.DeepseekV4Model):
    cls.set_vocab = set_vocab_bytes

# 4. DeepSeek-V4: F32 in place of its forced Q8_0 / BF16.
force_quant = deepseek.DeepseekV4Model.tensor_force_quant


def tensor_force_quant_f32(self, name, new_name, bid, n_dims):
    qtype = force_quant(self, name, new_name, bid, n_dims)
    if qtype in (gguf.GGMLQuantizationType.Q8_0, gguf.GGMLQuantizationType.BF16):
        return gguf.GGMLQuantizationType.F32
    return qtype


deepseek.DeepseekV4Model.tensor_force_quant = tensor_force_quant_f32


# 5. On request: weights rewritten so that llama.cpp's graph computes the
# release's function (tests/peer/family_oracle_test.py says where and why).
if args.mla_norm_eps is not None:
    # Kimi-Linear, Kimi-K3: llama.cpp normalises the MLA latents (c_kv, and K3's
    # c_q) with rms_norm_eps, the release with its RMSNorm's default 1e-6.
    # RMSNorm(s*x, eps) = RMSNorm(x, eps / s^2), so the latent's rows of
    # kv_a_proj_with_mqa (and q_a_proj) times s = sqrt(rms_norm_eps / eps) make
    # llama.cpp's norm the release's.
    def latent_rows(modify_tensors):
        def modify(self, data_torch, name, bid):
            rows = {".self_attn.kv_a_proj_with_mqa.weight": self.hparams["kv_lora_rank"],
                    ".self_attn.q_a_proj.weight": self.hparams.get("q_lora_rank")}
            for suffix, rank in rows.items():
                if name.endswith(suffix):
                    data_torch = data_torch.float().clone()
                    data_torch[:rank] *= (self.hparams["rms_norm_eps"] / args.mla_norm_eps) ** 0.5
            return modify_tensors(self, data_torch, name, bid)
        return modify

    for cls in (kimi_linear.KimiLinearModel, kimi_k3.KimiK3Model):
        cls.modify_tensors = latent_rows(cls.modify_tensors)

if args.indexer_head_dim is not None:
    # DeepSeek-V4: llama.cpp rotates the lightning indexer's q and k by a
    # Hadamard matrix of at least 64 x 64, so it needs index_head_dim % 64 == 0.
    # Each indexer head [nope | rope] becomes [nope | zeros | rope] of
    # args.indexer_head_dim: q.k is unchanged (the zeros meet zeros), RoPE still
    # takes the last qk_rope_head_dim, and the key compressor's RMSNorm over the
    # longer head sees the same mean square because its kv rows are scaled by
    # sqrt(new / old) and its weight by sqrt(old / new). The score scale
    # (head_dim^-0.5 in llama.cpp's weights) changes by a positive constant,
    # which leaves the top-k selection, the indexer's only output, unchanged.
    modify_v4 = deepseek.DeepseekV4Model.modify_tensors
    set_v4_parameters = deepseek.DeepseekV4Model.set_gguf_parameters

    def pad_heads(self, t, dim, heads, scale=1.0):
        old, new = self.hparams["index_head_dim"], args.indexer_head_dim
        rope = self.hparams["qk_rope_head_dim"]
        t = t.float().movedim(dim, 0)
        src = t.reshape(heads, old, *t.shape[1:]) * scale
        out = torch.zeros(heads, new, *t.shape[1:], dtype=torch.float32)
        out[:, :old - rope] = src[:, :old - rope]
        out[:, new - rope:] = src[:, old - rope:]
        return out.reshape(heads * new, *t.shape[1:]).movedim(0, dim).contiguous()

    def modify_tensors_indexer(self, data_torch, name, bid):
        old, new = self.hparams["index_head_dim"], args.indexer_head_dim
        if ".attn.indexer." in name:
            if name.endswith(".indexer.wq_b.weight"):
                data_torch = pad_heads(self, data_torch, 0, self.hparams["index_n_heads"])
            elif name.endswith(".indexer.compressor.wkv.weight"):
                data_torch = pad_heads(self, data_torch, 0, 2, (new / old) ** 0.5)
            elif name.endswith(".indexer.compressor.wgate.weight"):
                data_torch = pad_heads(self, data_torch, 0, 2)
            elif name.endswith(".indexer.compressor.ape"):
                data_torch = pad_heads(self, data_torch, 1, 2)
            elif name.endswith(".indexer.compressor.norm.weight"):
                data_torch = pad_heads(self, data_torch, 0, 1, (old / new) ** 0.5)
        return modify_v4(self, data_torch, name, bid)

    def set_gguf_parameters_indexer(self):
        self.hparams["index_head_dim"] = args.indexer_head_dim  # after the tensors
        set_v4_parameters(self)

    deepseek.DeepseekV4Model.modify_tensors = modify_tensors_indexer
    deepseek.DeepseekV4Model.set_gguf_parameters = set_gguf_parameters_indexer

sys.argv = ["convert_hf_to_gguf.py", args.fixture, "--outtype", "f32", "--outfile", args.out, "--no-lazy"]
runpy.run_path(os.path.join(args.source, "convert_hf_to_gguf.py"), run_name="__main__")
