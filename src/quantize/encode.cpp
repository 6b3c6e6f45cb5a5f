#include "quantize/encode.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <vector>

#include "util/thread_pool.h"
#include "tensor/quant.h"
#include "util/error.h"

namespace ember::quantize {

EncodeError encode_rows(DType type, int64_t n_rows, int64_t row_len, const RowSource& source,
                        std::span<uint8_t> dst, ThreadPool* pool, bool measure_error) {
  const QuantTraits* tr = quant_traits(type);
  if (!tr) fail(ErrorKind::Unsupported, "cannot write tensors of type {}", dtype_name(type));
  if (row_len <= 0 || row_len % tr->block_size != 0)
    fail(ErrorKind::InvalidArgument, "rows of {} elements are not a multiple of the {} block size {}", row_len,
         tr->name, tr->block_size);
  const size_t row_bytes = dtype_row_bytes(type, row_len);
  if (dst.size() != row_bytes * static_cast<size_t>(n_rows))
    fail(ErrorKind::Internal, "encode_rows: {} bytes for {} rows of {} x {}", dst.size(), n_rows, row_len,
         tr->name);
  EncodeError total;
  std::mutex total_mutex;
  auto work = [&](int64_t begin, int64_t end) {
    std::vector<float> row(static_cast<size_t>(row_len));
    std::vector<float> back(measure_error ? static_cast<size_t>(row_len) : 0);
    EncodeError local;
    for (int64_t r = begin; r < end; ++r) {
      source(r, row.data());
      uint8_t* out = dst.data() + static_cast<size_t>(r) * row_bytes;
      tr->from_float_reference(row.data(), out, row_len);
      if (measure_error) {
        tr->to_float(out, back.data(), row_len);
        for (int64_t i = 0; i < row_len; ++i) {
          const double d = static_cast<double>(back[i]) - row[i];
          local.err2 += d * d;
          local.ref2 += static_cast<double>(row[i]) * row[i];
        }
      }
    }
    std::lock_guard<std::mutex> lock(total_mutex);
    total.err2 += local.err2;
    total.ref2 += local.ref2;
  };
  if (!pool || pool->size() <= 1 || n_rows < 2) {
    work(0, n_rows);
    return total;
  }
  // Rows of small tensors are cheap: keep at least ~64K elements per task so dispatch does
  // not dominate. Exceptions from a worker are carried back to this thread.
  const int64_t grain = std::max<int64_t>(1, 65536 / row_len);
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  pool->parallel_for(n_rows, grain, [&](int64_t begin, int64_t end) {
    if (failed.load()) return;
    try {
      work(begin, end);
    } catch (...) {
      if (!failed.exchange(true)) error = std::current_exception();
    }
  });
  if (error) std::rethrow_exception(error);
  return total;
}

RowSource rows_of(DType type, const uint8_t* data, int64_t row_len) {
  const QuantTraits* tr = quant_traits(type);
  if (!tr) fail(ErrorKind::Unsupported, "cannot read tensors of type {}", dtype_name(type));
  const size_t row_bytes = dtype_row_bytes(type, row_len);
  return [tr, data, row_len, row_bytes](int64_t row, float* out) {
    tr->to_float(data + static_cast<size_t>(row) * row_bytes, out, row_len);
  };
}

DType fallback_type(DType wanted, int64_t row_len) {
  DType t = wanted;
  if (row_len % dtype_size(t).block_size != 0) {
    switch (wanted) {
      case DType::Q4_K: t = DType::Q5_0; break;
      case DType::Q5_K: t = DType::Q5_1; break;
      case DType::Q6_K: t = DType::Q8_0; break;
      case DType::Q2_K: case DType::Q3_K: t = DType::Q4_0; break;
      default: t = DType::F16; break;
    }
  }
  if (row_len % dtype_size(t).block_size != 0) t = DType::F16;
  return t;
}

}  // namespace ember::quantize
