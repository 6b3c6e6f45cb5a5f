// The attention table of `ember bench-ops` (bench_ops_attention.cpp).
#pragma once

namespace ember::cli {

// Prints the CPU attention op's time per call for decode (one query) at a few depths and
// for a 512-token prefill, on model-shaped heads with an f16 cache, with `threads` threads;
// each figure is the median of `reps` rounds.
void print_attention_table(int threads, int reps);

}  // namespace ember::cli
