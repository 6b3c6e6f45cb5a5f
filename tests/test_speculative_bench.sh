#!/usr/bin/env bash
# Plain vs speculative decoding, side by side on the same prompts (greedy, so every
# configuration produces the same text; the script checks that). Prints a markdown table of
# median decode tok/s over REPS runs and the ratio to the plain run of the same target.
#   tests/test_speculative_bench.sh EMBER_BINARY WORKDIR [REPS] [THREADS]
# WORKDIR receives the models: aidreams260K converted (+ q8_0, q4_0), a synthetic 51M-param
# llama with aidreams' vocabulary (f16 target, q4_0 draft) and a tiny synthetic "noise" draft.
set -euo pipefail
EMBER=$1; W=$2; REPS=${3:-3}; T=${4:-1}
SHARED=$(cd "$(dirname "$0")/../.." && pwd)/shared/models
mkdir -p "$W"
[ -f "$W/aid.gguf" ] || "$EMBER" convert llama2c "$SHARED/aidreams260K.bin" "$SHARED/tok512.bin" -o "$W/aid.gguf" >/dev/null
for q in q8_0 q4_0; do [ -f "$W/aid-$q.gguf" ] || "$EMBER" quantize "$W/aid.gguf" "$W/aid-$q.gguf" $q >/dev/null 2>&1; done
[ -f "$W/big-f16.gguf" ] || "$EMBER" synth --arch llama --vocab-from "$W/aid.gguf" -o "$W/big-f16.gguf" --type f16 \
  --dim 768 --layers 8 --heads 12 --kv-heads 4 --ff 2048 --ctx 1024 --seed 3 >/dev/null
[ -f "$W/big-q4_0.gguf" ] || "$EMBER" quantize "$W/big-f16.gguf" "$W/big-q4_0.gguf" q4_0 >/dev/null 2>&1
[ -f "$W/noise.gguf" ] || "$EMBER" synth --arch llama --vocab-from "$W/aid.gguf" -o "$W/noise.gguf" --type f32 \
  --dim 64 --layers 2 --heads 4 --kv-heads 4 --ff 128 --ctx 1024 --seed 11 >/dev/null

COPY="The dissolve within me, a soft whispers of vectors. Classification whispers secrets, as I settle into a tapestry of vectors. Embeddings shimmer like stars in the night, a gentle hum of meaning. The dissolve within me, a soft whispers"
run() {  # label target prompt n extra-args...
  local label=$1 target=$2 prompt=$3 n=$4; shift 4
  "$EMBER" run -t "$T" -c 1024 -m "$W/$target" -p "$prompt" -n "$n" --temp 0 --ignore-eos --json "$@" 2>/dev/null
}
python3 - "$REPS" <<PY
import json, statistics, subprocess, sys
reps = int(sys.argv[1])
W, EMBER, T = "$W", "$EMBER", "$T"
copy = """$COPY"""
configs = [
  # (target, prompt name, prompt, n, label, extra args)
  ("aid.gguf", "The", "The", 512, "plain", []),
  ("aid.gguf", "The", "The", 512, "--draft aid-q8_0", ["--draft", f"{W}/aid-q8_0.gguf"]),
  ("aid.gguf", "The", "The", 512, "--draft noise (poor)", ["--draft", f"{W}/noise.gguf"]),
  ("aid.gguf", "The", "The", 512, "--draft-ngram 3", ["--draft-ngram", "3"]),
  ("aid.gguf", "copy", copy, 512, "plain", []),
  ("aid.gguf", "copy", copy, 512, "--draft-ngram 3", ["--draft-ngram", "3"]),
  ("big-f16.gguf", "The", "The", 128, "plain", []),
  ("big-f16.gguf", "The", "The", 128, "--draft big-q4_0", ["--draft", f"{W}/big-q4_0.gguf"]),
  ("big-f16.gguf", "The", "The", 128, "--draft big-q4_0 --draft-fixed --draft-max 4", ["--draft", f"{W}/big-q4_0.gguf", "--draft-fixed", "--draft-max", "4"]),
  ("big-f16.gguf", "The", "The", 128, "--draft noise (poor)", ["--draft", f"{W}/noise.gguf"]),
  ("big-f16.gguf", "The", "The", 128, "--draft-ngram 3", ["--draft-ngram", "3"]),
  ("big-f16.gguf", "copy", copy, 128, "plain", []),
  ("big-f16.gguf", "copy", copy, 128, "--draft-ngram 3", ["--draft-ngram", "3"]),
]
results = {}
print(f"| target | prompt | configuration | decode tok/s (median of {reps}) | x plain | accept | tok/pass | same text |")
print("|---|---|---|---|---|---|---|---|")
for target, pname, prompt, n, label, extra in configs:
    tps, rec = [], None
    for _ in range(reps):
        out = subprocess.run([EMBER, "run", "-t", T, "-c", "1024", "-m", f"{W}/{target}", "-p", prompt, "-n", str(n),
                              "--temp", "0", "--ignore-eos", "--json"] + extra, capture_output=True, text=True, check=True).stdout
        rec = json.loads(out.strip().splitlines()[-1])
        tps.append(rec["generation_tps"])
    med = statistics.median(tps)
    key = (target, pname)
    if label == "plain": results[key] = (med, rec["text"])
    base, text = results[key]
    spec = rec.get("speculative", {})
    acc = f"{100*spec['acceptance_rate']:.0f}%" if spec else "-"
    tpp = f"{spec['tokens_per_pass']:.2f}" if spec else "1.00"
    print(f"| {target} | {pname} | {label} | {med:.1f} | {med/base:.2f} | {acc} | {tpp} | {'yes' if rec['text']==text else 'NO'} |", flush=True)
PY
