// Shared harness for backend-equivalence tests, in the manner of llama.cpp's test-backend-ops:
// seeded random inputs, comparison by normalised mean squared error, NaN/Inf detection,
// output buffers fenced by sentinel bytes (catch out-of-bounds writes) and padded,
// non-contiguous row layouts (catch kernels that assume rows are packed).
//
// Typical use:
//   check::Rng rng(42);
//   auto x = rng.uniform(rows * cols, -1, 1);
//   check::StridedF32 out(rows, cols, /*pad=*/3);       // rows 3 floats apart beyond cols
//   ops::rms_norm(pool, check::dense_view(x, rows, cols), w, eps, false, out.mat());
//   check::expect_close(out.dense(), want, 1e-7, "rms_norm 5x7");
//   CHECK(out.guards_intact());
#pragma once
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/ops.h"
#include "tensor/quant.h"

namespace ember::check {

// Deterministic random numbers: a test failing once fails the same way every run.
class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}

  float uniform(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(gen_); }
  float normal(float mean = 0.0f, float stddev = 1.0f) {
    return std::normal_distribution<float>(mean, stddev)(gen_);
  }
  int64_t integer(int64_t lo, int64_t hi) {  // inclusive range
    return std::uniform_int_distribution<int64_t>(lo, hi)(gen_);
  }
  std::vector<float> uniform(size_t n, float lo = -1.0f, float hi = 1.0f) {
    std::vector<float> v(n);
    for (float& x : v) x = uniform(lo, hi);
    return v;
  }
  std::vector<float> normal(size_t n, float mean = 0.0f, float stddev = 1.0f) {
    std::vector<float> v(n);
    for (float& x : v) x = normal(mean, stddev);
    return v;
  }
  void fill(float* x, size_t n, float lo = -1.0f, float hi = 1.0f) {
    for (size_t i = 0; i < n; ++i) x[i] = uniform(lo, hi);
  }
  std::mt19937_64& engine() { return gen_; }

 private:
  std::mt19937_64 gen_;
};

// `rows` rows of k normal values, each quantized to t by the reference quantizer (row after
// row from rng, so a seed gives the same weights wherever it is used).
inline std::vector<uint8_t> quantized_normal_rows(DType t, int64_t rows, int64_t k, Rng& rng) {
  const size_t row_bytes = dtype_row_bytes(t, k);
  std::vector<uint8_t> w(row_bytes * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<float> x = rng.normal(static_cast<size_t>(k));
    quantize_row_reference(t, x.data(), w.data() + r * row_bytes, k);
  }
  return w;
}

// Normalised mean squared error: sum (a-b)^2 / sum b^2, with b the reference.
// Returns +inf when either side holds a NaN/Inf so such results always fail a tolerance.
inline double nmse(const float* a, const float* b, size_t n) {
  double err = 0.0, ref = 0.0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return INFINITY;
    double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
    err += d * d;
    ref += static_cast<double>(b[i]) * static_cast<double>(b[i]);
  }
  if (ref == 0.0) return err == 0.0 ? 0.0 : INFINITY;
  return err / ref;
}
inline double nmse(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  return nmse(a.data(), b.data(), a.size());
}

// Index of the first NaN or Inf, or -1 when every value is finite.
inline int64_t first_non_finite(const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return static_cast<int64_t>(i);
  return -1;
}
inline bool has_non_finite(const std::vector<float>& x) { return first_non_finite(x.data(), x.size()) >= 0; }

inline double max_abs_diff(const float* a, const float* b, size_t n) {
  double m = 0.0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

// The doctest check every op test ends with: finite output, NMSE within tolerance.
inline void expect_close(const float* got, const float* want, size_t n, double max_nmse, const std::string& what) {
  INFO(what);
  int64_t bad = first_non_finite(got, n);
  INFO("first non-finite output at index ", bad);
  CHECK(bad < 0);
  double e = nmse(got, want, n);
  INFO("nmse ", e, " (limit ", max_nmse, "), max |diff| ", max_abs_diff(got, want, n));
  CHECK(e <= max_nmse);
}
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, double max_nmse,
                         const std::string& what) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  expect_close(got.data(), want.data(), got.size(), max_nmse, what);
}

// A byte buffer fenced by sentinel bytes on both sides. Kernels write into data(); a test
// then checks guards_intact() to catch writes past either end.
class GuardedBuffer {
 public:
  static constexpr uint8_t kSentinel = 0xA5;
  static constexpr size_t kGuardBytes = 64;

  explicit GuardedBuffer(size_t bytes, uint8_t fill = 0)
      : bytes_(bytes), storage_(bytes + 2 * kGuardBytes + kAlign, kSentinel) {
    std::memset(data(), fill, bytes_);
  }
  // 64-byte aligned like real allocations, so aligned SIMD loads/stores are exercised.
  uint8_t* data() { return base(); }
  const uint8_t* data() const { return const_cast<GuardedBuffer*>(this)->base(); }
  template <class T>
  T* as() { return reinterpret_cast<T*>(data()); }
  size_t size() const { return bytes_; }

