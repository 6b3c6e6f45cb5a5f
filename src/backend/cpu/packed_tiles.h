// The walk shared by the packed kernels (PackedKernel in matmul_kernels.h): rows in whole
// groups, tokens in blocks of kTokenBlock, then tiles of one group x RN tokens.
// Included by *_avx2.cpp files only: the lambdas make every instantiation local to its file.
#pragma once
#include <cstdint>

#include "backend/cpu/matmul_kernels.h"

namespace ember::cpu {

// Calls full(group, n_rows, c) for RN tokens c .. c+RN-1 and one(group, n_rows, c) for
// the tokens left over, n_rows being the group's real rows (the last group may be short).
template <int RN, class Full, class One>
inline void for_each_packed_tile(int group_rows, int64_t r0, int64_t r1, int64_t c0, int64_t c1, Full&& full,
                                 One&& one) {
  const int64_t g0 = r0 / group_rows, g1 = (r1 + group_rows - 1) / group_rows;
  for (int64_t cb = c0; cb < c1; cb += kTokenBlock) {
    const int64_t ce = cb + kTokenBlock < c1 ? cb + kTokenBlock : c1;
    for (int64_t g = g0; g < g1; ++g) {
      const int64_t left = r1 - g * group_rows;
      const int n_rows = static_cast<int>(left < group_rows ? left : group_rows);
      int64_t c = cb;
      for (; c + RN <= ce; c += RN) full(g, n_rows, c);
      for (; c < ce; ++c) one(g, n_rows, c);
    }
  }
}

}  // namespace ember::cpu
