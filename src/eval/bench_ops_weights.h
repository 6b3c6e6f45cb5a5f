// Weight bytes for `ember bench-ops` (CPU and GPU tables alike).
#pragma once
#include <cstddef>
#include <cstdint>

#include "tensor/dtype.h"

namespace ember::eval {

// `total` bytes of rows of `cols` elements in `type`: `seed_rows` rows encoding uniform
// random values in [-1, 1) with the reference quantizer, repeated over the whole buffer.
// As good as fully random for timing, and fast to make.
void fill_bench_rows(DType type, int64_t cols, int64_t seed_rows, uint8_t* out, size_t total);

}  // namespace ember::eval
