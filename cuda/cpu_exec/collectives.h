// __syncthreads, __syncwarp, the _sync shuffles and votes for kernels compiled as plain C++
// (part of cuda_compat.h), on top of the block scheduler's barrier and exchange (block.h).
// Shuffles move any trivially copyable value of up to 32 bytes (float, int64, __half, a
// struct) and follow PTX's shfl.sync rules for width, clamping and out-of-segment lanes;
// reading a lane outside the mask, a width that is not a power of two up to 32, or a mask
// without the caller's lane fails. Each takes the caller's source line for its messages.
#pragma once
#include <cstring>
#include "cuda/cpu_exec/source_site.h"
#include <type_traits>

#include "cuda/cpu_exec/block.h"

namespace ember::cpu_exec {

enum class ShuffleMode { Idx, Up, Down, Xor };

// The lane whose value `lane` reads (its own where PTX clamps); fails for a bad width or a
// source lane outside the mask.
int shuffle_source(ShuffleMode mode, int lane, unsigned b, int width, unsigned mask, const char* op,
                   SourceSite where);

template <class T>
T shuffle(ShuffleMode mode, const char* op, unsigned mask, const T& var, unsigned b, int width,
          SourceSite where) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= kLaneBytes, "shuffled values are copied bytewise");
  Block& block = Block::current();
  const int src = shuffle_source(mode, block.lane(), b, width, mask, op, where);
  const Exchange& ex = block.exchange(op, mask, width, &var, sizeof(T), where);
  T out;
  std::memcpy(&out, ex.values[static_cast<size_t>(src)].data(), sizeof(T));
  block.done_reading(ex);
  return out;
}

unsigned ballot(const char* op, unsigned mask, int predicate, SourceSite where);

}  // namespace ember::cpu_exec

inline void __syncthreads(ember::cpu_exec::SourceSite where = ember::cpu_exec::SourceSite::current()) {
  ember::cpu_exec::Block::current().sync_threads(where);
}

inline void __syncwarp(unsigned mask = 0xffffffffu, ember::cpu_exec::SourceSite where = ember::cpu_exec::SourceSite::current()) {
  ember::cpu_exec::Block& block = ember::cpu_exec::Block::current();
  block.done_reading(block.exchange("__syncwarp", mask, warpSize, nullptr, 0, where));
}

template <class T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize,
              ember::cpu_exec::SourceSite where = ember::cpu_exec::SourceSite::current()) {
  using ember::cpu_exec::ShuffleMode;
  return ember::cpu_exec::shuffle(ShuffleMode::Idx, "__shfl_sync", mask, var, static_cast<unsigned>(src_lane), width,
                                  where);
}

template <class T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                 ember::cpu_exec::SourceSite where = ember::cpu_exec::SourceSite::current()) {
  using ember::cpu_exec::ShuffleMode;
  return ember::cpu_exec::shuffle(ShuffleMode::Up, "__shfl_up_sync", mask, var, delta, width, where);
}

template <class T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                   ember::cpu_exec::SourceSite where = ember::cpu_exec::SourceSite::current()) {
  using ember::cpu_exec::ShuffleMode;
  return ember::cpu_exec::shuffle(ShuffleMode::Down, "__shfl_down_sync", mask, var, delta, width, where);
}

template <class T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize,
                  ember::cpu_exec::SourceSite where = ember::cpu_exec::SourceSite::current()) {
  using ember::cpu_exec::ShuffleMode;
  return ember::cpu_exec::shuffle(ShuffleMode::Xor, "__shfl_xor_sync", mask, var, static_cast<unsigned>(lane_mask),
                                  width, where);
}

inline unsigned __ballot_sync(unsigned mask, int predicate,
                              ember::cpu_exec::SourceSite where = ember::cpu_exec::SourceSite::current()) {
  return ember::cpu_exec::ballot("__ballot_sync", mask, predicate, where);
}

inline int __any_sync(unsigned mask, int predicate, ember::cpu_exec::SourceSite where = ember::cpu_exec::SourceSite::current()) {
  return ember::cpu_exec::ballot("__any_sync", mask, predicate, where) != 0;
}

inline int __all_sync(unsigned mask, int predicate, ember::cpu_exec::SourceSite where = ember::cpu_exec::SourceSite::current()) {
  return ember::cpu_exec::ballot("__all_sync", mask, predicate, where) == mask;
}
