#!/usr/bin/env python3
"""A plain numpy forward pass for the families ember runs: the dense llama, qwen2, qwen3,
gemma3, and the mixture-of-experts qwen3moe, qwen2moe, mixtral (llama with experts) and olmoe.

It shares no code with the engine: GGUF weights are read and dequantized with the `gguf` PyPI
package, Hugging Face folders (config.json + model.safetensors, HfCheckpoint) with a reader
of its own, and every token position is computed from scratch with full causal attention (no
KV cache), in float64, the way the model papers / HF transformers write it:

    h = embed(tokens) [* sqrt(n_embd) for gemma3]
    for each layer:  h += attn(norm(h)),  h += ffn(norm(h))      (gemma3: sandwich norms)
    logits = output(norm(h))

where a MoE layer's ffn is the router's softmax, its top k experts (renormalised per the
family), their SwiGLU outputs weighted and summed, plus a shared expert scaled by
sigmoid(x . gate) (qwen2moe). An HF checkpoint runs on its own tensors: experts one matrix
each, Q/K rows in HF's order with HF's half-split RoPE, q/k norms as wide as their weight.

Usage: reference.py MODEL.gguf|HF_DIR TOKENS... -> prints the argmax per position.
"""
import json
import os
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

    def expert(self, il, which, e):
        """Expert e's [rows, cols] matrix of layer il, which in gate / up / down."""
        return self.t[f"blk.{il}.ffn_{which}_exps.weight"][e]


