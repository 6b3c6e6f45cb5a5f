#!/usr/bin/env python3
"""Independent perplexity reference for `ember perplexity` (llama.cpp's method) in numpy.

It runs a llama2.c checkpoint directly (tools/llama2c_reference.py's port of run.c: no GGUF,
no ember code) over the tokens of a text and scores them exactly as llama.cpp's
llama-perplexity does:
  - tokens = BOS + the text's tokens (run.c's tokenizer, or ids given with --ids-file, e.g.
    the output of `ember tokenize --ids`),
  - non-overlapping chunks of n_ctx tokens, the first token of each chunk replaced by BOS,
  - the logits at positions n_ctx/2 .. n_ctx-2 score the next token (log-softmax in float64),
  - PPL = exp(mean nll), +/- PPL * sqrt((mean(nll^2) - mean(nll)^2) / (N - 1)).

  tools/ppl_reference.py ../shared/models/aidreams260K.bin ../shared/models/tok512.bin \
      tests/data/ppl_poems.txt -c 128
It prints the running values like ember/llama.cpp, then `Final estimate: PPL = X +/- Y`
with more digits, and (--json) a machine-readable line.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama2c_reference as l2c  # noqa: E402

BOS = 1  # llama2.c's tokenizer: <s>


def chunk_nlls(p, tokens, n_ctx, n_chunks):
    n_fit = len(tokens) // n_ctx
    if len(tokens) < 2 * n_ctx:
        raise SystemExit(f"need at least {2 * n_ctx} tokens, have {len(tokens)}")
    n_chunk = n_fit if n_chunks < 0 else min(n_chunks, n_fit)
    first = n_ctx // 2
    for c in range(n_chunk):
        chunk = list(tokens[c * n_ctx:(c + 1) * n_ctx])
        chunk[0] = BOS
        fwd = l2c.Forward(p)
        nll = []
        for pos in range(n_ctx - 1):
            logits = fwd(chunk[pos], pos).astype(np.float64)
            if pos >= first:
                m = logits.max()
                log_norm = m + np.log(np.exp(logits - m).sum())
                nll.append(log_norm - logits[tokens[c * n_ctx + pos + 1]])
        yield c + 1, nll


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint")
    ap.add_argument("tokenizer")
    ap.add_argument("text")
    ap.add_argument("-c", "--ctx", type=int, default=128)
    ap.add_argument("--chunks", type=int, default=-1)
    ap.add_argument("--ids-file", help="token ids (whitespace separated, BOS included) instead of run.c's tokenizer")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()

    p = l2c.load_checkpoint(a.checkpoint)
    if a.ctx > p["seq_len"]:
        raise SystemExit(f"-c {a.ctx} exceeds the checkpoint's seq_len {p['seq_len']}")
    if a.ids_file:
        tokens = [int(t) for t in open(a.ids_file).read().split()]
    else:
        pieces, scores = l2c.load_tokenizer(a.tokenizer, p["vocab"])
        tokens = l2c.encode(open(a.text, encoding="utf-8").read(), pieces, scores, bos=True)

    all_nll = []
    for c, nll in chunk_nlls(p, tokens, a.ctx, a.chunks):
        all_nll.extend(nll)
        print(f"[{c}]{np.exp(np.mean(all_nll)):.4f},", end="", flush=True)
    x = np.array(all_nll)
    n = len(x)
    mean = x.mean()
    ppl = float(np.exp(mean))
    var = (x * x).mean() - mean * mean
    err = ppl * float(np.sqrt(var / (n - 1)))
    print(f"\nFinal estimate: PPL = {ppl:.8f} +/- {err:.8f}")
    if a.json:
        print(json.dumps({"n_tokens": len(tokens), "n_ctx": a.ctx, "n_scored": n, "ppl": ppl, "ppl_error": err,
                          "tokens_sha": __import__("hashlib").sha256(" ".join(map(str, tokens)).encode()).hexdigest()}))


if __name__ == "__main__":
    main()
