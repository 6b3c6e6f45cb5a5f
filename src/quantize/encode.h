// Parallel row encoding: rows of floats produced on demand (read from a checkpoint,
// dequantized from another GGUF, or generated) are written in a target type straight into
// the output tensor's bytes. Memory stays at one float row per thread.
#pragma once
#include <cstdint>
#include <functional>
#include <span>

#include "tensor/dtype.h"

namespace ember {
class ThreadPool;
}

namespace ember::quantize {

// Fills `out` (row_len floats) with row `row`. Called concurrently from several threads
// with distinct rows: it must be thread-safe.
using RowSource = std::function<void(int64_t row, float* out)>;

// Round-trip error of an encoding: sum of squared differences between the source rows and
// their encoded-then-decoded values, and sum of squared source values.
struct EncodeError {
  double err2 = 0, ref2 = 0;
  // Normalised mean squared error (0 when the source is all zeros and reproduced exactly).
  double nmse() const { return ref2 > 0 ? err2 / ref2 : (err2 > 0 ? 1.0 : 0.0); }
};

// Encodes n_rows rows of row_len elements into `dst` (exactly n_rows * dtype_row_bytes
// bytes). row_len must be a multiple of the type's block size. `pool` may be null (serial).
// With measure_error, each encoded row is decoded again and compared with its source.
EncodeError encode_rows(DType type, int64_t n_rows, int64_t row_len, const RowSource& source,
                        std::span<uint8_t> dst, ThreadPool* pool, bool measure_error = false);

// A RowSource over a tensor already in memory in any (de)quantizable type.
RowSource rows_of(DType type, const uint8_t* data, int64_t row_len);

// Type actually used for rows of row_len elements when `wanted` does not divide them, the
// way llama.cpp's quantizer falls back: Q4_K->Q5_0, Q5_K->Q5_1, Q6_K->Q8_0, other k-quants
// ->Q4_0... and F16 when even that block does not divide.
DType fallback_type(DType wanted, int64_t row_len);

}  // namespace ember::quantize
