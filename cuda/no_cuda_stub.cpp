// Host-side fallbacks for builds without nvcc (cuda/*.cu provide the real ones): the CUDA
// module answers for itself, so backend/ never includes cuda/.
#include "backend/cuda_api.h"

#if !defined(EMBER_HAVE_CUDA)
#include "cuda/device_runtime.h"
#include "cuda/kernel_api.h"
#include "util/error.h"

namespace ember::cuda {

DeviceRuntime& gpu_runtime() { fail(ErrorKind::Unsupported, "no CUDA device: ember was built without CUDA"); }
const Kernels& gpu_kernels() { fail(ErrorKind::Unsupported, "no CUDA device: ember was built without CUDA"); }

bool built() { return false; }
int device_count() { return 0; }
std::string device_name(int) { return {}; }
std::string device_description(int) { return {}; }

}  // namespace ember::cuda
#endif
