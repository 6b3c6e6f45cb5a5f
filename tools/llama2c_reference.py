#!/usr/bin/env python3
"""Independent numpy port of llama2.c's run.c (forward pass, tokenizer, greedy generate).

It is the oracle for `ember convert llama2c`: it generates from the llama2.c checkpoint
itself, and (with --gguf) from a converted llama GGUF read through the `gguf` Python
package, using the llama-GGUF conventions (adjacent-pair RoPE, tensor names blk.N.*,
ne[0] = input dimension). Both must print the same text; if the converter permuted the
Q/K rows wrongly the GGUF run diverges.

  tools/llama2c_reference.py ../shared/models/aidreams260K.bin ../shared/models/tok512.bin -p The -n 32
  tools/llama2c_reference.py --gguf out.gguf -p The -n 32
"""
import argparse
import struct
import sys

import numpy as np

# ---------------------------------------------------------------------------------------
# llama2.c checkpoint: 7 int32 header fields, then float32 weights in this order.


def load_checkpoint(path):
    raw = open(path, "rb").read()
    dim, hidden, n_layers, n_heads, n_kv_heads, vocab, seq_len = struct.unpack("<7i", raw[:28])
    shared = vocab > 0
    vocab = abs(vocab)
    head_size = dim // n_heads
    kv_dim = n_kv_heads * head_size
    w = np.frombuffer(raw, dtype="<f4", offset=28)
    pos = 0

    def take(*shape):
        nonlocal pos
        n = int(np.prod(shape))
        out = w[pos:pos + n].reshape(shape)
        pos += n
        return out

    p = dict(dim=dim, hidden=hidden, n_layers=n_layers, n_heads=n_heads, n_kv_heads=n_kv_heads,
             vocab=vocab, seq_len=seq_len, rope_base=10000.0, eps=1e-5)
    p["tok_emb"] = take(vocab, dim)
    p["rms_att"] = take(n_layers, dim)
    p["wq"] = take(n_layers, dim, dim)            # [out, in] like run.c's matmul
    p["wk"] = take(n_layers, kv_dim, dim)
    p["wv"] = take(n_layers, kv_dim, dim)
    p["wo"] = take(n_layers, dim, dim)
    p["rms_ffn"] = take(n_layers, dim)
    p["w1"] = take(n_layers, hidden, dim)
    p["w2"] = take(n_layers, dim, hidden)
    p["w3"] = take(n_layers, hidden, dim)
    p["rms_final"] = take(dim)
    take(seq_len * head_size // 2)  # legacy freq_cis_real
    take(seq_len * head_size // 2)  # legacy freq_cis_imag
    p["wcls"] = p["tok_emb"] if shared else take(vocab, dim)
    return p


def load_tokenizer(path, vocab_size):
    raw = open(path, "rb").read()
    (max_len,) = struct.unpack_from("<i", raw, 0)
    off = 4
    pieces, scores = [], []
    for _ in range(vocab_size):
        score, n = struct.unpack_from("<fi", raw, off)
        off += 8
        pieces.append(raw[off:off + n])
        scores.append(score)
        off += n
    return pieces, scores


# ---------------------------------------------------------------------------------------
# A converted llama GGUF, read back into the same dict layout (no permutation undone: the
# forward below applies adjacent-pair RoPE exactly as a llama-GGUF runtime does).


def load_gguf(path):
    import gguf  # the reference reader from PyPI, independent of ember's

    r = gguf.GGUFReader(path)

    def kv(key):
        f = r.fields[key]
        if f.types[0] == gguf.GGUFValueType.ARRAY:
            if f.types[-1] == gguf.GGUFValueType.STRING:
                return [bytes(f.parts[i]) for i in f.data]
            return [f.parts[i][0].item() for i in f.data]
        if f.types[0] == gguf.GGUFValueType.STRING:
            return bytes(f.parts[f.data[0]]).decode()
        return f.parts[f.data[0]][0].item()

    t = {x.name: x for x in r.tensors}

    def tensor(name):
        x = t[name]
        assert x.tensor_type == gguf.GGMLQuantizationType.F32, f"{name}: reference wants F32"
        # numpy shape is reversed GGUF ne: [ne1, ne0] = [out, in]
        return np.asarray(x.data, dtype=np.float32).reshape(list(reversed([int(d) for d in x.shape])))

    n_layers = kv("llama.block_count")
    p = dict(dim=kv("llama.embedding_length"), hidden=kv("llama.feed_forward_length"),
             n_layers=n_layers, n_heads=kv("llama.attention.head_count"),
             n_kv_heads=kv("llama.attention.head_count_kv"),
             seq_len=kv("llama.context_length"),
             eps=kv("llama.attention.layer_norm_rms_epsilon"),
             rope_base=kv("llama.rope.freq_base") if "llama.rope.freq_base" in r.fields else 10000.0)
    p["tok_emb"] = tensor("token_embd.weight")
    p["vocab"] = p["tok_emb"].shape[0]
    stack = lambda fmt: np.stack([tensor(fmt.format(i)) for i in range(n_layers)])
    p["rms_att"] = stack("blk.{}.attn_norm.weight")
    p["wq"] = stack("blk.{}.attn_q.weight")
    p["wk"] = stack("blk.{}.attn_k.weight")
    p["wv"] = stack("blk.{}.attn_v.weight")
    p["wo"] = stack("blk.{}.attn_output.weight")
    p["rms_ffn"] = stack("blk.{}.ffn_norm.weight")
    p["w1"] = stack("blk.{}.ffn_gate.weight")
    p["w2"] = stack("blk.{}.ffn_down.weight")
    p["w3"] = stack("blk.{}.ffn_up.weight")
    p["rms_final"] = tensor("output_norm.weight")
    p["wcls"] = tensor("output.weight") if "output.weight" in t else p["tok_emb"]
    pieces = [s.replace("\u2581".encode(), b" ") for s in kv("tokenizer.ggml.tokens")]
    bos = kv("tokenizer.ggml.bos_token_id")
    pieces[bos] = b"\n<s>\n"  # as llama2.c's tokenizer.bin spells it
    eos = kv("tokenizer.ggml.eos_token_id")
    pieces[eos] = b"\n</s>\n"
    return p, (pieces, kv("tokenizer.ggml.scores"))


# ---------------------------------------------------------------------------------------
# run.c's forward, one token at a time.


def rmsnorm(x, w, eps):
    return w * (x / np.sqrt(np.mean(x * x) + eps))


class Forward:
    def __init__(self, p):
        self.p = p
        hs = p["dim"] // p["n_heads"]
        kv_dim = p["n_kv_heads"] * hs
        self.k_cache = np.zeros((p["n_layers"], p["seq_len"], kv_dim), np.float32)
        self.v_cache = np.zeros_like(self.k_cache)

    def rope(self, vec, pos, head_size):
        # run.c: rotate the adjacent pair (i, i+1); frequency from the index within the head
        i = np.arange(0, vec.shape[0], 2)
        freq = 1.0 / np.power(self.p["rope_base"], (i % head_size) / head_size)
        c, s = np.cos(pos * freq), np.sin(pos * freq)
        v0, v1 = vec[0::2].copy(), vec[1::2].copy()
        out = np.empty_like(vec)
        out[0::2] = v0 * c - v1 * s
        out[1::2] = v0 * s + v1 * c
        return out

    def __call__(self, token, pos):
        p = self.p
        dim, nh, nkv = p["dim"], p["n_heads"], p["n_kv_heads"]
        hs = dim // nh
        x = p["tok_emb"][token].astype(np.float32).copy()
        for l in range(p["n_layers"]):
            xb = rmsnorm(x, p["rms_att"][l], p["eps"])
            q = p["wq"][l] @ xb
            k = p["wk"][l] @ xb
            v = p["wv"][l] @ xb
            q = self.rope(q, pos, hs)
            k = self.rope(k, pos, hs)
            self.k_cache[l, pos] = k
            self.v_cache[l, pos] = v
            att_out = np.zeros(dim, np.float32)
            for h in range(nh):
                kh = h // (nh // nkv)
                qh = q[h * hs:(h + 1) * hs]
                ks = self.k_cache[l, :pos + 1, kh * hs:(kh + 1) * hs]
                vs = self.v_cache[l, :pos + 1, kh * hs:(kh + 1) * hs]
                sc = ks @ qh / np.sqrt(hs)
                sc = np.exp(sc - sc.max())
                sc /= sc.sum()
                att_out[h * hs:(h + 1) * hs] = sc @ vs
            x = x + p["wo"][l] @ att_out
            xb = rmsnorm(x, p["rms_ffn"][l], p["eps"])
            h1 = p["w1"][l] @ xb
            h3 = p["w3"][l] @ xb
            x = x + p["w2"][l] @ ((h1 / (1.0 + np.exp(-h1))) * h3)
        x = rmsnorm(x, p["rms_final"], p["eps"])
        return p["wcls"] @ x


# ---------------------------------------------------------------------------------------
# run.c's tokenizer: BOS, dummy-prefix space, UTF-8 code points (byte fallback +3), then
# greedy merges of the best-scoring adjacent pair.


def encode(text, pieces, scores, bos=True):
    index = {s: i for i, s in reversed(list(enumerate(pieces)))}
    toks = [1] if bos else []
    if text:
        toks.append(index[b" "])
    data = text.encode()
    i = 0
    while i < len(data):
        j = i + 1
        while j < len(data) and (data[j] & 0xC0) == 0x80 and j - i < 4:
            j += 1
        cp = data[i:j]
        if cp in index:
            toks.append(index[cp])
        else:
            toks.extend(b + 3 for b in cp)
        i = j
    while True:
        best, best_id, best_i = -1e10, -1, -1
        for i in range(len(toks) - 1):
            s = pieces[toks[i]] + pieces[toks[i + 1]]
            if s in index and scores[index[s]] > best:
                best, best_id, best_i = scores[index[s]], index[s], i
        if best_i < 0:
            break
        toks[best_i:best_i + 2] = [best_id]
    return toks


def decode_piece(prev, tok, pieces):
    s = pieces[tok]
    if prev == 1 and s.startswith(b" "):
        s = s[1:]
    if len(s) == 6 and s.startswith(b"<0x") and s.endswith(b">"):
        s = bytes([int(s[3:5], 16)])
    return s


def generate(p, tok, prompt, steps):
    pieces, scores = tok
    prompt_toks = encode(prompt, pieces, scores)
    fwd = Forward(p)
    out = b""
    token, ids = prompt_toks[0], []
    for pos in range(min(steps, p["seq_len"])):
        logits = fwd(token, pos)
        nxt = prompt_toks[pos + 1] if pos < len(prompt_toks) - 1 else int(np.argmax(logits))
        if nxt == 1:
            break
        ids.append(nxt)
        out += decode_piece(token, nxt, pieces)
        token = nxt
    return out.decode("utf-8", errors="replace"), prompt_toks, ids


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint", nargs="?")
    ap.add_argument("tokenizer", nargs="?")
    ap.add_argument("--gguf", help="run a converted llama GGUF (F32 tensors) instead")
    ap.add_argument("-p", "--prompt", default="The")
    ap.add_argument("-n", "--steps", type=int, default=32, help="positions to run, prompt included")
    ap.add_argument("--ids", action="store_true", help="also print prompt and generated token ids")
    a = ap.parse_args()
    if a.gguf:
        p, tok = load_gguf(a.gguf)
    else:
        if not (a.checkpoint and a.tokenizer):
            ap.error("give CHECKPOINT TOKENIZER or --gguf FILE")
        p = load_checkpoint(a.checkpoint)
        tok = load_tokenizer(a.tokenizer, p["vocab"])
    text, prompt_ids, ids = generate(p, tok, a.prompt, a.steps)
    print(text)
    if a.ids:
        print("prompt ids:", " ".join(map(str, prompt_ids)))
        print("generated ids:", " ".join(map(str, ids)))


if __name__ == "__main__":
    sys.exit(main())
