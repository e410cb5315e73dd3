#!/usr/bin/python3
"""GLM-5.3-Flash's one outside check: its official FP8 layout against an F32 twin (issue 44).

llama.cpp, the outside oracle of the other families, knows no `glm5_next` (README, "Outside oracles"). What an
outside party does fix for GLM-5.3-Flash is how the release stores it: zai-org/GLM-5.3-Flash is FP8, and its
config.json (tests/configs/glm5_next_flash_fp8.config.json) says how, in `quantization_config`. This script:

1. writes the golden fixture `glm5_next_bf16`'s model in that release layout: every linear weight the release
   quantizes as `<module>.weight` F8_E4M3 plus `<module>.weight_scale_inv` F32, one scale per 128x128 block
   (the DeepSeek V3 layout, the names and dtypes the release's own safetensors headers show), the rest as the
   fixture stores it (BF16; F32 for the mHC, KDA decay and router bias vectors), and the release's
   `quantization_config` verbatim in config.json. Which weights are FP8 follows the release's
   `modules_to_not_convert`, matched as transformers' `should_convert_module` does, after mapping each fixture
   layer to a release layer of the same kind (see FP8 LAYOUT below);
2. writes the F32 twin: every weight of that layout decoded by this reference (`models.dequant_fp8_block`,
   `models.bf16_bits_to_f32`), stored F32, with the fixture's config (no `quantization_config`);
3. converts both with `computed convert` (default options: FP8 kept native) and runs `computed logits
   --activations f32` and `--greedy 8` on both: every logit within 1e-4, the same argmax at every position, the
   same greedy tokens;
4. anchors the twin outside WARP: the Python reference (glm5_next.Model) on the twin's weights gives the same
   logits within 1e-4 and the same argmaxes, and the same 8 greedy tokens.

  glm5_fp8_twin_test.py --computed BUILD/bin/computed [--keep DIR]

FP8 LAYOUT. The release's `modules_to_not_convert` names text layers as `model.layers.N.*`, while its tensors are
`model.language_model.layers.N.*` (the release's tensor index: `model.language_model.layers.0.self_attn.q_proj.
weight` BF16, listed as not converted; `model.language_model.layers.3.mlp.experts.0.down_proj.weight` F8_E4M3 +
`.weight_scale_inv` F32 [32, 16], not listed). So a fixture tensor is looked up as `model.` + its text-model
name, in the first release layer whose (attention, MLP) kinds are the fixture layer's (the MTP layer: the
release's MTP layer). Per kind, the release converts:
  KDA attention: nothing (q/k/v, conv, f/g/b projections and o_proj stay BF16);
  DSA attention: q_a_proj, q_b_proj, kv_a_proj_with_mqa, o_proj (not kv_b_proj, not the indexer);
  dense MLP: gate/up/down_proj; MoE: every expert and the shared expert (not the router `mlp.gate`);
  never: embed_tokens, lm_head, norms, hc_* (mHC), the MTP layer's eh_proj.
"""

from __future__ import annotations

import time

START = time.monotonic()  # the time printed includes importing torch

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import glm5_next as G  # noqa: E402
import models as M  # noqa: E402
from make_fixtures import write_safetensors  # noqa: E402

ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "glm5_next_bf16")
RELEASE_CONFIG = os.path.join(ROOT, "tests", "configs", "glm5_next_flash_fp8.config.json")
TOLERANCE = 1e-4
GREEDY = 8
BLOCK = 128


def fail(message: str):
    sys.exit(f"FAILED: glm5_fp8_twin_test: {message}")


# ---------------------------------------------------------------------------
# Which weights the release quantizes
# ---------------------------------------------------------------------------


class NotConverted:
    """transformers `quantizers/quantizers_utils.py` should_convert_module over `modules_to_not_convert`: a
    module stays unconverted when a pattern regex-matches at its start (`key\\.` or `key`) or ends it. The
    1509 patterns are compiled once (re's own cache holds 512)."""

    def __init__(self, patterns):
        self.patterns = [(re.compile(f"{key}\\."), re.compile(key), key) for key in patterns]

    def should_convert(self, full_name: str) -> bool:
        return not any(dot.match(full_name) or bare.match(full_name) or full_name.endswith(key)
                       for dot, bare, key in self.patterns)


