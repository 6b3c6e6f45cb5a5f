// The CUDA kernels compiled by nvcc for the device (see kernel_set.inc).
#define EMBER_KERNEL_SET_GETTER gpu_kernels
#define EMBER_KERNEL_SET_NAME "gpu"
#include "cuda/kernel_set.inc"