  bool guards_intact() const {
    const uint8_t* p = data();
    for (size_t i = 1; i <= kGuardBytes; ++i)
      if (p[-static_cast<ptrdiff_t>(i)] != kSentinel) return false;
    for (size_t i = 0; i < kGuardBytes; ++i)
      if (p[bytes_ + i] != kSentinel) return false;
    return true;
  }

 private:
  static constexpr size_t kAlign = 64;
  uint8_t* base() {
    uintptr_t raw = reinterpret_cast<uintptr_t>(storage_.data()) + kGuardBytes;
    uintptr_t aligned = (raw + kAlign - 1) & ~static_cast<uintptr_t>(kAlign - 1);
    return reinterpret_cast<uint8_t*>(aligned);
  }
  size_t bytes_;
  std::vector<uint8_t> storage_;
};

// An f32 matrix whose rows are `pad` floats further apart than `cols` (a non-contiguous view,
// like a slice of a wider tensor), inside a GuardedBuffer. The padding holds a sentinel
// value, so a kernel that writes between rows is caught as surely as one writing past the end.
class StridedF32 {
 public:
  StridedF32(int64_t rows, int64_t cols, int64_t pad = 0)
      : rows_(rows), cols_(cols), stride_(cols + pad),
        buf_(static_cast<size_t>(rows * (cols + pad)) * sizeof(float)) {
    float* p = buf_.as<float>();
    for (int64_t i = 0; i < rows_ * stride_; ++i) p[i] = kPadValue;
  }
  StridedF32(const std::vector<float>& dense, int64_t rows, int64_t cols, int64_t pad = 0)
      : StridedF32(rows, cols, pad) {
    REQUIRE(dense.size() == static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows_; ++r)
      std::memcpy(row(r), dense.data() + r * cols_, static_cast<size_t>(cols_) * sizeof(float));
  }

  float* row(int64_t r) { return buf_.as<float>() + r * stride_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t stride() const { return stride_; }

  F32Mat mat() { return F32Mat{buf_.as<float>(), cols_, rows_, stride_}; }
  MatView view() {
    return MatView{DType::F32, cols_, rows_, static_cast<size_t>(stride_) * sizeof(float), buf_.as<float>()};
  }
  // The matrix as packed rows (drops the padding).
  std::vector<float> dense() {
    std::vector<float> out(static_cast<size_t>(rows_ * cols_));
    for (int64_t r = 0; r < rows_; ++r)
      std::memcpy(out.data() + r * cols_, row(r), static_cast<size_t>(cols_) * sizeof(float));
    return out;
  }
  // True when neither the fences around the buffer nor the padding between rows changed.
  bool guards_intact() {
    if (!buf_.guards_intact()) return false;
    for (int64_t r = 0; r < rows_; ++r)
      for (int64_t c = cols_; c < stride_; ++c) {
        float v = row(r)[c];
        if (std::memcmp(&v, &kPadValue, sizeof v) != 0) return false;
      }
    return true;
  }

 private:
  static constexpr float kPadValue = -12345.678f;
  int64_t rows_, cols_, stride_;
  GuardedBuffer buf_;
};

// Read-only views of packed data.
inline MatView dense_view(const float* data, int64_t rows, int64_t cols) {
  return MatView{DType::F32, cols, rows, static_cast<size_t>(cols) * sizeof(float), data};
}
inline MatView dense_view(const std::vector<float>& data, int64_t rows, int64_t cols) {
  REQUIRE(data.size() >= static_cast<size_t>(rows * cols));
  return dense_view(data.data(), rows, cols);
}
inline F32Mat dense_mat(std::vector<float>& data, int64_t rows, int64_t cols) {
  REQUIRE(data.size() >= static_cast<size_t>(rows * cols));
  return F32Mat{data.data(), cols, rows, cols};
}

// Every SIMD level this CPU can run, lowest first: tests loop over these so the scalar
// fallback and each fast path are compared with the reference on the same inputs.
inline std::vector<SimdLevel> simd_levels() {
  std::vector<SimdLevel> levels{SimdLevel::Scalar};
  if (cpu_features().avx2) levels.push_back(SimdLevel::AVX2);
  if (cpu_features().avx512) levels.push_back(SimdLevel::AVX512);
  return levels;
}

// Sets the SIMD level for a scope and restores the previous one.
class ScopedSimdLevel {
 public:
  explicit ScopedSimdLevel(SimdLevel level) : saved_(simd_level()) { set_simd_level(level); }
  ~ScopedSimdLevel() { set_simd_level(saved_); }
  ScopedSimdLevel(const ScopedSimdLevel&) = delete;
  ScopedSimdLevel& operator=(const ScopedSimdLevel&) = delete;

 private:
  SimdLevel saved_;
};

}  // namespace ember::check
