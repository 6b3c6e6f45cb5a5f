#!/usr/bin/env python3
"""Writes tiny random-weight Hugging Face checkpoints of the four mixture-of-experts classes
`ember convert hf` reads, plus golden logits of reference.py's float64 forward over each
checkpoint's own tensors, for tests/test_convert_hf_moe.cpp (so CI needs no Python):

    tests/models/hf-tiny-<family>/      config.json, model.safetensors (BF16, experts one
                                        2-D tensor each, as transformers saves them),
                                        tokenizer.json (byte-level BPE), tokenizer_config.json
    tests/golden/hf-tiny-<family>.logits   as make_tiny_models.py writes them

Each seed is kept only when every router choice of the golden tokens is clear of a tie
(reference.router_margin), so float32 arithmetic picks the same experts as float64.

Run from the repository root:  python3 tools/reference/make_tiny_hf_moe.py

llama.cpp on the converted files (it loads each and gives the same perplexity):
    for f in qwen3moe qwen2moe mixtral olmoe; do
      build-dev/ember convert hf tests/models/hf-tiny-$f -o /tmp/hf-tiny-$f.gguf --type f32
      tools/ppl-vs-llamacpp --cases "" --types f32 --model /tmp/hf-tiny-$f.gguf; done
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import reference  # noqa: E402
from make_tiny_models import write_golden  # noqa: E402

N_POSITIONS = 32
N_VOCAB = 260  # 256 byte symbols, two merges, one special token, one padding row
MIN_ROUTER_MARGIN = 2e-3

COMMON = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
              max_position_embeddings=256, rms_norm_eps=1e-6, rope_theta=10000.0, vocab_size=N_VOCAB,
              num_experts_per_tok=2, tie_word_embeddings=True)
FAMILIES = {
    "qwen3moe": dict(architectures=["Qwen3MoeForCausalLM"], intermediate_size=64, moe_intermediate_size=16,
                     num_experts=4, norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[]),
    # qwen2moe and olmoe: untied as Qwen1.5-MoE and OLMoE (llama.cpp's qwen2moe and olmoe
    # require output.weight).
    "qwen2moe": dict(architectures=["Qwen2MoeForCausalLM"], intermediate_size=64, moe_intermediate_size=16,
                     shared_expert_intermediate_size=24, num_experts=4, norm_topk_prob=False,
                     decoder_sparse_step=1, mlp_only_layers=[], tie_word_embeddings=False),
    # Mixtral: the experts are intermediate_size wide, the head untied, Q/K permuted by convert.
    "mixtral": dict(architectures=["MixtralForCausalLM"], intermediate_size=16, num_local_experts=4,
                    tie_word_embeddings=False, sliding_window=None),
    # OLMoE: k_norm spans the whole model width, so as many key heads as query heads.
    "olmoe": dict(architectures=["OlmoeForCausalLM"], intermediate_size=16, num_experts=4, num_key_value_heads=4,
                  norm_topk_prob=False, clip_qkv=None, rms_norm_eps=1e-5, tie_word_embeddings=False),
}


def bf16(a):
    """Round to bfloat16 (nearest even); returns the uint16 bit patterns."""
    u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")


def write_safetensors(path, tensors):
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name, a in tensors.items():
        b = bf16(a).tobytes()
        header[name] = {"dtype": "BF16", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-(len(h) + 8) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h + b"".join(blobs))


def byte_symbols():
    """GPT-2's byte-to-unicode map: printable bytes stand for themselves."""
    keep = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    extra = iter(range(256, 512))
    return [chr(b) if b in keep else chr(next(extra)) for b in range(256)]


def write_tokenizer(folder):
    vocab = {s: i for i, s in enumerate(byte_symbols())}
    vocab["he"], vocab["hel"] = 256, 257
    tok = {"added_tokens": [{"id": 258, "content": "<|endoftext|>", "special": True}],
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False},
           "model": {"type": "BPE", "vocab": vocab, "merges": ["h e", "he l"]}}
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        json.dump(tok, f, ensure_ascii=False)
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"eos_token": "<|endoftext|>", "bos_token": "<|endoftext|>"}, f)


