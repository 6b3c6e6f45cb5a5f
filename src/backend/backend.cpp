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
