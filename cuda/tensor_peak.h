// The tensor cores' dense peak of a device, from its compute capability, SM count and
// clock (cudaGetDeviceProperties / cudaDevAttrClockRate): ops per SM per clock (one
// multiply-add counts 2) times SMs times clock. The per-SM rates are those of NVIDIA's
// architecture whitepapers for mma on dense operands:
//   sm_80 (A100)         int8 4096, f16 2048
//   sm_86, sm_89         int8 2048, f16 1024  (GA10x, Ada: f16 with f32 accumulation is half that on GeForce)
//   sm_90 (H100, H200)   int8 8192, f16 4096
// The clock is the device's peak SM clock, which can exceed the one a datasheet quotes its
// peak at (H100/H200 SXM: 1979 int8 TOPS quoted at 1830 MHz; the attribute says 1980 MHz,
// giving 2141): the figure here is then the stricter reference. Note that on sm_90 the full
// rate needs wgmma; mma.sync, which ember's prefill kernel uses, reaches less of it.
#pragma once
#include <string>

#include "cuda/device_runtime.h"

namespace ember::cuda {

enum class MmaOperand { Int8, F16 };

struct TensorPeak {
  double ops_per_s = 0.0;  // 0 when the architecture is not in the table (or no device)
  std::string how;         // "132 SMs x 8192 ops/clock x 1980 MHz (sm_90)", or why unknown
};

TensorPeak tensor_peak(const DeviceInfo& d, MmaOperand operand);

}  // namespace ember::cuda
