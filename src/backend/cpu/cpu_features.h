// Run-time CPU feature detection: SIMD paths are chosen from this, never at build time.
#pragma once
#include <string>

namespace ember {

// AMX: AVX-512 plus the AMX int8 tile kernels (matmul_packed_amx.h); EMBER_SIMD=avx512 keeps
// the AVX-512 kernels and switches AMX off.
enum class SimdLevel { Scalar = 0, AVX2 = 1, AVX512 = 2, AMX = 3 };

struct CpuFeatures {
  bool avx2 = false;      // with FMA and F16C
  bool avx512 = false;    // F, BW, VL, DQ
  bool avx512_vnni = false;
  bool avx512_bf16 = false;
  bool avx_vnni = false;
  // AMX-TILE and AMX-INT8, with the OS's tile state enabled (XCR0) and, on Linux, the
  // process's permission to use it granted (arch_prctl ARCH_REQ_XCOMP_PERM, asked once at
  // detection): the AMX kernels may run on every thread.
  bool amx_int8 = false;
};

const CpuFeatures& cpu_features();
// The level kernels use: the best the CPU has, lowered by EMBER_SIMD=scalar|avx2|avx512
// (for tests and benchmarks that compare paths) or by set_simd_level(); EMBER_SIMD=amx is
// the default where the CPU has AMX.
SimdLevel simd_level();
void set_simd_level(SimdLevel level);  // clamps to what the CPU supports
const char* simd_level_name(SimdLevel level);
std::string cpu_features_string();     // "AVX2 AVX-512 VNNI BF16" style, "none" when empty
std::string cpu_brand_string();        // CPUID's model name, trimmed; "unknown CPU" without one

}  // namespace ember
