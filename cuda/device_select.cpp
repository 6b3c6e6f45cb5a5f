#include "cuda/device_select.h"

#include "util/error.h"

namespace ember::cuda {
namespace {

void require_cuda(DeviceKind kind) {
  if (kind == DeviceKind::Cpu) fail(ErrorKind::InvalidArgument, "cuda: the CPU backend has no CUDA device");
}

}  // namespace

DeviceRuntime& device_runtime(DeviceKind kind) {
  require_cuda(kind);
  return kind == DeviceKind::Cuda ? gpu_runtime() : host_runtime();
}

const Kernels& device_kernels(DeviceKind kind) {
  require_cuda(kind);
  return kind == DeviceKind::Cuda ? gpu_kernels() : cpu_exec_kernels();
}

}  // namespace ember::cuda