def release_layer_map(fixture_tc: dict, release_tc: dict) -> dict:
    """fixture layer -> the first release layer with the same (attention, MLP) kinds; the MTP layer (index
    num_hidden_layers) -> the release's MTP layer."""
    f_att, f_mlp = G.layer_types(fixture_tc), G.mlp_layer_types(fixture_tc)
    r_att, r_mlp = G.layer_types(release_tc), G.mlp_layer_types(release_tc)
    out = {}
    for i in range(fixture_tc["num_hidden_layers"]):
        same = [j for j in range(release_tc["num_hidden_layers"]) if (r_att[j], r_mlp[j]) == (f_att[i], f_mlp[i])]
        if not same:
            fail(f"fixture layer {i} ({f_att[i]}, {f_mlp[i]}) has no release layer of its kinds")
        out[i] = same[0]
    out[fixture_tc["num_hidden_layers"]] = release_tc["num_hidden_layers"]
    return out


def release_module(name: str, layer_map: dict) -> str:
    """A fixture tensor's module (name without `.weight`) as the release's modules_to_not_convert names it."""
    module = name[:-len(".weight")]
    if module.startswith(G.PREFIX):
        rest = module[len(G.PREFIX):]
        m = re.match(r"layers\.(\d+)\.(.*)", rest)
        if m:
            rest = f"layers.{layer_map[int(m.group(1))]}.{m.group(2)}"
        module = "model." + rest
    return module


def is_fp8(name: str, shape, layer_map: dict, not_converted: NotConverted) -> bool:
    """A linear layer's weight (2-D `.weight`) that modules_to_not_convert does not exempt."""
    if not name.endswith(".weight") or len(shape) != 2 or name.startswith("model.visual."):
        return False
    return not_converted.should_convert(release_module(name, layer_map))


# ---------------------------------------------------------------------------
# The two checkpoints
# ---------------------------------------------------------------------------


