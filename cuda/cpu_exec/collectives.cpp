#include "cuda/cpu_exec/collectives.h"

#include "util/error.h"

namespace ember::cpu_exec {

// PTX ISA, shfl.sync: CUDA passes c = ((32 - width) << 8) | clamp, with clamp 0 for up and
// 31 otherwise; segmask = c[12:8] picks a lane's segment, and a source lane past the
// segment's bound (for xor: in a later segment) reads the caller's own value.
int shuffle_source(ShuffleMode mode, int lane, unsigned b, int width, unsigned mask, const char* op,
                   SourceSite where) {
  if (width < 1 || width > kWarpLanes || (width & (width - 1)) != 0)
    Block::current().fail_here(
        fmt::format("calls {} at {} with width {}, not a power of two in 1..32", op, site_name(where), width));
  const int segmask = kWarpLanes - width;
  const int clamp = mode == ShuffleMode::Up ? 0 : kWarpLanes - 1;
  const int max_lane = (lane & segmask) | (clamp & ~segmask);
  const int min_lane = lane & segmask;
  const int bval = static_cast<int>(b & 0x1fu);
  int src = lane;
  bool valid = false;
  switch (mode) {
    case ShuffleMode::Up:
      src = lane - bval;
      valid = src >= max_lane;
      break;
    case ShuffleMode::Down:
      src = lane + bval;
      valid = src <= max_lane;
      break;
    case ShuffleMode::Xor:
      src = lane ^ bval;
      valid = src <= max_lane;
      break;
    case ShuffleMode::Idx:
      src = min_lane | (bval & ~segmask);
      valid = src <= max_lane;
      break;
  }
  if (!valid) src = lane;
  if (!(mask & (1u << src)))
    Block::current().fail_here(
        fmt::format("calls {} at {} reading lane {}, which mask {:#010x} leaves out", op, site_name(where), src, mask));
  return src;
}

unsigned ballot(const char* op, unsigned mask, int predicate, SourceSite where) {
  const int bit = predicate != 0;
  Block& block = Block::current();
  const Exchange& ex = block.exchange(op, mask, kWarpLanes, &bit, sizeof bit, where);
  unsigned votes = 0;
  for (int l = 0; l < kWarpLanes; ++l) {
    int vote = 0;
    std::memcpy(&vote, ex.values[static_cast<size_t>(l)].data(), sizeof vote);
    if ((mask & (1u << l)) && vote) votes |= 1u << l;
  }
  block.done_reading(ex);
  return votes;
}

}  // namespace ember::cpu_exec
