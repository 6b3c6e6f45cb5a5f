#include "eval/bench_ops_weights.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "tensor/quant.h"

namespace ember::eval {

void fill_bench_rows(DType type, int64_t cols, int64_t seed_rows, uint8_t* out, size_t total) {
  const size_t row_bytes = dtype_row_bytes(type, cols);
  std::vector<float> x(static_cast<size_t>(cols));
  uint64_t state = 0x9E3779B97F4A7C15ull;
  for (int64_t i = 0; i < seed_rows; ++i) {
    for (float& v : x) {  // xorshift: uniform in [-1, 1)
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      v = static_cast<float>(state >> 40) / static_cast<float>(1 << 23) - 1.0f;
    }
    quantize_row_reference(type, x.data(), out + i * row_bytes, cols);
  }
  const size_t seed_bytes = row_bytes * static_cast<size_t>(seed_rows);
  for (size_t off = seed_bytes; off < total; off += seed_bytes)
    std::memcpy(out + off, out, std::min(seed_bytes, total - off));
}

}  // namespace ember::eval
