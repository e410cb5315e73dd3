#!/usr/bin/python3
"""Reproduces the KJV demo model: text -> BPE tokenizer -> DeepSeek-V3 MoE -> HF checkpoint.

    /usr/bin/python3 tests/demo_model/train.py [--threads 1] [--steps 600]

Writes tests/demo_model/kjv-moe/ (config, bf16 safetensors, tokenizer, generation config),
kjv-moe/reference/ (prompt, greedy ids/text/margins from ReferenceModel), training_log.tsv
and samples.txt. Intermediates (the extracted bible text, token cases) live in a temp dir
under /tmp that is deleted at the end. Deterministic: fixed seeds, fixed thread count.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
import bpe_tokenizer as bpe  # noqa: E402
import make_fixtures  # noqa: E402  (write_safetensors)
import models as ref  # noqa: E402
import moe_model  # noqa: E402

OUT = os.path.join(HERE, "kjv-moe")
VERSE_RE = re.compile(r"^(\d?[A-Za-z]+)(\d+):(\d+) (.*)$")
PROMPTS = ["In the beginning God created", "And the LORD said unto Moses,", "The LORD is my shepherd;",
           "And it came to pass"]

CONFIG = {
    **make_fixtures.DS_BASE,
    "hidden_size": 192,
    "num_hidden_layers": 4,
    "intermediate_size": 512,
    "moe_intermediate_size": 64,
    "q_lora_rank": 64,
    "kv_lora_rank": 64,
    "qk_nope_head_dim": 32,
    "qk_rope_head_dim": 16,
    "v_head_dim": 32,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "n_routed_experts": 32,
    "num_experts_per_tok": 4,
    "n_group": 4,
    "topk_group": 2,
    "n_shared_experts": 1,
    "first_k_dense_replace": 1,
    "routed_scaling_factor": 2.5,
    "max_position_embeddings": 512,
    "rope_theta": 10000.0,
    "rope_scaling": None,
    "torch_dtype": "bfloat16",
}


def extract_kjv():
    """-> list of chapters, each a list of verse strings (references stripped)."""
    if shutil.which("bible") is None:
        sys.exit("train.py: the `bible` program is missing; install the Debian packages "
                 "bible-kjv and bible-kjv-text (apt-get install bible-kjv bible-kjv-text)")
    raw = subprocess.run(["bible", "-f", "Gen1:1-Rev22:21"], check=True, capture_output=True, text=True).stdout
    chapters, key = [], None
    for n, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        m = VERSE_RE.match(line)
        if not m:
            sys.exit(f"train.py: bible output line {n} is not '<Book><chapter>:<verse> text': {line[:80]!r}")
        if (m.group(1), m.group(2)) != key:
            key = (m.group(1), m.group(2))
            chapters.append([])
        chapters[-1].append(m.group(4).strip())
    n_verses = sum(map(len, chapters))
    if n_verses != 31102 or len(chapters) != 1189:
        sys.exit(f"train.py: expected 31102 verses in 1189 chapters from `bible`, got {n_verses} in {len(chapters)}")
    return chapters


def chat_pair(verse: str):
    """Splits a verse into (first part, rest) at the clause mark nearest the middle."""
    words = verse.split()
    if len(words) < 8:
        return None
    mid = len(words) / 2
    cands = [i for i, w in enumerate(words[:-2]) if i >= 2 and w[-1] in ",;:"]
    cut = min(cands, key=lambda i: abs(i + 1 - mid)) + 1 if cands else int(mid)
    return " ".join(words[:cut]), " ".join(words[cut:])


def chat_text(tok, user: str, assistant: str) -> str:
    # Training form: the template's rendering, then <|eos|> after the final <|end|>.
    return tok.render_chat([{"role": "user", "content": user}, {"role": "assistant", "content": assistant}], False) + "<|eos|>"


def build_data(chapters, tok, rng):
    held = {i for i in range(len(chapters)) if i % 40 == 7}
    train_ids, held_ids, chats = [], [], []
    for i, ch in enumerate(chapters):
        ids = tok.encode("\n".join(ch) + "\n\n", specials=False)
        (held_ids if i in held else train_ids).extend(ids)
        if i not in held:
            for v in ch:
                pr = chat_pair(v)
                if pr:
                    chats.append(tok.encode(chat_text(tok, *pr)))
    order = rng.permutation(len(chats))
    chat_ids = [t for j in order for t in chats[j]]
    return (torch.tensor(train_ids), torch.tensor(held_ids), torch.tensor(chat_ids), len(chats))


def batch(stream, chat_stream, B, S, g, chat_frac):
    rows = []
    for _ in range(B):
        src = chat_stream if torch.rand((), generator=g).item() < chat_frac else stream
        o = int(torch.randint(0, len(src) - S - 1, (), generator=g))
        rows.append(src[o:o + S + 1])
    x = torch.stack(rows)
    return x[:, :-1], x[:, 1:]


def balance_loss(routing, K, E):
    """DeepSeek-V3 sequence-wise balance loss: sum_e f_e * P_e, averaged over layers and sequences."""
    tot = 0.0
    for idx, s in routing:
        B, S, _ = idx.shape
        f = torch.zeros(B, E).scatter_add_(1, idx.reshape(B, -1), torch.ones(B, S * K)) * (E / (K * S))
        p = (s / s.sum(-1, keepdim=True)).mean(1)
        tot = tot + (f * p).sum(-1).mean()
    return tot / len(routing)


@torch.no_grad()
def heldout_loss(model, held, S, n=8):
    starts = torch.linspace(0, len(held) - S - 2, n).long().tolist()
    x = torch.stack([held[o:o + S + 1] for o in starts])
    logits, _ = model(x[:, :-1])
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1)).item()


def train(model, data, a, log_path):
    train_ids, held_ids, chat_ids, _ = data
    c = model.c
    E, K = c["n_routed_experts"], c["num_experts_per_tok"]
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    nodecay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": nodecay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95))
    g = torch.Generator().manual_seed(a.seed + 1)
    t0 = time.time()
    log = open(log_path, "w")
    log.write("step\ttrain_loss\theldout_loss\tlr\tseconds\n")
    acc, nacc = 0.0, 0
    moe_layers = [l.moe for l in model.layers if l.moe is not None]
    for step in range(1, a.steps + 1):
        lr = a.lr * min(1.0, step / a.warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, step / a.steps))))
        for grp in opt.param_groups:
            grp["lr"] = lr
        x, y = batch(train_ids, chat_ids, a.batch, a.seq_len, g, a.chat_frac)
        logits, routing = model(x)
        lm = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss = lm + a.balance_alpha * balance_loss(routing, K, E)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        with torch.no_grad():  # auxiliary-loss-free balancing (DeepSeek-V3 section 2.1.2)
            for moe, (idx, _) in zip(moe_layers, routing):
                load = torch.bincount(idx.reshape(-1), minlength=E).float()
                moe.bias += a.bias_gamma * torch.sign(load.mean() - load)
        acc += lm.item()
        nacc += 1
        if step % a.log_every == 0 or step == a.steps or step == 1:
            hl = heldout_loss(model, held_ids, a.seq_len)
            line = f"{step}\t{acc / nacc:.4f}\t{hl:.4f}\t{lr:.6f}\t{time.time() - t0:.1f}"
            log.write(line + "\n")
            log.flush()
            print(line, flush=True)
            acc, nacc = 0.0, 0
    log.close()
    return time.time() - t0


def export(model, tok):
    """bf16 checkpoint + config + tokenizer files; returns the bf16-rounded f32 weights."""
    os.makedirs(OUT, exist_ok=True)
    cfg = dict(model.c)
    stored, deq = make_fixtures.to_storage(model.hf_state(), "bf16")
    make_fixtures.write_safetensors(os.path.join(OUT, "model.safetensors"), stored)
    with open(os.path.join(OUT, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    gen = {"bos_token_id": cfg["bos_token_id"], "eos_token_id": [cfg["eos_token_id"], tok.token_id("<|end|>")],
           "do_sample": False}
    with open(os.path.join(OUT, "generation_config.json"), "w") as f:
        json.dump(gen, f, indent=2)
        f.write("\n")
    tok.save(OUT)
    return deq


def check_js(tok, chapters, tmp):
    verses = [v for ch in chapters[::37] for v in ch[:3]]
    texts = ["\n".join(verses[i:i + 4]) for i in range(0, len(verses), 4)]
    texts += [PROMPTS[0], chat_text(tok, *chat_pair(chapters[0][1])), "Hello, world! 1234 -- it's 12:30.\n\n  x"]
    msgs = [{"role": "user", "content": "In the beginning"}, {"role": "assistant", "content": "God created"},
            {"role": "user", "content": "And the earth"}]
    cases = {"texts": texts, "ids": [tok.encode(t) for t in texts],
             "chat": {"messages": msgs, "add_generation_prompt": True, "rendered": tok.render_chat(msgs, True)}}
    path = os.path.join(tmp, "cases.json")
    with open(path, "w") as f:
        json.dump(cases, f)
    r = subprocess.run(["node", os.path.join(HERE, "check_tokenizer.mjs"), OUT, path], capture_output=True, text=True)
    print("JS tokenizer check:", (r.stdout + r.stderr).strip(), flush=True)
    if r.returncode != 0:
        sys.exit("train.py: the JS tokenizer disagrees with bpe_tokenizer.py")


def check_equivalence(model, cfg, weights, seqs):
    """Logits of the batched module vs ReferenceModel on the saved (bf16) weights."""
    R = ref.ReferenceModel(cfg, weights)
    model.load_hf_state(weights)
    worst = 0.0
    with torch.no_grad():
        for s in seqs:
            mine, _ = model(torch.tensor([s]))
            worst = max(worst, (mine[0] - R.forward(s)).abs().max().item())
    print(f"module vs ReferenceModel: max |dlogit| = {worst:.3g} over {len(seqs)} sequences", flush=True)
    if worst > 1e-3:
        sys.exit("train.py: the training module and ReferenceModel disagree")
    return worst


def reference_greedy(cfg, weights, tok, n=32):
    """Greedy continuation by ReferenceModel (full recompute per step); picks a robust prompt."""
    R = ref.ReferenceModel(cfg, weights)
    best = None
    for prompt in PROMPTS:
        ids = tok.encode(prompt, specials=False)
        seq, margins, route_margin = list(ids), [], math.inf
        for _ in range(n):
            logits = R.forward(seq)[-1]
            top2 = torch.topk(logits, 2).values
            margins.append(float(top2[0] - top2[1]))
            route_margin = min([route_margin] + [float(t["margin"].min()) for t in R.trace])
            seq.append(int(torch.argmax(logits)))
        res = (prompt, ids, seq[len(ids):], margins, route_margin)
        print(f"prompt {prompt!r}: min greedy margin {min(margins):.4f}, min routing margin {route_margin:.2e}")
        if best is None or min(margins) > min(best[3]):
            best = res
        if min(margins) >= 0.05:
            break
    prompt, ids, greedy, margins, route_margin = best
    d = os.path.join(OUT, "reference")
    os.makedirs(d, exist_ok=True)
    files = {"prompt.txt": prompt, "prompt_ids.txt": ",".join(map(str, ids)),
             "greedy_ids.txt": ",".join(map(str, greedy)), "greedy.txt": tok.decode(greedy),
             "greedy_margins.txt": "\n".join(f"{m:.6f}" for m in margins)}
    for name, text in files.items():
        with open(os.path.join(d, name), "w") as f:
            f.write(text + "\n")
    return best


@torch.no_grad()
def generate(model, ids, n, stop=(), temperature=0.0, g=None):
    seq = list(ids)
    for _ in range(n):
        logits = model(torch.tensor([seq[-model.c["max_position_embeddings"]:]]))[0][0, -1]
        if temperature <= 0:
            nxt = int(torch.argmax(logits))
        else:
            v, i = torch.topk(logits / temperature, 40)
            nxt = int(i[torch.multinomial(torch.softmax(v, -1), 1, generator=g)])
        seq.append(nxt)
        if nxt in stop:
            break
    return seq[len(ids):]


def write_samples(model, tok, path):
    g = torch.Generator().manual_seed(7)
    out = []
    for p in PROMPTS[:3]:
        out.append(f"== greedy: {p!r}\n{p}{tok.decode(generate(model, tok.encode(p), 64))}\n")
    for p in PROMPTS[:2]:
        for k in range(2):
            gen = generate(model, tok.encode(p), 64, temperature=0.8, g=g)
            out.append(f"== sampled (T=0.8, top-k 40, seed 7): {p!r}\n{p}{tok.decode(gen)}\n")
    stop = (tok.token_id("<|end|>"), tok.token_id("<|eos|>"))
    for user in ["The LORD is my shepherd;", "Blessed are the poor in spirit:"]:
        prompt = tok.render_chat([{"role": "user", "content": user}], True)
        ans = tok.decode(generate(model, tok.encode(prompt), 48, stop=stop))
        out.append(f"== chat (greedy)\n{prompt}{ans}\n")
    with open(path, "w") as f:
        f.write("\n".join(out))
    print("".join(out), flush=True)


@torch.no_grad()
def expert_load(model, held, S):
    """Per-MoE-layer expert load over held-out text: (min/mean, max/mean, coefficient of variation)."""
    E = model.c["n_routed_experts"]
    counts = None
    for o in range(0, len(held) - S - 1, S * 8):
        _, routing = model(held[o:o + S].view(1, S))
        c = torch.stack([torch.bincount(idx.reshape(-1), minlength=E).float() for idx, _ in routing])
        counts = c if counts is None else counts + c
    res = []
    for i, c in enumerate(counts):
        m = c.mean()
        res.append((i + model.c["first_k_dense_replace"], float(c.min() / m), float(c.max() / m), float(c.std() / m)))
        print(f"layer {res[-1][0]}: expert load min/mean {res[-1][1]:.2f} max/mean {res[-1][2]:.2f} cv {res[-1][3]:.3f}")
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--chat-frac", type=float, default=0.1)
    ap.add_argument("--bias-gamma", type=float, default=2e-3)
    ap.add_argument("--balance-alpha", type=float, default=1e-3)
    ap.add_argument("--vocab-size", type=int, default=4096)
    ap.add_argument("--log-every", type=int, default=25)
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = np.random.default_rng(a.seed)
    t_start = time.time()
    tmp = tempfile.mkdtemp(prefix="kjv-moe-", dir="/tmp")
    try:
        chapters = extract_kjv()
        tokens, merges = bpe.train_bpe((v for ch in chapters for v in ch), a.vocab_size)
        tok = bpe.BPETokenizer(tokens, merges)
        print(f"tokenizer: vocab {tok.vocab_size}, {len(merges)} merges", flush=True)
        cfg = dict(CONFIG, vocab_size=tok.vocab_size, bos_token_id=tok.token_id("<|bos|>"),
                   eos_token_id=tok.token_id("<|eos|>"))
        data = build_data(chapters, tok, rng)
        print(f"tokens: train {len(data[0])}, held-out {len(data[1])}, chat {len(data[2])} ({data[3]} exchanges)")
        model = moe_model.DeepseekV3LM(cfg)
        n_params = sum(p.numel() for p in model.parameters())
        print(f"parameters: {n_params}", flush=True)
        secs = train(model, data, a, os.path.join(HERE, "training_log.tsv"))
        print(f"training: {secs:.0f} s", flush=True)
        weights = export(model, tok)
        check_js(tok, chapters, tmp)
        # From here on the module holds the bf16-rounded weights, like the checkpoint.
        weights = ref.load_checkpoint(OUT)[1]
        seqs = [tok.encode(PROMPTS[0]), data[1][:128].tolist(), tok.encode(chat_text(tok, *chat_pair(chapters[5][3])))]
        check_equivalence(model, cfg, weights, seqs)
        print(f"held-out loss (bf16 weights): {heldout_loss(model, data[1], a.seq_len, 32):.4f}")
        expert_load(model, data[1], a.seq_len)
        prompt, ids, greedy, margins, rm = reference_greedy(cfg, weights, tok)
        print(f"reference: {prompt!r} -> {tok.decode(greedy)!r} (min margin {min(margins):.4f})")
        write_samples(model, tok, os.path.join(HERE, "samples.txt"))
        print(f"total: {time.time() - t_start:.0f} s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
