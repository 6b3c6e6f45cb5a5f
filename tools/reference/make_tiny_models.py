#!/usr/bin/env python3
"""Writes small random-weight GGUF models of each family ember runs, plus golden logits
from reference.py, for tests/test_model_*.cpp (so CI needs no Python):

    tests/models/tiny-<arch>.gguf      written with gguf.GGUFWriter, llama.cpp's key and
                                       tensor names; some matrices stored as Q8_0 / Q4_0 / F16
    tests/golden/tiny-<arch>.logits    "EMBG", version 1, n_tokens, n_vocab (int32 each),
                                       tokens (int32 x n_tokens), logits (f32, n_tokens x n_vocab)

Run from the repository root:  python3 tools/reference/make_tiny_models.py
"""
import os
import struct
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q
from gguf.quants import quantize

sys.path.insert(0, os.path.dirname(__file__))
import reference  # noqa: E402

N_POSITIONS = 200

# One entry per family: shapes chosen so GQA, explicit head_dim, biases, q/k norms,
# sliding windows and tied heads are all exercised while the files stay ~100-200 KB.
FAMILIES = {
    "llama": dict(n_embd=64, n_layer=3, n_head=4, n_kv=2, head_dim=32, n_ff=160, n_vocab=256,
                  types=dict(attn=Q.Q8_0, ffn=Q.Q4_0, embd=Q.F16, output=Q.Q8_0), tied=False),
    "qwen2": dict(n_embd=64, n_layer=2, n_head=2, n_kv=1, head_dim=32, n_ff=192, n_vocab=256,
                  types=dict(attn=Q.F16, ffn=Q.Q8_0, embd=Q.Q8_0), tied=True, bias=True),
    "qwen3": dict(n_embd=64, n_layer=3, n_head=4, n_kv=2, head_dim=32, n_ff=128, n_vocab=256,
                  types=dict(attn=Q.Q8_0, ffn=Q.Q8_0, embd=Q.F32, output=Q.F16), tied=False, qk_norm=True),
    # All-f32 weights: with an f32 KV cache the engine should match to float rounding, which
    # separates structural bugs from quantization noise.
    "llama-f32": dict(arch="llama", n_embd=64, n_layer=2, n_head=2, n_kv=1, head_dim=32, n_ff=96, n_vocab=128,
                      types=dict(attn=Q.F32, ffn=Q.F32, embd=Q.F32), tied=True),
    "gemma3": dict(n_embd=64, n_layer=6, n_head=2, n_kv=1, head_dim=32, n_ff=128, n_vocab=256,
                   types=dict(attn=Q.F32, ffn=Q.Q4_0, embd=Q.Q8_0), tied=True, qk_norm=True, window=24),
}


def add_matrix(w, name, a, qtype):
    a = a.astype(np.float32)
    if qtype == Q.F32:
        w.add_tensor(name, a)
    elif qtype == Q.F16:
        w.add_tensor(name, a.astype(np.float16))
    else:
        w.add_tensor(name, quantize(a, qtype), raw_dtype=qtype)


def make(stem, c, out_dir, rng):
    arch = c.get("arch", stem)
    path = os.path.join(out_dir, f"tiny-{stem}.gguf")
    w = gguf.GGUFWriter(path, arch)
    w.add_name(f"tiny random {arch}")
    w.add_context_length(512)
    w.add_embedding_length(c["n_embd"])
    w.add_block_count(c["n_layer"])
    w.add_feed_forward_length(c["n_ff"])
    w.add_head_count(c["n_head"])
    w.add_head_count_kv(c["n_kv"])
    w.add_key_length(c["head_dim"])
    w.add_value_length(c["head_dim"])
    w.add_layer_norm_rms_eps(1e-6 if arch != "llama" else 1e-5)
    w.add_rope_dimension_count(c["head_dim"])
    if arch == "gemma3":
        w.add_rope_freq_base(1000000.0)
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(8.0)
        w.add_sliding_window(c["window"])
    else:
        w.add_rope_freq_base(10000.0 if arch == "llama" else 1000000.0)

    E, H, KV, D, F, V = c["n_embd"], c["n_head"], c["n_kv"], c["head_dim"], c["n_ff"], c["n_vocab"]
    t = c["types"]

    def mat(rows, cols):  # weight stored as [rows][cols]: y = x @ W.T
        return rng.standard_normal((rows, cols)) / np.sqrt(cols)

    def norm(n):
        if arch == "gemma3":
            # Gemma's RMSNorm scales by (1 + w), w near 0; llama.cpp's converter stores 1 + w.
            return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    add_matrix(w, "token_embd.weight", rng.standard_normal((V, E)), t["embd"])
    for il in range(c["n_layer"]):
        p = f"blk.{il}."
        w.add_tensor(p + "attn_norm.weight", norm(E))
        add_matrix(w, p + "attn_q.weight", mat(H * D, E), t["attn"])
        add_matrix(w, p + "attn_k.weight", mat(KV * D, E), t["attn"])
        add_matrix(w, p + "attn_v.weight", mat(KV * D, E), t["attn"])
        add_matrix(w, p + "attn_output.weight", mat(E, H * D), t["attn"])
        if c.get("bias"):
            for n, rows in (("attn_q", H * D), ("attn_k", KV * D), ("attn_v", KV * D)):
                w.add_tensor(p + n + ".bias", (0.5 * rng.standard_normal(rows)).astype(np.float32))
        if c.get("qk_norm"):
            w.add_tensor(p + "attn_q_norm.weight", norm(D))
            w.add_tensor(p + "attn_k_norm.weight", norm(D))
        if arch == "gemma3":
            w.add_tensor(p + "post_attention_norm.weight", norm(E))
        w.add_tensor(p + "ffn_norm.weight", norm(E))
        add_matrix(w, p + "ffn_gate.weight", mat(F, E), t["ffn"])
        add_matrix(w, p + "ffn_up.weight", mat(F, E), t["ffn"])
        add_matrix(w, p + "ffn_down.weight", mat(E, F), t["ffn"])
        if arch == "gemma3":
            w.add_tensor(p + "post_ffw_norm.weight", norm(E))
    w.add_tensor("output_norm.weight", norm(E))
    if not c["tied"]:
        add_matrix(w, "output.weight", mat(V, E) * 4.0, t["output"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def write_golden(path, tokens, logits):
    with open(path, "wb") as f:
        f.write(b"EMBG")
        f.write(struct.pack("<iii", 1, len(tokens), logits.shape[1]))
        f.write(np.asarray(tokens, dtype="<i4").tobytes())
        f.write(logits.astype("<f4").tobytes())


def main():
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    models, golden = os.path.join(root, "tests", "models"), os.path.join(root, "tests", "golden")
    os.makedirs(models, exist_ok=True)
    os.makedirs(golden, exist_ok=True)
    for i, (arch, c) in enumerate(FAMILIES.items()):
        rng = np.random.default_rng(1234 + i)
        path = make(arch, c, models, rng)
        tokens = rng.integers(0, c["n_vocab"], N_POSITIONS).tolist()
        logits = reference.forward(reference.Gguf(path), tokens)
        write_golden(os.path.join(golden, f"tiny-{arch}.logits"), tokens, logits)
        print(f"{arch}: {os.path.getsize(path)} bytes, logits std {logits.std():.3f}, "
              f"top-1 margin median {np.median(np.diff(np.sort(logits, axis=-1)[:, -2:], axis=-1)):.3f}")


if __name__ == "__main__":
    main()
