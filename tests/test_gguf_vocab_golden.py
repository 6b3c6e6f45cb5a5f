#!/usr/bin/env python3
"""Writes tests/test_gguf_vocab.golden: every key/value of every ../shared/vocab/*.gguf as read
by gguf-py (ggml's own Python reader), the independent oracle for ember's reader.

One line per key: FILE <tab> KEY <tab> DESCRIPTION, where DESCRIPTION is
  "<int type> <decimal>", "f32 0x<bits>", "f64 0x<bits>", "bool 0|1",
  "string len=<bytes> fnv=<FNV-1a 64 of the bytes>", or
  "array[<type>] len=<n> fnv=<FNV-1a 64>" hashing, per element: strings as u64 LE length
  + bytes, integers and bools as i64 LE, f32 as its 4 bytes, f64 as its 8 bytes.
test_gguf_vocab.cpp recomputes the same lines through ember's accessors.
Run: python3 tests/test_gguf_vocab_golden.py [SHARED_DIR] > tests/test_gguf_vocab.golden
"""
import struct
import sys
from pathlib import Path

import gguf

T = gguf.GGUFValueType
NAMES = {T.UINT8: "u8", T.INT8: "i8", T.UINT16: "u16", T.INT16: "i16", T.UINT32: "u32",
         T.INT32: "i32", T.FLOAT32: "f32", T.BOOL: "bool", T.STRING: "string", T.UINT64: "u64",
         T.INT64: "i64", T.FLOAT64: "f64"}
INTS = {T.UINT8, T.INT8, T.UINT16, T.INT16, T.UINT32, T.INT32, T.UINT64, T.INT64, T.BOOL}


def fnv(data: bytes, h: int = 0xcbf29ce484222325) -> int:
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def element_bytes(t, part) -> bytes:
    if t == T.STRING:
        raw = bytes(part)
        return struct.pack("<Q", len(raw)) + raw
    if t in INTS:
        return struct.pack("<q", int(part[0]))
    if t == T.FLOAT32:
        return struct.pack("<f", float(part[0]))
    return struct.pack("<d", float(part[0]))


def describe(field) -> str:
    t = field.types[0]
    if t == T.ARRAY:
        et = field.types[1] if len(field.types) > 1 else T.UINT8
        h = 0xcbf29ce484222325
        for i in field.data:
            h = fnv(element_bytes(et, field.parts[i]), h)
        return f"array[{NAMES[et]}] len={len(field.data)} fnv={h:016x}"
    part = field.parts[field.data[0]]
    if t == T.STRING:
        raw = bytes(part)
        return f"string len={len(raw)} fnv={fnv(raw):016x}"
    if t == T.FLOAT32:
        return f"f32 0x{struct.unpack('<I', struct.pack('<f', float(part[0])))[0]:08x}"
    if t == T.FLOAT64:
        return f"f64 0x{struct.unpack('<Q', struct.pack('<d', float(part[0])))[0]:016x}"
    return f"{NAMES[t]} {int(part[0])}"


def main() -> None:
    shared = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "shared"
    for path in sorted((shared / "vocab").glob("*.gguf")):
        r = gguf.GGUFReader(str(path))
        kvs = [(k, f) for k, f in r.fields.items() if not k.startswith("GGUF.")]
        version = int(r.fields["GGUF.version"].parts[0][0])
        print(f"{path.name}\t#header\tversion={version} n_tensors={len(r.tensors)} n_kv={len(kvs)}")
        for key, field in kvs:
            print(f"{path.name}\t{key}\t{describe(field)}")


if __name__ == "__main__":
    main()
