#!/usr/bin/env python3
"""A plain numpy forward pass for the GGUF families ember runs (llama, qwen2, qwen3, gemma3).

It shares no code with the engine: weights are read and dequantized with the `gguf` PyPI
package, and every token position is computed from scratch with full causal attention (no
KV cache), in float64, the way the model papers / HF transformers write it:

    h = embed(tokens) [* sqrt(n_embd) for gemma3]
    for each layer:  h += attn(norm(h)),  h += ffn(norm(h))      (gemma3: sandwich norms)
    logits = output(norm(h))

Usage: reference.py MODEL.gguf TOKENS... -> prints the argmax per position.
"""
import sys

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize


class Gguf:
    def __init__(self, path):
        r = GGUFReader(path)
        self.arch = self._field(r, "general.architecture")
        self.kv = {k: self._field(r, k) for k in r.fields}
        self.t = {}
        for t in r.tensors:
            ne = [int(x) for x in t.shape]  # ggml order: ne[0] is the row length
            a = dequantize(t.data, t.tensor_type).astype(np.float64)
            self.t[t.name] = a.reshape(list(reversed(ne))) if len(ne) > 1 else a.reshape(ne)

    @staticmethod
    def _field(r, key):
        f = r.fields[key]
        v = f.contents()
        return v

    def get(self, key, default=None):
        return self.kv.get(f"{self.arch}.{key}", default)


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, pos, n_rot, base, scale, neox):
    """x: [T, heads, head_dim]; rotates the first n_rot dims of every head."""
    x = x.copy()
    i = np.arange(n_rot // 2)
    theta = (pos[:, None] * scale) * base ** (-2.0 * i / n_rot)  # [T, n_rot/2]
    c, s = np.cos(theta)[:, None, :], np.sin(theta)[:, None, :]
    if neox:  # pairs (j, j + n_rot/2)
        a, b = x[..., : n_rot // 2].copy(), x[..., n_rot // 2 : n_rot].copy()
        x[..., : n_rot // 2] = a * c - b * s
        x[..., n_rot // 2 : n_rot] = a * s + b * c
    else:  # adjacent pairs (2j, 2j + 1)
        a, b = x[..., 0:n_rot:2].copy(), x[..., 1:n_rot:2].copy()
        x[..., 0:n_rot:2] = a * c - b * s
        x[..., 1:n_rot:2] = a * s + b * c
    return x


def silu(x):
    return x / (1.0 + np.exp(-x))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


class Config:
    def __init__(self, g: Gguf):
        self.arch = g.arch
        self.n_embd = int(g.get("embedding_length"))
        self.n_layer = int(g.get("block_count"))
        self.n_head = int(g.get("attention.head_count"))
        self.n_kv = int(g.get("attention.head_count_kv", self.n_head))
        self.head_dim = int(g.get("attention.key_length", self.n_embd // self.n_head))
        self.eps = float(g.get("attention.layer_norm_rms_epsilon", 1e-5))
        self.n_rot = int(g.get("rope.dimension_count", self.head_dim))
        self.base = float(g.get("rope.freq_base", 10000.0))
        factor = float(g.get("rope.scaling.factor", 1.0)) if g.get("rope.scaling.type", "none") == "linear" else 1.0
        self.scale = 1.0 / factor
        self.neox = self.arch in ("qwen2", "qwen3", "gemma3")
        self.window = int(g.get("attention.sliding_window", 0)) if self.arch == "gemma3" else 0

    def layer_is_local(self, il):
        # Gemma 3: five sliding-window layers, then one global layer.
        return self.arch == "gemma3" and (il + 1) % 6 != 0


def attention(cfg, g, il, x, pos):
    T = x.shape[0]
    p = f"blk.{il}."
    hd = cfg.head_dim

    def proj(name, inp):
        y = inp @ g.t[p + name + ".weight"].T
        if p + name + ".bias" in g.t:
            y = y + g.t[p + name + ".bias"]
        return y

    q = proj("attn_q", x).reshape(T, cfg.n_head, hd)
    k = proj("attn_k", x).reshape(T, cfg.n_kv, hd)
    v = proj("attn_v", x).reshape(T, cfg.n_kv, hd)
    if p + "attn_q_norm.weight" in g.t:
        q = rms_norm(q, g.t[p + "attn_q_norm.weight"], cfg.eps)
        k = rms_norm(k, g.t[p + "attn_k_norm.weight"], cfg.eps)
    local = cfg.layer_is_local(il)
    base, scale = (10000.0, 1.0) if local else (cfg.base, cfg.scale)
    q = rope(q, pos, cfg.n_rot, base, scale, cfg.neox)
    k = rope(k, pos, cfg.n_rot, base, scale, cfg.neox)

    group = cfg.n_head // cfg.n_kv
    k = np.repeat(k, group, axis=1)  # [T, n_head, hd]: query head h uses kv head h // group
    v = np.repeat(v, group, axis=1)
    scores = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(hd)
    qp, kp = pos[:, None], pos[None, :]
    visible = kp <= qp
    if local:
        visible &= (qp - kp) < cfg.window
    scores = np.where(visible[None], scores, -np.inf)
    scores -= scores.max(axis=-1, keepdims=True)
    w = np.exp(scores)
    w /= w.sum(axis=-1, keepdims=True)
    o = np.einsum("hqk,khd->qhd", w, v).reshape(T, cfg.n_head * hd)
    return proj("attn_output", o)


def ffn(g, il, x, act):
    p = f"blk.{il}."
    gate = x @ g.t[p + "ffn_gate.weight"].T
    up = x @ g.t[p + "ffn_up.weight"].T
    return (act(gate) * up) @ g.t[p + "ffn_down.weight"].T


def forward(g: Gguf, tokens):
    """Logits [T, n_vocab] (float64) for tokens at positions 0..T-1."""
    cfg = Config(g)
    tokens = np.asarray(tokens)
    pos = np.arange(len(tokens), dtype=np.float64)
    h = g.t["token_embd.weight"][tokens]
    if cfg.arch == "gemma3":
        # Gemma multiplies embeddings by sqrt(n_embd). Its norm weights are stored by the
        # converter as 1 + w, so every norm below is a plain x * weight.
        h = h * np.sqrt(cfg.n_embd)
    for il in range(cfg.n_layer):
        p = f"blk.{il}."
        if cfg.arch == "gemma3":
            a = attention(cfg, g, il, rms_norm(h, g.t[p + "attn_norm.weight"], cfg.eps), pos)
            h = h + rms_norm(a, g.t[p + "post_attention_norm.weight"], cfg.eps)
            f = ffn(g, il, rms_norm(h, g.t[p + "ffn_norm.weight"], cfg.eps), gelu_tanh)
            h = h + rms_norm(f, g.t[p + "post_ffw_norm.weight"], cfg.eps)
        else:
            h = h + attention(cfg, g, il, rms_norm(h, g.t[p + "attn_norm.weight"], cfg.eps), pos)
            h = h + ffn(g, il, rms_norm(h, g.t[p + "ffn_norm.weight"], cfg.eps), silu)
    h = rms_norm(h, g.t["output_norm.weight"], cfg.eps)
    out = g.t.get("output.weight", g.t["token_embd.weight"])
    return h @ out.T


if __name__ == "__main__":
    g = Gguf(sys.argv[1])
    toks = [int(x) for x in sys.argv[2:]]
    print(" ".join(str(int(i)) for i in forward(g, toks).argmax(axis=-1)))
