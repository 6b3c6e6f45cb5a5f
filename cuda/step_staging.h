// The ints a CUDA step's kernels index by, staged on the host for one upload: tokens,
// positions, output rows, each token's KV storage row per layer group, and per sequence run
// and group the attention table (kernel_api.h DevKV: first slot, length, blocks). Where each
// lies in the array depends on the step's shape only, never on the cache's lengths (tables
// have room for StepKV::table_capacity blocks), so a CUDA graph of the step replays with
// the next step's ints uploaded to the same addresses.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "cuda/kernel_api.h"
#include "cuda/step_graphs.h"

namespace ember::cuda {

struct StagedStep {
  StepShape shape;
  std::vector<int32_t> ints;
  size_t tokens = 0, pos = 0, out_rows = 0;        // offsets into ints
  std::vector<size_t> kv_rows;                     // per group
  size_t run_bounds = 0;                           // DevRuns::bounds, n_runs + 1 rows
  int64_t max_run_rows = 0;
  int table_blocks = 0;                            // each table's room for blocks
  int n_groups = 0;
  // The DevKV tables, run-major: run r's table for group g at
  // tables + (r * n_groups + g) * table_ints().
  size_t tables = 0;
  size_t table_ints() const { return kDevKVHeader + static_cast<size_t>(table_blocks); }
  size_t group_table(int g) const { return tables + static_cast<size_t>(g) * table_ints(); }
  int64_t table_stride() const { return static_cast<int64_t>(n_groups * table_ints()); }  // run to run
};

void stage_step(const StepKV& kv, const StepInputs& in, StagedStep& out);

}  // namespace ember::cuda
