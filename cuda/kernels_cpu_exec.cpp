// The CUDA kernels' own source compiled as C++ and run by cuda/cpu_exec (see kernel_set.inc).
#define EMBER_KERNEL_SET_GETTER cpu_exec_kernels
#define EMBER_KERNEL_SET_NAME "cpu_exec"
#include "cuda/kernel_set.inc"
