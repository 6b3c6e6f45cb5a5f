#include "cuda/tensor_peak.h"

#include <fmt/format.h>

namespace ember::cuda {
namespace {

// Dense ops per SM per clock, int8 and f16 (see the header); 0 when unknown.
int ops_per_clock(int major, int minor, MmaOperand operand) {
  const bool int8 = operand == MmaOperand::Int8;
  if (major == 8 && minor == 0) return int8 ? 4096 : 2048;
  if (major == 8 && (minor == 6 || minor == 9)) return int8 ? 2048 : 1024;
  if (major == 9 && minor == 0) return int8 ? 8192 : 4096;
  return 0;
}

}  // namespace

TensorPeak tensor_peak(const DeviceInfo& d, MmaOperand operand) {
  if (d.sm_count == 0 || d.clock_khz == 0) return {0.0, "no device properties (CPU execution)"};
  const int per_clock = ops_per_clock(d.cc_major, d.cc_minor, operand);
  if (per_clock == 0) return {0.0, fmt::format("sm_{}{} is not in cuda/tensor_peak.cpp's table", d.cc_major, d.cc_minor)};
  return {static_cast<double>(d.sm_count) * per_clock * d.clock_khz * 1e3,
          fmt::format("{} SMs x {} ops/clock x {} MHz (sm_{}{})", d.sm_count, per_clock, d.clock_khz / 1000, d.cc_major,
                      d.cc_minor)};
}

}  // namespace ember::cuda
