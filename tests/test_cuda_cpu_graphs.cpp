// Decode steps of the CUDA backend replayed as CUDA graphs (cuda/step_graphs.h), run on the
// CPU execution, whose capture keeps every launch's arguments by value as a GPU graph does:
// so a length, a pointer or a table baked into a graph that should have followed the step
// gives different logits here. Each run is compared bitwise with the same run launched op
// by op (EMBER_CUDA_GRAPHS=0), over decode steps that cross KV block boundaries, a sliding
// window giving blocks back (gemma3), and several sequences per step.
#include <doctest/doctest.h>

#include <cstdlib>

#include "models/cuda_model_check.h"

using namespace ember;
using namespace ember::test;

TEST_CASE("cuda graphs on cpu: llama decode replays bitwise, across KV blocks") {
  check_graphs_match_direct("llama", 1, 40, on_cuda_cpu());
}

TEST_CASE("cuda graphs on cpu: gemma3 decode replays bitwise past its sliding window") {
  check_graphs_match_direct("gemma3", 1, 40, on_cuda_cpu());
}

TEST_CASE("cuda graphs on cpu: qwen3 steps of three sequences replay bitwise") {
  check_graphs_match_direct("qwen3", 3, 30, on_cuda_cpu());
}