def quantize_fp8_block(a: np.ndarray):
    """float32 [rows, cols] -> (E4M3 codes uint8 [rows, cols], scale_inv F32 [ceil(rows/128), ceil(cols/128)]),
    scale_inv = amax / 448 per block (the release's weight_scale_inv multiplies the decoded codes)."""
    rows, cols = a.shape
    nr, nc = -(-rows // BLOCK), -(-cols // BLOCK)
    scale = np.ones((nr, nc), dtype=np.float32)
    codes = np.zeros((rows, cols), dtype=np.uint8)
    for bi in range(nr):
        for bj in range(nc):
            blk = a[bi * BLOCK:(bi + 1) * BLOCK, bj * BLOCK:(bj + 1) * BLOCK]
            amax = float(np.abs(blk).max())
            s = np.float32(amax / 448.0) if amax > 0 else np.float32(1.0)
            scale[bi, bj] = s
            codes[bi * BLOCK:(bi + 1) * BLOCK, bj * BLOCK:(bj + 1) * BLOCK] = M.f32_to_e4m3(blk / s)
    return codes, scale


def write_checkpoints(work: str):
    """-> (FP8 dir, twin dir, twin config, twin weights {name: float32 tensor} without the MTP layer, names of
    the F8_E4M3 tensors, fixture layer -> release layer)."""
    with open(os.path.join(FIXTURE, "config.json")) as f:
        config = json.load(f)
    with open(RELEASE_CONFIG) as f:
        release = json.load(f)
    q = release["quantization_config"]
    assert q["quant_method"] == "fp8" and q["weight_block_size"] == [BLOCK, BLOCK] and q["fmt"] == "e4m3", q
    layer_map = release_layer_map(G.text_config(config), G.text_config(release))
    raw = M.read_safetensors(os.path.join(FIXTURE, "model.safetensors"))
    not_converted = NotConverted(q["modules_to_not_convert"])

    fp8, twin, fp8_names = {}, {}, []
    for name, (dtype, shape, data) in raw.items():
        if dtype == "BF16":
            bits = np.frombuffer(data, dtype="<u2").reshape(shape)
            values = M.bf16_bits_to_f32(bits)
        elif dtype == "F32":
            values = np.frombuffer(data, dtype="<f4").reshape(shape).astype(np.float32)
        else:
            fail(f"{name}: fixture dtype {dtype} not expected")
        if is_fp8(name, shape, layer_map, not_converted):
            codes, scale = quantize_fp8_block(values)
            fp8[name] = ("F8_E4M3", codes)
            fp8[name + "_scale_inv"] = ("F32", scale)
            fp8_names.append(name)
            # the twin: the reference's own decode of what the FP8 file holds
            values = M.dequant_fp8_block(codes, scale, (BLOCK, BLOCK))
        else:
            fp8[name] = (dtype, bits if dtype == "BF16" else values)
        twin[name] = ("F32", np.ascontiguousarray(values, dtype=np.float32))

    fp8_dir, twin_dir = os.path.join(work, "glm5_next_fp8"), os.path.join(work, "glm5_next_f32_twin")
    os.makedirs(fp8_dir)
    os.makedirs(twin_dir)
    write_safetensors(os.path.join(fp8_dir, "model.safetensors"), fp8)
    write_safetensors(os.path.join(twin_dir, "model.safetensors"), twin)
    fp8_config = dict(config)
    fp8_config["quantization_config"] = q
    with open(os.path.join(fp8_dir, "config.json"), "w") as f:
        json.dump(fp8_config, f, indent=2)
    twin_config = {k: v for k, v in config.items() if k != "quantization_config"}
    with open(os.path.join(twin_dir, "config.json"), "w") as f:
        json.dump(twin_config, f, indent=2)
    weights = {k: torch.from_numpy(v[1].copy()) for k, v in twin.items()
               if not G.is_skipped(k, G.text_config(config)["num_hidden_layers"])}
    return fp8_dir, twin_dir, twin_config, weights, fp8_names, layer_map


# ---------------------------------------------------------------------------
# WARP
# ---------------------------------------------------------------------------


def run(cmd):
    """cmd's stdout; fails on a non-zero exit. The binary may vanish for a moment while the tree rebuilds: a
    missing or busy executable is retried for up to 30 s."""
    for attempt in range(31):
        try:
            result = subprocess.run(cmd, capture_output=True, text=True)
            break
        except OSError as e:  # FileNotFoundError, or ETXTBSY while the linker writes it
            if attempt == 30:
                fail(f"{cmd[0]}: {e}")
            time.sleep(1)
    if result.returncode != 0:
        fail(f"{' '.join(cmd)} exited {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result.stdout


def container_formats(warp: str):
    """-> ({trunk tensor: format}, [format of every expert matrix]) from a container's manifest."""
    with open(os.path.join(warp, "manifest.json")) as f:
        manifest = json.load(f)
    trunk = {t["name"]: t["format"] for t in manifest["trunk"]["tensors"]}
    experts = [m["format"] for bank in manifest["banks"] for m in bank["matrices"]]
    return trunk, experts


def warp_logits(computed: str, source: str, tokens: str, n_prompt: int):
    """Convert `source` (default options), run the prompt with f32 activations, then GREEDY tokens.
    -> (prompt logits [n_prompt, vocab], logits of the GREEDY - 1 decode steps, greedy tokens)."""
    warp = source + ".warp"
    run([computed, "convert", "--quiet", source, warp])
    out, decode_out = warp + ".logits", warp + ".decode"
    continuation = run([computed, "logits", warp, "--tokens", tokens, "--out", out, "--activations", "f32",
                        "--greedy", str(GREEDY), "--decode-out", decode_out]).strip()
    logits, decode = np.fromfile(out, dtype="<f4"), np.fromfile(decode_out, dtype="<f4")
    if logits.size % n_prompt != 0 or decode.size * n_prompt != logits.size * (GREEDY - 1):
        fail(f"{out}: {logits.size} floats, {decode_out}: {decode.size}; expected {n_prompt} and "
             f"{GREEDY - 1} rows of the vocabulary")
    return (logits.reshape(n_prompt, -1), decode.reshape(GREEDY - 1, -1),
            [int(t) for t in continuation.replace(",", " ").split()])


def check_containers(fp8_warp: str, twin_warp: str, fp8_names, config: dict):
    """The default convert keeps every FP8 matrix of the release native (f8_e4m3_b128), and the twin all F32.
    -> (problems, FP8 trunk matrices, FP8 expert matrices)."""
    tc = G.text_config(config)
    used = [k for k in fp8_names if not G.is_skipped(k, tc["num_hidden_layers"])]  # the MTP layer is skipped
    want_trunk = [k for k in used if ".mlp.experts." not in k]
    n_experts = len(used) - len(want_trunk)
    problems = []
    trunk, experts = container_formats(fp8_warp)
    wrong = [k for k in want_trunk if trunk.get(k) != "f8_e4m3_b128"]
    if wrong or len(want_trunk) != sum(f == "f8_e4m3_b128" for f in trunk.values()):
        problems.append(f"FP8 container: trunk matrices not kept as f8_e4m3_b128: {wrong} (of {len(want_trunk)})")
    # one bank record holds one expert's matrices: `experts` lists them once per MoE layer
    if set(experts) != {"f8_e4m3_b128"} or n_experts != len(experts) * tc["n_routed_experts"]:
        problems.append(f"FP8 container: expert matrices {sorted(set(experts))}, {len(experts)} per expert, "
                        f"for {n_experts} FP8 expert matrices in the checkpoint")
    twin_trunk, twin_experts = container_formats(twin_warp)
    if set(twin_trunk.values()) | set(twin_experts) != {"f32"}:
        problems.append(f"F32 twin container: formats {sorted(set(twin_trunk.values()) | set(twin_experts))}")
    return problems, len(want_trunk), n_experts


def compare(what: str, a: np.ndarray, b: np.ndarray, problems: list) -> float:
    """Max |a - b|; a problem unless it is <= TOLERANCE with the same argmax in every row."""
    if a.shape != b.shape:
        problems.append(f"{what}: shapes {a.shape} and {b.shape}")
        return np.inf
    d = float(np.abs(a - b).max())
    if not d <= TOLERANCE:
        problems.append(f"{what}: max |dlogit| {d:.3g} > {TOLERANCE}")
    rows = np.nonzero(a.argmax(-1) != b.argmax(-1))[0].tolist()
    if rows:
        problems.append(f"{what}: argmax differs in rows {rows}")
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--computed", required=True)
    ap.add_argument("--keep", help="write the checkpoints and containers here and keep them")
    args = ap.parse_args()
    torch.set_num_threads(1)
    work = args.keep or tempfile.mkdtemp(prefix="glm5_fp8_twin.")
    if args.keep:
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
    try:
        problems = run_checks(args.computed, work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if problems:
        fail("\n  ".join(problems))
    print("OK")


def run_checks(computed: str, work: str):
    fp8_dir, twin_dir, config, weights, fp8_names, layer_map = write_checkpoints(work)
    with open(os.path.join(FIXTURE, "tokens.txt")) as f:
        tokens = f.read().strip()
    ids = [int(t) for t in tokens.split(",")]
    n = len(ids)
    fp8_logits, fp8_decode, fp8_greedy = warp_logits(computed, fp8_dir, tokens, n)
    twin_logits, twin_decode, twin_greedy = warp_logits(computed, twin_dir, tokens, n)
    problems, n_trunk, n_experts = check_containers(fp8_dir + ".warp", twin_dir + ".warp", fp8_names, config)

    d_prompt = compare("FP8 layout vs F32 twin, prompt", fp8_logits, twin_logits, problems)
    d_decode = compare("FP8 layout vs F32 twin, decode steps", fp8_decode, twin_decode, problems)
    if fp8_greedy != twin_greedy or len(fp8_greedy) != GREEDY:
        problems.append(f"greedy {GREEDY}: FP8 layout {fp8_greedy}, F32 twin {twin_greedy}")

    # the twin anchored outside WARP: the Python reference on the same F32 weights
    reference_start = time.monotonic()
    model = G.Model(config, weights)
    with torch.no_grad():
        ref_logits = model.forward(ids).numpy()
        ref_greedy = model.greedy(ids, GREEDY)
    reference_time = time.monotonic() - reference_start
    d_ref = compare("F32 twin: WARP vs the Python reference", twin_logits, ref_logits, problems)
    if twin_greedy != ref_greedy:
        problems.append(f"greedy {GREEDY}: WARP {twin_greedy}, the Python reference {ref_greedy}")

    # the FP8 layout is no no-op: it moves the model away from the BF16 fixture's logits
    golden = np.fromfile(os.path.join(FIXTURE, "logits.f32"), dtype="<f4").reshape(n, -1)
    d_golden = float(np.abs(twin_logits - golden).max())
    if d_golden <= TOLERANCE:
        problems.append(f"the FP8 layout moved the logits by only {d_golden:.3g}: no FP8 matrix took effect")

    print(f"glm5_next, the release's FP8 layout: {len(fp8_names)} F8_E4M3 matrices + F32 weight_scale_inv "
          f"(fixture layer -> release layer {layer_map}); WARP keeps {n_trunk} trunk + {n_experts} expert "
          f"matrices as f8_e4m3_b128 (the MTP layer's are skipped)")
    print(f"  WARP, FP8 layout vs F32 twin: max |dlogit| {d_prompt:.3g} over {n} prompt positions, "
          f"{d_decode:.3g} over {GREEDY - 1} decode steps; greedy {fp8_greedy}")
    print(f"  F32 twin, WARP vs the Python reference: max |dlogit| {d_ref:.2e}; greedy {ref_greedy}")
    print(f"  (FP8 rounding moves the logits by up to {d_golden:.3g} from the BF16 fixture's)")
    print(f"  time: {time.monotonic() - START:.2f} s, of which the Python reference {reference_time:.2f} s")
    return problems


if __name__ == "__main__":
    main()
