#!/usr/bin/env python3
"""Writes tests/computed/engram_test_vectors.h: the vectors WARP's engram hash is
checked against (tests/computed/engram_test.cc).

DeepSeek V4.1 Flash's engram addresses its tables by hashing n-grams of
*compressed* token ids. The steps below are restated from vLLM's
`vllm/models/deepseek_v4_1/common/engram.py` (the spec; transformers'
`modeling_deepseek_v41.py` and ds4's `ds4_engram.c` agree):

  - `default_rng(10007 * layer).integers(0, B, size=max_ngram, dtype=int64) * 2 + 1`,
    B = max(1, (INT64_MAX // compressed_vocab) // 2): the multipliers. Real numpy
    produces them here, and also the raw PCG64 / bounded-integer vectors.
  - the primes: per layer, per n-gram size, per head, the next prime above
    engram_vocab_size - 1 that no earlier (layer, n, head) took; offsets are the
    exclusive cumsum of a layer's primes.
  - the hash: compressed id at p and up to max_ngram - 1 before it; past the
    start of the sequence or at a dead (image) position, and at every position
    further back, the pad id; rolling = t0*m0, rolling ^= tn*mn, and
    row = rolling % prime + offset for each head (numpy int64: the products wrap
    as torch's would; with valid ids they never reach 2^63).
  - the compressed-token-map normalizer: tokenizers' Sequence [NFKC, NFD,
    StripAccents, Lowercase, Replace([ \\t\\r\\n]+ -> ' '), Replace(^ $ -> U+E000),
    Strip, Replace(U+E000 -> ' ')], emulated with unicodedata the way the Rust
    crate behaves: StripAccents drops General_Category M*, Lowercase maps each
    char alone (Rust char::to_lowercase: no final-sigma context), Strip removes
    Rust char::is_whitespace (Unicode White_Space).

Run with Debian's python3 + numpy:
  /usr/bin/python3 tests/reference/engram_vectors.py > tests/computed/engram_test_vectors.h
"""

import re
import sys
import unicodedata

import numpy as np

INT64_MAX = np.iinfo(np.int64).max

# --- multipliers and primes (vLLM common/engram.py) -------------------------------


def is_prime(n):
    if n < 2:
        return False
    d = 2
    while d * d <= n:
        if n % d == 0:
            return False
        d += 1
    return True


def find_next_prime(start, seen):
    candidate = start + 1
    while not is_prime(candidate) or candidate in seen:
        candidate += 1
    return candidate


def layout_primes(layer_ids, max_ngram, n_heads, engram_vocab_size):
    """[layer][n-gram - 2][head]; one `seen` set across all layers."""
    primes, seen = [], set()
    for _ in layer_ids:
        per_ngram = []
        for _ in range(max_ngram - 1):
            sizes, current = [], engram_vocab_size - 1
            for _ in range(n_heads):
                current = find_next_prime(current, seen)
                seen.add(current)
                sizes.append(current)
            per_ngram.append(sizes)
        primes.append(per_ngram)
    return primes


