// ember's CUDA kernels, their own source (cuda/kernels/*.cuh), run on the CPU through the
// in-tree CPU execution (cuda/cpu_exec/) and compared with the CPU reference ops by NMSE on
// odd shapes, with sentinel-guarded outputs, in round-robin and shuffled thread orders. The
// launch geometry is the launcher's own (cuda/*.cu). Runs in every build, with or without
// nvcc: test_cuda_*.cpp without "cpu" test the same kernels on a GPU when there is one.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "backend/cpu/ops_reference.h"
#include "backend_check.h"
#include "cuda/cpu_exec/launch.h"
#include "cuda/kernels/rms_norm.cuh"

namespace {

using ember::cpu_exec::Order;
using ember::cpu_exec::ScopedSchedule;
namespace check = ember::check;

struct Shape {
  int64_t rows, dim;
};

// 1: a single element; 7, 33, 1031: not multiples of the warp; 4096+: model widths.
const Shape kRmsShapes[] = {{1, 1}, {3, 7}, {5, 33}, {2, 1031}, {16, 4096}, {3, 5120}, {1, 14336}};

std::vector<float> reference_rms_norm(const std::vector<float>& x, const float* w, Shape s, float eps,
                                      bool one_plus_w) {
  std::vector<float> y(x.size());
  ember::ops::reference::rms_norm(check::dense_view(x, s.rows, s.dim), w, eps, one_plus_w,
                                  check::dense_mat(y, s.rows, s.dim));
  return y;
}

// The kernel as cuda/rms_norm.cu launches it (launch_rms_norm), into a sentinel-fenced output (or in place).
std::vector<float> cpu_exec_rms_norm(const std::vector<float>& x, const float* w, Shape s, float eps, bool one_plus_w,
                                     bool in_place) {
  const size_t bytes = x.size() * sizeof(float);
  check::GuardedBuffer out(bytes), in(bytes);
  std::memcpy(in.data(), x.data(), bytes);
  float* y = in_place ? in.as<float>() : out.as<float>();
  ember::cuda::launch_rms_norm(check::dense_view(in.as<float>(), s.rows, s.dim), w, eps, one_plus_w,
                               ember::F32Mat{y, s.dim, s.rows, s.dim}, nullptr);
  CHECK(out.guards_intact());
  CHECK(in.guards_intact());
  std::vector<float> got(x.size());
  std::memcpy(got.data(), y, bytes);
  return got;
}

}  // namespace

TEST_CASE("cpu_exec: the CUDA rms_norm kernel matches the CPU reference") {
  check::Rng rng(1);
  for (const Shape& s : kRmsShapes) {
    const auto x = rng.uniform(static_cast<size_t>(s.rows * s.dim), -3.0f, 3.0f);
    const auto w = rng.uniform(static_cast<size_t>(s.dim), -1.0f, 1.0f);
    for (int weight_mode = 0; weight_mode < 3; ++weight_mode) {  // none, w, 1 + w
      const float* wp = weight_mode == 0 ? nullptr : w.data();
      const bool one_plus_w = weight_mode == 2;
      const auto want = reference_rms_norm(x, wp, s, 1e-6f, one_plus_w);
      for (Order order : {Order::RoundRobin, Order::Shuffled}) {
        ScopedSchedule schedule({order, static_cast<uint64_t>(s.dim)});
        const bool in_place = order == Order::Shuffled;
        const auto got = cpu_exec_rms_norm(x, wp, s, 1e-6f, one_plus_w, in_place);
        check::expect_close(got, want, 1e-7,
                            fmt::format("rms_norm {}x{} weights {} order {} in place {}", s.rows, s.dim, weight_mode,
                                        static_cast<int>(order), in_place));
      }
    }
  }
}
