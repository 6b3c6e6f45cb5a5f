#include "cuda/step_staging.h"

#include <algorithm>

#include "cuda/kernel_api.h"
#include "util/error.h"

namespace ember::cuda {
namespace {

size_t append(std::vector<int32_t>& ints, const int32_t* v, size_t n) {
  const size_t at = ints.size();
  ints.insert(ints.end(), v, v + n);
  return at;
}

// DevKV::table of `seq` in `group`: first slot, length, then its blocks, padded with -1 to
// the capacity (entries past the length are never read).
void append_table(std::vector<int32_t>& ints, const StepKV& kv, int group, int seq, int capacity) {
  const KVTable& t = kv.table(group, seq);
  if (t.n_blocks > capacity)
    fail(ErrorKind::Internal, "cuda step: sequence {} holds {} blocks, tables have room for {}", seq, t.n_blocks,
         capacity);
  const size_t at = ints.size();
  ints.push_back(static_cast<int32_t>(t.first_slot));
  ints.push_back(t.n_tokens);
  ints.insert(ints.end(), t.blocks, t.blocks + t.n_blocks);
  ints.resize(at + kDevKVHeader + static_cast<size_t>(capacity), -1);
}

}  // namespace

void stage_step(const StepKV& kv, const StepInputs& in, StagedStep& out) {
  const int n = in.n_tokens, n_groups = kv.n_groups;
  out.ints.clear();
  out.table_blocks = kv.table_capacity;
  out.shape = StepShape{n, in.n_out, {}};
  out.tokens = append(out.ints, in.tokens, static_cast<size_t>(n));
  out.pos = append(out.ints, in.pos, static_cast<size_t>(n));
  out.out_rows = append(out.ints, in.out_rows, static_cast<size_t>(in.n_out));
  out.kv_rows.assign(static_cast<size_t>(n_groups), 0);
  for (int g = 0; g < n_groups; ++g) {
    out.kv_rows[g] = out.ints.size();
    for (int t = 0; t < n; ++t) out.ints.push_back(static_cast<int32_t>(kv.row(g, t)));
  }
  out.n_groups = n_groups;
  out.tables = out.ints.size();
  std::vector<int32_t> bounds{0};
  out.max_run_rows = 0;
  for (int r0 = 0; r0 < n;) {
    int r1 = r0 + 1;
    while (r1 < n && in.seq[r1] == in.seq[r0]) ++r1;
    out.shape.run_lengths.push_back(r1 - r0);
    out.max_run_rows = std::max<int64_t>(out.max_run_rows, r1 - r0);
    bounds.push_back(r1);
    for (int g = 0; g < n_groups; ++g) append_table(out.ints, kv, g, in.seq[r0], out.table_blocks);
    r0 = r1;
  }
  out.run_bounds = append(out.ints, bounds.data(), bounds.size());
}

}  // namespace ember::cuda
