// The split of an op's work into chunks that threads take in order from a shared counter
// (guided scheduling): each chunk is 1/(2 nth) of the work left, at least `min_units`, so the
// first chunks are long streams and the threads finish within a short chunk of each other,
// and a thread that is descheduled or slower leaves its chunks to the others. Used by the
// matmul driver (backend/cpu/matmul.cpp) and by the read that imitates it (util/membw.cpp).
#pragma once
#include <algorithm>
#include <cstdint>

namespace ember {

// Writes chunk starts to start[0 .. n] (chunk i is units [start[i], start[i+1]), start[n] =
// units) and returns n <= max_chunks. Many threads would need more chunks than max_chunks:
// the last nth chunks then share the rest evenly (and at 2 nth >= max_chunks all are equal).
// `start` holds max_chunks + 1 entries.
inline int guided_chunks(int64_t units, int nth, int64_t min_units, int max_chunks, int64_t* start) {
  min_units = std::max<int64_t>(1, min_units);
  int n = 0;
  int64_t s = 0;
  const int even_from = 2 * nth >= max_chunks ? 0 : max_chunks - nth;
  while (s < units) {
    if (n == even_from) {
      const int64_t rest = units - s;
      const int k = static_cast<int>(std::min<int64_t>(rest, max_chunks - n));
      for (int i = 0; i < k; ++i) start[n++] = s + rest * i / k;
      break;
    }
    start[n++] = s;
    s = std::min(units, s + std::max(min_units, (units - s) / (2 * nth)));
  }
  start[n] = units;
  return n;
}

}  // namespace ember
