#include <cstring>

#include "cuda/check.h"
#include "util/error.h"

namespace ember::cuda {

namespace {

ErrorKind kind_of(cudaError_t err) {
  switch (err) {
    case cudaErrorMemoryAllocation:
      return ErrorKind::OutOfMemory;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
      return ErrorKind::Unsupported;
    default:
      return ErrorKind::Internal;
  }
}

// "…/ember/cuda/rms_norm.cu" -> "cuda/rms_norm.cu": short, and the same on every machine.
const char* repo_path(const char* file) {
  const char* best = file;
  for (const char* p = std::strstr(file, "/cuda/"); p != nullptr; p = std::strstr(p + 1, "/cuda/")) best = p + 1;
  return best;
}

}  // namespace

void fail_cuda(cudaError_t err, const char* call, const char* file, int line) {
  cudaGetLastError();  // clear a non-sticky error so later calls start clean
  fail(kind_of(err), "CUDA error at {}:{}: {}: {} ({})", repo_path(file), line, call, cudaGetErrorString(err),
       cudaGetErrorName(err));
}

}  // namespace ember::cuda
