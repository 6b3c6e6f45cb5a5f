#!/usr/bin/env bash
# Tokenizer benchmark: tokenizes 1 MiB of mixed English / C++ / multilingual text with each
# vocabulary in ../shared/vocab via `ember tokenize -f FILE --ids`, and reports the median of
# 3 runs, minus the time to load the vocabulary (the same command on an empty prompt).
#   tests/data/tokenizer/bench_tokenize.sh [path/to/ember]     (default: build/ember)
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
ember=${1:-$root/build/ember}
vocab=$root/../shared/vocab
text=$(mktemp /tmp/ember_bench_XXXX.txt)
trap 'rm -f "$text"' EXIT

# One third each: English prose (README, LICENSE), C++ (src/), and the multilingual test strings
# of the vocabularies, interleaved in 4 KiB blocks, cut to exactly 1 MiB on a character boundary.
python3 - "$root" "$vocab" "$text" <<'PY'
import glob, sys
root, vocab, out = sys.argv[1:4]
def read(paths):
    return "".join(open(p, encoding="utf-8", errors="replace").read() for p in sorted(paths))
english = read([f"{root}/README.md", f"{root}/LICENSE"])
code = read(glob.glob(f"{root}/src/**/*.cpp", recursive=True) + glob.glob(f"{root}/src/**/*.h", recursive=True))
multi = read(glob.glob(f"{vocab}/*.inp")).replace("\n__ggml_vocab_test__\n", "\n")
target, block = 1 << 20, 4096
parts, pos = [], [0, 0, 0]
size = 0
while size < target:
    for i, src in enumerate((english, code, multi)):
        chunk = (src * (block // max(len(src), 1) + 2))[pos[i] % len(src):][:block]
        pos[i] += block
        parts.append(chunk)
        size += len(chunk.encode())
data = "".join(parts).encode()[:target].decode("utf-8", "ignore")
open(out, "w", encoding="utf-8").write(data)
PY

median() { sort -n | sed -n 2p; }
# CPU seconds (user + system): steadier than wall time on a shared machine.
seconds() { /usr/bin/time -f "%U + %S" "$@" 2>&1 >/dev/null | tail -1 | bc; }
printf '%-16s %-7s %9s %9s %10s %8s\n' vocabulary type load_s tokenize_s MB_per_s tokens
for v in llama-spm phi-3 baichuan gpt-2 falcon deepseek-llm deepseek-coder refact starcoder mpt gpt-neox; do
  model=$vocab/ggml-vocab-$v.gguf
  load=$(for i in 1 2 3; do seconds "$ember" tokenize -m "$model" -p "" --ids; done | median)
  full=$(for i in 1 2 3; do seconds "$ember" tokenize -m "$model" -f "$text" --ids; done | median)
  n=$("$ember" tokenize -m "$model" -f "$text" --ids | wc -w)
  type=$(case $v in llama-spm|phi-3|baichuan) echo spm;; *) echo bpe;; esac)
  tok=$(echo "$full - $load" | bc)
  printf '%-16s %-7s %9.3f %9.3f %10.2f %8d\n' "$v" "$type" "$load" "$tok" "$(echo "1.048576 / $tok" | bc -l)" "$n"
done
