// Memory a backend owns, and what the KV cache (kv/) asks of the backend that holds a layer's
// rows: allocation, copies and re-rotating K rows. A Backend is one (backend.h); the cache
// sees only this, so kv/ and backend.h do not include each other.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "backend/ops.h"

namespace ember {

// Memory a backend owns: host memory for the CPU, device memory for CUDA; zero-filled.
class BackendBuffer {
 public:
  virtual ~BackendBuffer() = default;
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 protected:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

class KVMemory {
 public:
  virtual ~KVMemory() = default;
  virtual std::unique_ptr<BackendBuffer> allocate(size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;  // both in this backend's memory
  // Context shift: K rows rows[0..n) (host array) of one layer's storage of n_rows rows at
  // base, rotated by `delta` positions.
  virtual void rerope_rows(DType type, void* base, size_t row_bytes, int64_t row_elems, int64_t n_rows,
                           const int32_t* rows, int64_t n, int head_dim, int32_t delta, const RopeParams& p) = 0;
};

}  // namespace ember