def multipliers(layer_ids, max_ngram, compressed_vocab):
    bound = max(1, (INT64_MAX // compressed_vocab) // 2)
    rows = []
    for layer in layer_ids:
        values = np.random.default_rng(10007 * layer).integers(
            low=0, high=bound, size=(max_ngram,), dtype=np.int64)
        rows.append(values * 2 + 1)
    return np.stack(rows)


# --- the hash (transformers' DeepseekV41NgramHashState, one sequence) --------------

DEAD = -1


def hash_sequence(ids, layer_ids, max_ngram, n_heads, engram_vocab_size, compressed_vocab,
                  pad_id):
    """ids: compressed ids, DEAD at image positions -> [pos][layer][col] rows."""
    primes = np.array(layout_primes(layer_ids, max_ngram, n_heads, engram_vocab_size),
                      dtype=np.int64)                       # [L, n-1, H]
    flat = primes.reshape(len(layer_ids), -1)
    offsets = np.concatenate([np.zeros((len(layer_ids), 1), np.int64),
                              np.cumsum(flat, axis=1)[:, :-1]], axis=1)
    mult = multipliers(layer_ids, max_ngram, compressed_vocab)  # [L, max_ngram]
    out = []
    for pos in range(len(ids)):
        tokens, blocked = [], False
        for shift in range(max_ngram):
            source = ids[pos - shift] if pos >= shift else DEAD
            blocked = blocked or pos < shift or source == DEAD
            tokens.append(pad_id if blocked else source)
        tokens = np.array(tokens, dtype=np.int64)
        rows = []
        for layer in range(len(layer_ids)):
            products = tokens * mult[layer]                 # int64, wraps like torch
            rolling, cols = products[0], []
            for i in range(1, max_ngram):
                rolling = np.bitwise_xor(rolling, products[i])
                cols.extend(int(rolling % p) for p in primes[layer, i - 1])
            rows.append([c + int(o) for c, o in zip(cols, offsets[layer])])
        out.append(rows)
    return out


# --- the compressed token map (vLLM build_compressed_token_map) --------------------

RUST_WHITESPACE = set(range(0x09, 0x0E)) | {0x20, 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F,
                                             0x205F, 0x3000} | set(range(0x2000, 0x200B))
SENTINEL = "\ue000"


def rust_strip(text):
    start, end = 0, len(text)
    while start < end and ord(text[start]) in RUST_WHITESPACE:
        start += 1
    while end > start and ord(text[end - 1]) in RUST_WHITESPACE:
        end -= 1
    return text[start:end]


def normalize(text):
    text = unicodedata.normalize("NFKC", text)
    text = unicodedata.normalize("NFD", text)
    text = "".join(c for c in text if not unicodedata.category(c).startswith("M"))
    text = "".join(c.lower() for c in text)
    text = re.sub(r"[ \t\r\n]+", " ", text)
    if text == " ":
        text = SENTINEL
    return rust_strip(text).replace(SENTINEL, " ")


def build_map(decoded, raw):
    key_to_new, lookup = {}, []
    for text, token in zip(decoded, raw):
        if "\ufffd" in text:
            key = token
        else:
            normalized = normalize(text)
            key = normalized if normalized else text
        lookup.append(key_to_new.setdefault(key, len(key_to_new)))
    return lookup, len(key_to_new)


# --- output ------------------------------------------------------------------------


def cpp_string(text):
    """A C++ string literal of the UTF-8 bytes: hex escapes for non-ASCII and control
    bytes, split ("\\xc3" "a") where a hex digit would extend an escape."""
    out, after_escape = [], False
    for b in text.encode("utf-8"):
        if 0x20 <= b < 0x7F and chr(b) not in '"\\?':
            if after_escape and chr(b) in "0123456789abcdefABCDEF":
                out.append('" "')
            out.append(chr(b))
            after_escape = False
        else:
            out.append("\\x%02x" % b)
            after_escape = True
    return '"' + "".join(out) + '"'


def int64(value):
    value = int(value)
    return "INT64_MIN" if value == -2**63 else "%dll" % value


def ints(values):
    return ", ".join(str(int(v)) for v in values)


def main():
    w = sys.stdout.write
    w("// Generated by tests/reference/engram_vectors.py with numpy %s; do not edit.\n"
      % np.__version__)
    w("#pragma once\n\n#include <cstdint>\n#include <vector>\n\n")
    w("namespace warp::computed::engram_vectors {\n\n")

    # PCG64 right after seeding, and its first raw outputs.
    w("struct Pcg64Vector {\n  uint64_t seed;\n  uint64_t state_hi, state_lo, inc_hi, inc_lo;\n"
      "  std::vector<uint64_t> raw;\n};\n")
    w("inline const std::vector<Pcg64Vector> kPcg64 = {\n")
    for seed in (0, 1, 42, 10007, 140098, 2**32 + 5, 2**64 - 1):
        bitgen = np.random.PCG64(seed)
        state = bitgen.state["state"]
        s, inc = state["state"], state["inc"]
        raw = bitgen.random_raw(4)
        w("    {%du, %du, %du, %du, %du,\n     {%s}},\n" % (
            seed, s >> 64, s & (2**64 - 1), inc >> 64, inc & (2**64 - 1),
            ", ".join("%du" % v for v in raw)))
    w("};\n\n")

    # Generator.integers(low, high, size, dtype=int64) for several seeds and bounds.
    w("struct IntegersVector {\n  uint64_t seed;\n  int64_t low, high;\n"
      "  std::vector<int64_t> values;\n};\n")
    w("inline const std::vector<IntegersVector> kIntegers = {\n")
    bound_release = (INT64_MAX // 99092) // 2
    cases = [
        (0, 0, 1, 5),                   # rng 0: always low
        (1, 0, 2, 9),                   # 32-bit path, tiny range, odd count (buffered halves)
        (7, 0, 1000, 7),
        (7, -5, 6, 7),                  # negative low
        (13, 0, 3 * 2**30 + 1, 9),      # 32-bit path where rejection is likely (~1/4 a draw)
        (3, 0, 2**32 - 1, 5),           # rng 2^32 - 2: the largest 32-bit Lemire range
        (3, 0, 2**32, 5),               # rng 2^32 - 1: numpy's 64-bit fill still takes Lemire32
        (3, 0, 2**32 + 1, 5),           # first 64-bit range
        (11, 0, 2**40 + 12345, 6),
        (10007, 0, bound_release, 4),   # the release's layer 1
        (140098, 0, bound_release, 4),  # the release's layer 14
        (5, 0, 2**62 + 12345, 6),       # rejection is likelier with a range this wide
        (5, 0, INT64_MAX, 6),
        (9, -2**63, INT64_MAX, 6),      # rng 2^64 - 2
        (2**32 + 5, 0, 123456789, 6),   # a two-word seed
    ]
    for seed, low, high, size in cases:
        values = np.random.default_rng(seed).integers(low, high, size=size, dtype=np.int64)
        w("    {%du, %s, %s,\n     {%s}},\n" % (
            seed, int64(low), int64(high), ", ".join(int64(v) for v in values)))
    w("};\n\n")

    # The hash of a short sequence on the release layout.
    layer_ids, max_ngram, n_heads, vocab, compressed, pad = [1, 14], 4, 8, 16000000, 99092, 2
    ids = [5, 99091, 17, 0, DEAD, 42, 7, 7, 3, 2]
    rows = hash_sequence(ids, layer_ids, max_ngram, n_heads, vocab, compressed, pad)
    w("// Release layout (layers 1 and 14, engram_vocab_size 16000000, 4-grams, 8 heads,\n"
      "// compressed vocab 99092), pad id 2; -1 marks an image position.\n")
    w("inline const std::vector<int32_t> kHashIds = {%s};\n" % ints(ids))
    w("inline const std::vector<int64_t> kHashRows = {  // [position][layer][column]\n")
    for pos, pos_rows in enumerate(rows):
        w("    // position %d\n" % pos)
        for layer in pos_rows:
            for k in range(0, len(layer), n_heads):
                w("    %s,\n" % ints(layer[k:k + n_heads]))
    w("};\n\n")

    # A small layout: few primes, another compressed vocab, other multipliers.
    small = dict(layer_ids=[0, 3], max_ngram=3, n_heads=2, engram_vocab_size=100,
                 compressed_vocab=11, pad_id=10)
    small_ids = [1, 2, 3, DEAD, 4, 10, 0]
    small_rows = hash_sequence(small_ids, **small)
    w("// Small layout: layers 0 and 3, engram_vocab_size 100, 3-grams, 2 heads,\n"
      "// compressed vocab 11, pad id 10.\n")
    w("inline const std::vector<int32_t> kSmallHashIds = {%s};\n" % ints(small_ids))
    w("inline const std::vector<int64_t> kSmallHashRows = {\n")
    for pos_rows in small_rows:
        w("    %s,\n" % ints(r for layer in pos_rows for r in layer))
    w("};\n")
    w("inline const std::vector<int64_t> kSmallPrimes = {%s};\n" % ints(
        p for layer in layout_primes([0, 3], 3, 2, 100) for per in layer for p in per))
    w("inline const std::vector<int64_t> kSmallMultipliers = {\n    %s};\n\n" % ",\n    ".join(
        str(int(m)) for m in multipliers([0, 3], 3, 11).reshape(-1)))

    # The normalizer on tricky strings.
    samples = [
        "Hello", " The", "THE", "the ", "Café", "cafe\u0301", "ＡＢＣ１２３", "ﬁ", "\u00bd",
        "中文", "  \t\n x \r\n y  ", " ", "\t", "\n\n", "  ", "\u00a0", "\u3000", "\x0b",
        "\u2028", "\u00c5ngstr\u00f6m", "\u0130stanbul", "\u039f\u0394\u039f\u03a3",
        "\u03a3", "Stra\u00dfe", "\u2126", "\ue000", "a\ue000b", "\u1e9b\u0323", "\u0041\u030a",
        "\u212b", "x\u0300\u0301\u0302", "\u00e9\u00e8\u00ea",
    ]
    w("struct NormalizeVector {\n  const char* text;\n  const char* normalized;\n};\n")
    w("inline const std::vector<NormalizeVector> kNormalize = {\n")
    for text in samples:
        w("    {%s, %s},\n" % (cpp_string(text), cpp_string(normalize(text))))
    w("};\n\n")

    # A tiny vocabulary through the whole map.
    decoded = ["A", "a", " a", "\ufffd", "\ufffd", "\u00e1", " ", "  ", "", "\x0b", "B\n",
               "b", "\ue000", "\t"]
    raw = ["A", "a", "\u0120a", "\u00e2\u0122", "\u00e2\u0123", "\u00c3\u00a1", "\u0120",
           "\u0120\u0120", "", "\u010b", "B\u010a", "b", "\ue000", "\u0109"]
    lookup, count = build_map(decoded, raw)
    w("inline const std::vector<const char*> kMapDecoded = {\n    %s};\n" % ",\n    ".join(
        cpp_string(t) for t in decoded))
    w("inline const std::vector<const char*> kMapRaw = {\n    %s};\n" % ",\n    ".join(
        cpp_string(t) for t in raw))
    w("inline const std::vector<int32_t> kMapLookup = {%s};\n" % ints(lookup))
    w("inline constexpr int32_t kMapCount = %d;\n\n" % count)
    w("}  // namespace warp::computed::engram_vectors\n")


if __name__ == "__main__":
    main()
