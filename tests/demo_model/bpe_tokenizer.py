#!/usr/bin/python3
"""Byte-level BPE tokenizer (GPT-2 style): trainer, encoder/decoder, HF tokenizer.json writer.

No third-party dependencies (standard library only). The saved tokenizer.json is a
real Hugging Face `tokenizers` file:

    normalizer     null
    pre_tokenizer  Sequence[Split(Regex PATTERN, Isolated), ByteLevel(add_prefix_space=false,
                   trim_offsets=true, use_regex=false)]
    model          BPE (vocab + merges as "a b" strings, byte_fallback false, ignore_merges false)
    post_processor null            (nothing is added: no BOS; the chat template adds it)
    decoder        ByteLevel

Pre-tokenizer pattern (PATTERN below):

    's|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]{1,3}| ?[^\\sA-Za-z0-9]+|\\s+(?!\\S)|\\s+

It is GPT-2's pattern with \\p{L} / \\p{N} replaced by ASCII classes, so it uses only
constructs that Python `re`, Oniguruma (HF tokenizers), JS RegExp (tokenizers.js) and
PCRE2 treat the same way. Non-ASCII letters fall into the `[^\\sA-Za-z0-9]+` branch (they
still round-trip byte-exactly; the KJV text is pure ASCII). Python's `re` in str mode
and the others agree on `\\s` for ASCII whitespace; the KJV and chat data contain only
space and newline.

Special tokens (added_tokens, special=true, matched before pre-tokenization, never
produced by merges): <|bos|> <|eos|> <|user|> <|assistant|> <|system|> <|end|>.
Ids: 0..255 are the 256 byte tokens (in byte order), then the merge results, then the
special tokens at the end of the vocabulary.

CLI:  bpe_tokenizer.py train CORPUS.txt OUT_DIR [--vocab-size 4096]
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import re
import sys
from collections import Counter
from typing import Dict, Iterable, List, Optional, Tuple

PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]{1,3}| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+"""
SPECIAL_TOKENS = ["<|bos|>", "<|eos|>", "<|user|>", "<|assistant|>", "<|system|>", "<|end|>"]
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}<|end|>"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
MODEL_MAX_LENGTH = 512

_PRE_RE = re.compile(PATTERN)
_SPECIAL_RE = re.compile("(" + "|".join(re.escape(s) for s in SPECIAL_TOKENS) + ")")


