"""A GGUF writer (ggml-org/ggml docs/gguf.md, version 3) in plain Python.

The project's own generator of GGUF test models: no numpy, no gguf-py.
Tensors are given as raw bytes in a ggml type with their ggml dims
(innermost first); metadata values are typed explicitly.
"""

import struct

GGML_F32, GGML_F16, GGML_Q4_0, GGML_Q8_0, GGML_BF16, GGML_MXFP4 = 0, 1, 2, 8, 30, 39
BLOCKS = {GGML_F32: (1, 4), GGML_F16: (1, 2), GGML_BF16: (1, 2), GGML_Q4_0: (32, 18),
          GGML_Q8_0: (32, 34), GGML_MXFP4: (32, 17)}

U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
_SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f",
           BOOL: "<?", U64: "<Q", I64: "<q", F64: "<d"}
ALIGNMENT = 32


def _string(text):
    data = text.encode("utf-8") if isinstance(text, str) else text
    return struct.pack("<Q", len(data)) + data


def _value(kind, value, item_kind=None):
    if kind == STRING:
        return _string(value)
    if kind == ARRAY:
        out = struct.pack("<IQ", item_kind, len(value))
        return out + b"".join(_value(item_kind, v) for v in value)
    return struct.pack(_SCALAR[kind], value)


def tensor_bytes(ggml_type, dims):
    elements = 1
    for d in dims:
        elements *= d
    per, size = BLOCKS[ggml_type]
    assert elements % per == 0, (ggml_type, dims)
    return elements // per * size


class GgufWriter:
    def __init__(self):
        self.kv = []       # (key, kind, value, item_kind)
        self.tensors = []  # (name, dims, ggml_type, data or a callable writing chunks)

    def add(self, key, kind, value, item_kind=None):
        self.kv.append((key, kind, value, item_kind))

    def add_tensor(self, name, dims, ggml_type, data):
        """`data`: bytes, or a callable(write) that writes exactly the tensor's bytes."""
        self.tensors.append((name, list(dims), ggml_type, data))

    def write(self, path):
        with open(path, "wb") as f:
            f.write(struct.pack("<IIQQ", 0x46554747, 3, len(self.tensors), len(self.kv)))
            for key, kind, value, item_kind in self.kv:
                f.write(_string(key) + struct.pack("<I", kind) + _value(kind, value, item_kind))
            offset = 0
            for name, dims, ggml_type, _ in self.tensors:
                f.write(_string(name) + struct.pack("<I", len(dims)))
                f.write(b"".join(struct.pack("<Q", d) for d in dims))
                f.write(struct.pack("<IQ", ggml_type, offset))
                offset += -(-tensor_bytes(ggml_type, dims) // ALIGNMENT) * ALIGNMENT
            f.write(b"\0" * (-f.tell() % ALIGNMENT))
            for name, dims, ggml_type, data in self.tensors:
                start = f.tell()
                if callable(data):
                    data(f.write)
                else:
                    f.write(data)
                written = f.tell() - start
                assert written == tensor_bytes(ggml_type, dims), (name, written)
                f.write(b"\0" * (-written % ALIGNMENT))
