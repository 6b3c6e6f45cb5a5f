// Host-side fallbacks for builds without nvcc; cuda/device.cu provides the real ones.
#include "backend/cuda_api.h"

#if !defined(EMBER_HAVE_CUDA)
namespace ember::cuda {
bool built() { return false; }
int device_count() { return 0; }
std::string device_name(int) { return {}; }
}  // namespace ember::cuda
#endif
