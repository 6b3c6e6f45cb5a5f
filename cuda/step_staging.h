// The ints a CUDA step's kernels index by, staged on the host for one upload: tokens,
// positions, output rows, each token's KV storage row per layer group, and per sequence run
// and group the attention table (kernel_api.h DevKV: first slot, length, blocks). Where each
// lies in the array depends on the step's shape only, never on the cache's lengths (tables
// have room for KVCache::table_capacity blocks), so a CUDA graph of the step replays with
// the next step's ints uploaded to the same addresses.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "cuda/step_graphs.h"

namespace ember {
class KVCache;
}

namespace ember::cuda {

struct StagedStep {
  StepShape shape;
  std::vector<int32_t> ints;
  size_t tokens = 0, pos = 0, out_rows = 0;        // offsets into ints
  std::vector<size_t> kv_rows;                     // per group
  std::vector<std::vector<size_t>> tables;         // per run, per group: DevKV tables
  size_t run_bounds = 0;                           // DevRuns::bounds, n_runs + 1 rows
  int64_t max_run_rows = 0;
  int table_blocks = 0;                            // each table's room for blocks
  int64_t table_stride = 0;                        // ints from a run's table to the next run's
};

void stage_step(const KVCache& kv, const StepInputs& in, StagedStep& out);

}  // namespace ember::cuda
