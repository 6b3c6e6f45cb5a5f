#include "backend/backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda_api.h"
#include "backend/cuda_backend.h"
#include "util/error.h"

namespace ember {

const char* device_kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::Cpu: return "cpu";
    case DeviceKind::Cuda: return "cuda";
    case DeviceKind::CudaOnCpu: return "cuda-on-cpu";
  }
  return "?";
}

static void no_moe(const Backend& be) {
  fail(ErrorKind::Unsupported, "{}: mixture-of-experts layers are not implemented on this backend yet (use -ngl 0)",
       be.describe());
}
void Backend::moe_route(const F32Mat&, const MoeRouting&, int32_t*, float*) { no_moe(*this); }
void Backend::gated_up_id(Activation, std::span<const MatView>, std::span<const MatView>, const MatmulInput&,
                          const int32_t*, int, F32Mat, F32Mat, F32Mat) {
  no_moe(*this);
}
void Backend::matmul_id(std::span<const MatView>, const MatView&, const int32_t*, int, F32Mat) { no_moe(*this); }
void Backend::moe_combine(const MatView&, const float*, int, const MatView&, const MatView&, F32Mat) { no_moe(*this); }
void Backend::add_id(F32Mat, const MatView&, const int32_t*) { no_moe(*this); }
void Backend::glu(Activation, const MatView&, const MatView&, F32Mat) { no_moe(*this); }

Placement choose_placement(int gpu_layers, int n_layer) {
  Placement p{DeviceKind::Cpu, n_layer, n_layer};
  if (gpu_layers == 0) return p;
  const char* on_cpu = std::getenv("EMBER_CUDA_ON_CPU");
  const bool emulated = on_cpu && std::strcmp(on_cpu, "1") == 0;
  const bool have_device = emulated || cuda::device_count() > 0;
  if (gpu_layers < 0 && !have_device) return p;
  if (!have_device)
    fail(ErrorKind::Unsupported, "-ngl {}: no CUDA device ({}); use -ngl 0 for the CPU", gpu_layers,
         cuda::built() ? "none found" : "ember was built without CUDA");
  p.device = emulated ? DeviceKind::CudaOnCpu : DeviceKind::Cuda;
  p.first_device_layer = gpu_layers < 0 ? 0 : std::max(0, n_layer - gpu_layers);
  return p;
}

std::unique_ptr<WeightStore> make_weight_store(DeviceKind kind, bool repack) {
  if (kind == DeviceKind::Cpu) return std::make_unique<CpuWeightStore>(repack);
  return cuda::make_weight_store(kind);
}

std::unique_ptr<Backend> make_backend(DeviceKind kind, ThreadPool& pool) {
  if (kind == DeviceKind::Cpu) return std::make_unique<CpuBackend>(pool);
  return cuda::make_backend(kind);
}

}  // namespace ember