def bytes_to_unicode() -> Dict[int, str]:
    """GPT-2's reversible byte -> printable unicode character map."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTE_ENCODER = bytes_to_unicode()
BYTE_DECODER = {c: b for b, c in BYTE_ENCODER.items()}


def pretokenize(text: str) -> List[str]:
    return _PRE_RE.findall(text)


def token_str(b: bytes) -> str:
    return "".join(BYTE_ENCODER[x] for x in b)


# ---------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------


def train_bpe(texts: Iterable[str], vocab_size: int, min_frequency: int = 2) -> Tuple[List[bytes], List[Tuple[int, int]]]:
    """Learns merges until the vocabulary (256 bytes + merge results + specials) has vocab_size entries.

    Returns (id -> bytes for the non-special tokens, merges as (left id, right id) in rank order).
    Ties between equally frequent pairs break on the smaller (left id, right id): deterministic.
    """
    word_counts: Counter = Counter()
    for t in texts:
        word_counts.update(pretokenize(t))
    tokens: List[bytes] = [bytes([b]) for b in range(256)]
    index: Dict[bytes, int] = {b: i for i, b in enumerate(tokens)}
    words = [list(w.encode("utf-8")) for w in word_counts]
    freqs = list(word_counts.values())
    pair_counts: Counter = Counter()
    where: Dict[Tuple[int, int], set] = {}
    for wi, (w, f) in enumerate(zip(words, freqs)):
        for p in zip(w, w[1:]):
            pair_counts[p] += f
            where.setdefault(p, set()).add(wi)
    heap = [(-c, p) for p, c in pair_counts.items()]
    heapq.heapify(heap)
    merges: List[Tuple[int, int]] = []
    target = vocab_size - len(SPECIAL_TOKENS)
    while len(tokens) < target and heap:
        negc, pair = heapq.heappop(heap)
        if pair_counts.get(pair, 0) != -negc:
            continue  # stale heap entry
        if -negc < min_frequency:
            break
        merged = tokens[pair[0]] + tokens[pair[1]]
        new_id = index.get(merged)
        if new_id is None:  # as HF's BpeTrainer: an existing string keeps its id
            new_id = len(tokens)
            tokens.append(merged)
            index[merged] = new_id
        merges.append(pair)
        changed: Counter = Counter()
        for wi in sorted(where.pop(pair, ())):
            w, f = words[wi], freqs[wi]
            if len(w) < 2:
                continue
            for p in zip(w, w[1:]):
                changed[p] -= f
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == pair[0] and w[i + 1] == pair[1]:
                    out.append(new_id)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            words[wi] = out
            for p in zip(out, out[1:]):
                changed[p] += f
                where.setdefault(p, set()).add(wi)
        for p, d in changed.items():
            if d == 0:
                continue
            pair_counts[p] += d
            if pair_counts[p] <= 0:
                del pair_counts[p]
            else:
                heapq.heappush(heap, (-pair_counts[p], p))
        pair_counts.pop(pair, None)
    return tokens, merges


# ---------------------------------------------------------------------------
# Encoding / decoding
# ---------------------------------------------------------------------------


class BPETokenizer:
    """Immutable after construction; encode() memoises per pre-token (not thread-safe)."""

    def __init__(self, tokens: List[bytes], merges: List[Tuple[int, int]]):
        self.tokens = list(tokens)
        self.index = {b: i for i, b in enumerate(self.tokens)}
        self.ranks = {p: (r, self.index[self.tokens[p[0]] + self.tokens[p[1]]]) for r, p in enumerate(merges)}
        self.merges = list(merges)
        self.special = {s: len(self.tokens) + i for i, s in enumerate(SPECIAL_TOKENS)}
        self.special_by_id = {i: s for s, i in self.special.items()}
        self._cache: Dict[str, List[int]] = {}

    @property
    def vocab_size(self) -> int:
        return len(self.tokens) + len(self.special)

    def token_id(self, special: str) -> int:
        return self.special[special]

    def _bpe(self, word: str) -> List[int]:
        ids = self._cache.get(word)
        if ids is not None:
            return ids
        w = list(word.encode("utf-8"))
        while len(w) > 1:
            best = None
            for i in range(len(w) - 1):
                r = self.ranks.get((w[i], w[i + 1]))
                if r is not None and (best is None or r[0] < best[0]):
                    best = (r[0], r[1], w[i], w[i + 1])
            if best is None:
                break
            _, nid, a, b = best
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    out.append(nid)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            w = out
        self._cache[word] = w
        return w

    def encode(self, text: str, specials: bool = True) -> List[int]:
        """Like HF encode(add_special_tokens=False): special-token strings map to their ids."""
        out: List[int] = []
        parts = _SPECIAL_RE.split(text) if specials else [text]
        for part in parts:
            if specials and part in self.special:
                out.append(self.special[part])
                continue
            for word in pretokenize(part):
                out.extend(self._bpe(word))
        return out

    def decode(self, ids: Iterable[int], skip_special: bool = False) -> str:
        buf = bytearray()
        out = []
        for i in ids:
            if i in self.special_by_id:
                out.append(buf.decode("utf-8", errors="replace"))
                buf = bytearray()
                if not skip_special:
                    out.append(self.special_by_id[i])
            else:
                buf += self.tokens[i]
        out.append(buf.decode("utf-8", errors="replace"))
        return "".join(out)

    def render_chat(self, messages: List[Dict[str, str]], add_generation_prompt: bool) -> str:
        """Python equivalent of CHAT_TEMPLATE."""
        s = "<|bos|>" + "".join(f"<|{m['role']}|>{m['content']}<|end|>" for m in messages)
        return s + ("<|assistant|>" if add_generation_prompt else "")

    # -- HF files -------------------------------------------------------------
    def to_hf_json(self) -> dict:
        vocab = {token_str(b): i for i, b in enumerate(self.tokens)}
        assert len(vocab) == len(self.tokens), "duplicate token strings"
        merges = [f"{token_str(self.tokens[a])} {token_str(self.tokens[b])}" for a, b in self.merges]
        added = [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
                  "normalized": False, "special": True} for s, i in self.special.items()]
        return {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": added,
            "normalizer": None,
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": PATTERN}, "behavior": "Isolated", "invert": False},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
            ]},
            "post_processor": None,
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                      "ignore_merges": False, "vocab": vocab, "merges": merges},
        }

    def tokenizer_config(self) -> dict:
        return {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "bos_token": "<|bos|>",
            "eos_token": "<|eos|>",
            "pad_token": None,
            "unk_token": None,
            "add_bos_token": False,
            "add_eos_token": False,
            "clean_up_tokenization_spaces": False,
            "model_max_length": MODEL_MAX_LENGTH,
            "chat_template": CHAT_TEMPLATE,
            "added_tokens_decoder": {str(i): {"content": s, "single_word": False, "lstrip": False, "rstrip": False,
                                              "normalized": False, "special": True}
                                     for s, i in self.special.items()},
        }

    def save(self, out_dir: str):
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(self.to_hf_json(), f, ensure_ascii=False, indent=1)
            f.write("\n")
        with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump(self.tokenizer_config(), f, ensure_ascii=False, indent=2)
            f.write("\n")

    @classmethod
    def load(cls, path: str) -> "BPETokenizer":
        """Reads a tokenizer.json written by save() (byte tokens 0..255, specials last)."""
        with open(path, encoding="utf-8") as f:
            j = json.load(f)
        vocab = j["model"]["vocab"]
        tokens: List[Optional[bytes]] = [None] * len(vocab)
        for s, i in vocab.items():
            tokens[i] = bytes(BYTE_DECODER[c] for c in s)
        assert all(t is not None for t in tokens), f"{path}: vocab ids are not contiguous"
        index = {t: i for i, t in enumerate(tokens)}
        merges = []
        for m in j["model"]["merges"]:
            a, b = m.split(" ") if isinstance(m, str) else m
            merges.append((index[bytes(BYTE_DECODER[c] for c in a)], index[bytes(BYTE_DECODER[c] for c in b)]))
        tok = cls(tokens, merges)
        for t in j["added_tokens"]:
            assert tok.special.get(t["content"]) == t["id"], f"{path}: unexpected added token {t}"
        return tok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("corpus")
    t.add_argument("out_dir")
    t.add_argument("--vocab-size", type=int, default=4096)
    a = ap.parse_args(argv)
    with open(a.corpus, encoding="utf-8") as f:
        lines = f.read().split("\n")
    tokens, merges = train_bpe(lines, a.vocab_size)
    tok = BPETokenizer(tokens, merges)
    tok.save(a.out_dir)
    print(f"vocab {tok.vocab_size} ({len(merges)} merges) -> {a.out_dir}")


if __name__ == "__main__":
    sys.exit(main())