def make_tensors(c, arch, rng):
    E, H, KV, D, V = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"], N_VOCAB
    n_exp = c.get("num_experts", c.get("num_local_experts"))
    F = c.get("moe_intermediate_size", c["intermediate_size"])
    t = {}

    def mat(name, rows, cols, scale=1.0):
        t[name] = scale * rng.standard_normal((rows, cols)) / np.sqrt(cols)

    def norm(name, n):
        t[name] = 1.0 + 0.1 * rng.standard_normal(n)

    t["model.embed_tokens.weight"] = rng.standard_normal((V, E))
    for il in range(c["num_hidden_layers"]):
        p = f"model.layers.{il}."
        norm(p + "input_layernorm.weight", E)
        norm(p + "post_attention_layernorm.weight", E)
        mat(p + "self_attn.q_proj.weight", H * D, E)
        mat(p + "self_attn.k_proj.weight", KV * D, E)
        mat(p + "self_attn.v_proj.weight", KV * D, E)
        mat(p + "self_attn.o_proj.weight", E, H * D)
        if arch == "qwen2moe":
            for x, rows in (("q", H * D), ("k", KV * D), ("v", KV * D)):
                t[p + f"self_attn.{x}_proj.bias"] = 0.5 * rng.standard_normal(rows)
        if arch == "qwen3moe":
            norm(p + "self_attn.q_norm.weight", D)
            norm(p + "self_attn.k_norm.weight", D)
        if arch == "olmoe":
            norm(p + "self_attn.q_norm.weight", H * D)
            norm(p + "self_attn.k_norm.weight", KV * D)
        moe = "block_sparse_moe" if arch == "mixtral" else "mlp"
        mat(p + f"{moe}.gate.weight", n_exp, E, 2.0)  # spread router logits: clear choices
        names = ("w1", "w3", "w2") if arch == "mixtral" else ("gate_proj", "up_proj", "down_proj")
        for e in range(n_exp):
            q = p + f"{moe}.experts.{e}."
            mat(q + names[0] + ".weight", F, E)
            mat(q + names[1] + ".weight", F, E)
            mat(q + names[2] + ".weight", E, F)
        if arch == "qwen2moe":
            S = c["shared_expert_intermediate_size"]
            mat(p + "mlp.shared_expert.gate_proj.weight", S, E)
            mat(p + "mlp.shared_expert.up_proj.weight", S, E)
            mat(p + "mlp.shared_expert.down_proj.weight", E, S)
            mat(p + "mlp.shared_expert_gate.weight", 1, E)
    norm("model.norm.weight", E)
    if not c["tie_word_embeddings"]:
        mat("lm_head.weight", V, E, 4.0)
    return t


def make(arch, out_models, out_golden):
    c = {**COMMON, **FAMILIES[arch]}
    folder = os.path.join(out_models, f"hf-tiny-{arch}")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(c, f, indent=1)
    write_tokenizer(folder)
    for seed in range(100):
        rng = np.random.default_rng(2900 + seed)
        write_safetensors(os.path.join(folder, "model.safetensors"), make_tensors(c, arch, rng))
        tokens = rng.integers(0, N_VOCAB - 1, N_POSITIONS).tolist()
        g = reference.HfCheckpoint(folder)
        margin = reference.router_margin(g, tokens)
        if margin >= MIN_ROUTER_MARGIN:
            break
    else:
        sys.exit(f"{arch}: no seed gives router margins above {MIN_ROUTER_MARGIN}")
    logits = reference.forward(g, tokens)
    write_golden(os.path.join(out_golden, f"hf-tiny-{arch}.logits"), tokens, logits)
    size = sum(os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder))
    print(f"{arch}: seed {2900 + seed}, {size} bytes, router margin {margin:.4f}, logits std {logits.std():.3f}")


def main():
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    for arch in FAMILIES:
        make(arch, os.path.join(root, "tests", "models"), os.path.join(root, "tests", "golden"))


if __name__ == "__main__":
    main()