# Hugging Face tensor names (after "model.layers.N.") -> the GGUF names forward() reads.
HF_NAMES = {
    "input_layernorm.weight": "attn_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "self_attn.q_norm.weight": "attn_q_norm.weight",
    "self_attn.k_norm.weight": "attn_k_norm.weight",
    "mlp.gate.weight": "ffn_gate_inp.weight",
    "block_sparse_moe.gate.weight": "ffn_gate_inp.weight",
    "mlp.shared_expert_gate.weight": "ffn_gate_inp_shexp.weight",
    "mlp.shared_expert.gate_proj.weight": "ffn_gate_shexp.weight",
    "mlp.shared_expert.up_proj.weight": "ffn_up_shexp.weight",
    "mlp.shared_expert.down_proj.weight": "ffn_down_shexp.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}
for _x, _g in (("q", "attn_q"), ("k", "attn_k"), ("v", "attn_v"), ("o", "attn_output")):
    for _kind in ("weight", "bias"):
        HF_NAMES[f"self_attn.{_x}_proj.{_kind}"] = f"{_g}.{_kind}"
HF_ARCHS = {"Qwen3MoeForCausalLM": "qwen3moe", "Qwen2MoeForCausalLM": "qwen2moe",
            "MixtralForCausalLM": "mixtral", "OlmoeForCausalLM": "olmoe"}


def read_safetensors(path):
    """{name: float64 array} of a .safetensors file (F32, F16 or BF16)."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        raw = data[b:e]
        if info["dtype"] == "BF16":
            a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            a = np.frombuffer(raw, {"F32": "<f4", "F16": "<f2"}[info["dtype"]])
        out[name] = a.astype(np.float64).reshape(info["shape"])
    return out


class HfCheckpoint:
    """A Hugging Face MoE folder: its config and tensors, read as HF's modelling code does."""

    def __init__(self, folder):
        with open(os.path.join(folder, "config.json")) as f:
            self.config = json.load(f)
        self.arch = HF_ARCHS[self.config["architectures"][0]]
        self.hf = read_safetensors(os.path.join(folder, "model.safetensors"))
        self.t = {"token_embd.weight": self.hf["model.embed_tokens.weight"],
                  "output_norm.weight": self.hf["model.norm.weight"]}
        if "lm_head.weight" in self.hf and not self.config.get("tie_word_embeddings", False):
            self.t["output.weight"] = self.hf["lm_head.weight"]
        for name, a in self.hf.items():
            parts = name.split(".")
            if name.startswith("model.layers.") and ".".join(parts[3:]) in HF_NAMES:
                self.t[f"blk.{parts[2]}.{HF_NAMES['.'.join(parts[3:])]}"] = a

    def expert(self, il, which, e):
        if self.arch == "mixtral":  # w1 gate, w3 up, w2 down
            w = {"gate": "w1", "up": "w3", "down": "w2"}[which]
            return self.hf[f"model.layers.{il}.block_sparse_moe.experts.{e}.{w}.weight"]
        return self.hf[f"model.layers.{il}.mlp.experts.{e}.{which}_proj.weight"]


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
    def __init__(self, g):
        if isinstance(g, HfCheckpoint):
            self._from_hf(g.config, g.arch)
            return
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
        self.neox = self.arch in ("qwen2", "qwen3", "gemma3", "qwen2moe", "qwen3moe", "olmoe")
        self.window = int(g.get("attention.sliding_window", 0)) if self.arch == "gemma3" else 0
        self.n_expert = int(g.get("expert_count", 0))
        self.n_expert_used = int(g.get("expert_used_count", 0))
        # llama.cpp fixes the renormalisation of the chosen weights per architecture.
        self.norm_topk = self.arch in ("llama", "qwen3moe")

    def _from_hf(self, c, arch):
        self.arch = arch
        self.n_embd = c["hidden_size"]
        self.n_layer = c["num_hidden_layers"]
        self.n_head = c["num_attention_heads"]
        self.n_kv = c.get("num_key_value_heads", self.n_head)
        self.head_dim = c.get("head_dim") or self.n_embd // self.n_head
        self.eps = c["rms_norm_eps"]
        self.n_rot = self.head_dim
        self.base = c.get("rope_theta", 10000.0)
        self.scale = 1.0
        self.neox = True  # HF's rotate_half: pairs (j, j + d/2), also for Mixtral
        self.window = 0
        self.n_expert = c.get("num_local_experts", c.get("num_experts"))
        self.n_expert_used = c["num_experts_per_tok"]
        self.norm_topk = True if arch == "mixtral" else c.get("norm_topk_prob", False)

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
        qn, kn = g.t[p + "attn_q_norm.weight"], g.t[p + "attn_k_norm.weight"]
        if qn.size == hd:  # per head (qwen3, gemma3)
            q, k = rms_norm(q, qn, cfg.eps), rms_norm(k, kn, cfg.eps)
        else:  # over the whole projection (olmoe)
            q = rms_norm(q.reshape(T, -1), qn, cfg.eps).reshape(T, cfg.n_head, hd)
            k = rms_norm(k.reshape(T, -1), kn, cfg.eps).reshape(T, cfg.n_kv, hd)
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


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def swiglu(x, gate, up, down):
    return (silu(x @ gate.T) * (x @ up.T)) @ down.T


def moe(cfg, g, il, x, router_probs=None):
    """Token by token: softmax over the router, top k, optional renormalisation, the chosen
    experts' weighted sum; plus the shared expert, sigmoid-gated where it has a gate."""
    p = f"blk.{il}."
    probs = softmax(x @ g.t[p + "ffn_gate_inp.weight"].T)  # [T, n_expert]
    if router_probs is not None:
        router_probs.append(probs)
    out = np.zeros_like(x)
    for t in range(x.shape[0]):
        top = np.argsort(-probs[t], kind="stable")[: cfg.n_expert_used]
        w = probs[t, top] / (probs[t, top].sum() if cfg.norm_topk else 1.0)
        for e, we in zip(top, w):
            out[t] += we * swiglu(x[t], *(g.expert(il, n, e) for n in ("gate", "up", "down")))
    if p + "ffn_gate_shexp.weight" in g.t:
        shared = swiglu(x, *(g.t[p + f"ffn_{n}_shexp.weight"] for n in ("gate", "up", "down")))
        if p + "ffn_gate_inp_shexp.weight" in g.t:
            gate = g.t[p + "ffn_gate_inp_shexp.weight"].reshape(-1, cfg.n_embd)  # [1, n_embd]
            shared = shared / (1.0 + np.exp(-(x @ gate.T)))
        out += shared
    return out


def router_margin(g, tokens):
    """The smallest gap, over every token and MoE layer, between the k-th and (k+1)-th router
    probability: how far the reference's expert choice is from a tie that float32 could flip."""
    cfg, probs = Config(g), []
    forward(g, tokens, probs)
    k = cfg.n_expert_used
    return min(float((s[:, k - 1] - s[:, k]).min()) for s in (np.sort(p, axis=-1)[:, ::-1] for p in probs))


def forward(g, tokens, router_probs=None):
    """Logits [T, n_vocab] (float64) for tokens at positions 0..T-1; each MoE layer's router
    probabilities [T, n_expert] are appended to router_probs when given."""
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
            x = rms_norm(h, g.t[p + "ffn_norm.weight"], cfg.eps)
            h = h + (moe(cfg, g, il, x, router_probs) if p + "ffn_gate_inp.weight" in g.t else ffn(g, il, x, silu))
    h = rms_norm(h, g.t["output_norm.weight"], cfg.eps)
    out = g.t.get("output.weight", g.t["token_embd.weight"])
    return h @ out.T


if __name__ == "__main__":
    g = HfCheckpoint(sys.argv[1]) if os.path.isdir(sys.argv[1]) else Gguf(sys.argv[1])
    toks = [int(x) for x in sys.argv[2:]]
    print(" ".join(str(int(i)) for i in forward(g, toks).argmax(axis=-1)))
