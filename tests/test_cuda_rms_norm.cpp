// The CUDA RMSNorm against the CPU oracle (ops::reference::rms_norm) by normalised mean squared
// error, on odd shapes, with and without weights and with the (1 + w) variant. Compiles in
// every build; reports "skipped" without CUDA or a GPU. The "bench:" case is a benchmark,
// skipped by default and run by tools/gpu-check (--no-skip --test-case='bench:*').
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/ops_reference.h"
#include "backend/cuda_api.h"
#include "backend/ops.h"
#include "util/error.h"

#if defined(EMBER_HAVE_CUDA)
#include <cuda_runtime_api.h>

#include "cuda/check.h"
#include "cuda/device_buffer.h"
#include "cuda/rms_norm.h"
#endif

namespace {

bool have_gpu() {
  if (!ember::cuda::built()) {
    MESSAGE("skipped: ember was built without CUDA");
    return false;
  }
  if (ember::cuda::device_count() == 0) {
    MESSAGE("skipped: no CUDA device found");
    return false;
  }
  return true;
}

std::vector<float> random_vector(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// sum((a-b)^2) / sum(b^2); NaN anywhere makes it NaN, which fails every <= check.
double nmse(const std::vector<float>& a, const std::vector<float>& ref) {
  double err = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = double(a[i]) - double(ref[i]);
    err += d * d;
    norm += double(ref[i]) * ref[i];
  }
  return err / norm;
}

std::vector<float> cpu_rms_norm(const std::vector<float>& x, const float* w, int64_t rows, int64_t dim, float eps,
                                bool one_plus_w) {
  std::vector<float> y(x.size());
  ember::MatView xv{ember::DType::F32, dim, rows, static_cast<size_t>(dim) * sizeof(float), x.data()};
  ember::F32Mat yv{y.data(), dim, rows, dim};
  ember::ops::reference::rms_norm(xv, w, eps, one_plus_w, yv);
  return y;
}

}  // namespace

TEST_CASE("CUDA rms_norm matches the CPU reference") {
  if (!have_gpu()) return;
  struct Shape {
    int64_t rows, dim;
  };
  // 1: a single element; 7, 33, 1031: not multiples of the warp; 4096+: model widths.
  const Shape shapes[] = {{1, 1}, {3, 7}, {5, 33}, {2, 1031}, {16, 4096}, {3, 5120}, {1, 14336}};
  uint32_t seed = 1;
  for (const Shape& s : shapes) {
    for (int weight_mode = 0; weight_mode < 3; ++weight_mode) {  // none, w, 1 + w
      CAPTURE(s.rows);
      CAPTURE(s.dim);
      CAPTURE(weight_mode);
      const auto x = random_vector(size_t(s.rows * s.dim), seed++, -3.0f, 3.0f);
      const auto w = random_vector(size_t(s.dim), seed++, -1.0f, 1.0f);
      const float* wp = weight_mode == 0 ? nullptr : w.data();
      const bool one_plus_w = weight_mode == 2;
      const auto ref = cpu_rms_norm(x, wp, s.rows, s.dim, 1e-6f, one_plus_w);
      std::vector<float> got(x.size(), NAN);
      ember::cuda::rms_norm_f32(x.data(), wp, got.data(), s.rows, s.dim, 1e-6f, one_plus_w);
      CHECK(nmse(got, ref) <= 1e-7);
    }
  }
}

TEST_CASE("CUDA rms_norm refuses bad shapes and reports a missing backend cleanly") {
  const std::vector<float> x(4, 1.0f);
  std::vector<float> y(4);
  if (!ember::cuda::built() || ember::cuda::device_count() == 0) {
    // Without CUDA (or a GPU) the call is a clean Unsupported error, never a crash.
    try {
      ember::cuda::rms_norm_f32(x.data(), nullptr, y.data(), 1, 4, 1e-6f, false);
      FAIL("rms_norm_f32 ran without a usable GPU");
    } catch (const ember::Error& e) {
      CHECK(e.kind() == ember::ErrorKind::Unsupported);
    }
    return;
  }
  CHECK_THROWS_AS(ember::cuda::rms_norm_f32(x.data(), nullptr, y.data(), 0, 4, 1e-6f, false), ember::Error);
  CHECK_THROWS_AS(ember::cuda::rms_norm_f32(x.data(), nullptr, y.data(), 1, -4, 1e-6f, false), ember::Error);
}

TEST_CASE("bench: CUDA rms_norm bandwidth" * doctest::skip()) {
#if defined(EMBER_HAVE_CUDA)
  if (!have_gpu()) return;
  // A decode-sized and a prefill-sized batch of rows; bytes moved = read x + write y (+ w).
  const int64_t dim = 4096;
  for (int64_t rows : {int64_t{1}, int64_t{512}, int64_t{8192}}) {
    const size_t n = size_t(rows * dim);
    ember::cuda::DeviceBuffer<float> x(n), y(n), w(static_cast<size_t>(dim));
    const auto host = random_vector(n, 7, -1.0f, 1.0f);
    x.upload(host.data(), n);
    w.upload(host.data(), size_t(dim));
    cudaEvent_t start, stop;
    EMBER_CUDA_CHECK(cudaEventCreate(&start));
    EMBER_CUDA_CHECK(cudaEventCreate(&stop));
    const int iters = 200;
    ember::cuda::launch_rms_norm_f32(x.get(), w.get(), y.get(), rows, dim, 1e-6f, false, nullptr);  // warm-up
    EMBER_CUDA_CHECK(cudaEventRecord(start));
    for (int i = 0; i < iters; ++i)
      ember::cuda::launch_rms_norm_f32(x.get(), w.get(), y.get(), rows, dim, 1e-6f, false, nullptr);
    EMBER_CUDA_CHECK(cudaEventRecord(stop));
    EMBER_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    EMBER_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    const double us = 1000.0 * ms / iters;
    const double gbs = double(2 * n + size_t(dim)) * sizeof(float) / (us * 1e3);
    MESSAGE("cuda rms_norm f32 rows=" << rows << " dim=" << dim << ": " << us << " us/call, " << gbs << " GB/s");
  }
#else
  MESSAGE("skipped: ember was built without CUDA");
#endif
}
