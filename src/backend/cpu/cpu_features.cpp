#include "backend/cpu/cpu_features.h"

#include <atomic>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <cstdlib>
#include <cstring>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace ember {

namespace {

#if defined(__x86_64__) || defined(__i386__)
// AMX int8 usable by this process: the CPUID bits (leaf 7: EDX 24 AMX-TILE, 25 AMX-INT8),
// the tile state enabled by the OS in XCR0 (bits 17 TILECFG, 18 TILEDATA; read with xgetbv
// only when OSXSAVE says it exists), and on Linux the permission for the tile data, which the
// kernel grants per process on request (ARCH_REQ_XCOMP_PERM, 5.16 and later): without it the
// first tile instruction would kill the process. Any failure leaves AMX unused.
bool detect_amx_int8() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  if (!((edx >> 24) & 1u) || !((edx >> 25) & 1u)) return false;
  unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
  if (!__get_cpuid(1, &a1, &b1, &c1, &d1) || !((c1 >> 27) & 1u)) return false;  // OSXSAVE
  uint32_t xcr0_lo = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0_lo & (3u << 17)) != (3u << 17)) return false;
#if defined(__linux__)
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) return false;
#endif
  return true;
}
#endif

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  f.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  f.avx512_vnni = f.avx512 && __builtin_cpu_supports("avx512vnni");
  // Leaf 7 sub-leaf 1 (EAX): bit 4 AVX-VNNI, bit 5 AVX512-BF16. Read directly because
  // older compilers (clang 14) reject these names in __builtin_cpu_supports.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) {
    f.avx_vnni = f.avx2 && ((eax >> 4) & 1u);
    f.avx512_bf16 = f.avx512 && ((eax >> 5) & 1u);
  }
  // The AMX kernels finish their blocks with AVX-512 VNNI code (and fall back to it).
  f.amx_int8 = f.avx512_vnni && detect_amx_int8();
#endif
  return f;
}

SimdLevel max_level() {
  const CpuFeatures& f = cpu_features();
  return f.amx_int8 ? SimdLevel::AMX : f.avx512 ? SimdLevel::AVX512 : f.avx2 ? SimdLevel::AVX2 : SimdLevel::Scalar;
}

SimdLevel best_level() {
  SimdLevel level = max_level();
  if (const char* env = std::getenv("EMBER_SIMD")) {
    SimdLevel asked = level;
    if (std::strcmp(env, "scalar") == 0) asked = SimdLevel::Scalar;
    if (std::strcmp(env, "avx2") == 0) asked = SimdLevel::AVX2;
    if (std::strcmp(env, "avx512") == 0) asked = SimdLevel::AVX512;
    if (std::strcmp(env, "amx") == 0) asked = SimdLevel::AMX;
    if (asked < level) level = asked;
  }
  return level;
}

std::atomic<int>& level_slot() {
  static std::atomic<int> slot{static_cast<int>(best_level())};
  return slot;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

SimdLevel simd_level() { return static_cast<SimdLevel>(level_slot().load(std::memory_order_relaxed)); }

void set_simd_level(SimdLevel level) {
  const SimdLevel max = max_level();
  if (level > max) level = max;
  level_slot().store(static_cast<int>(level), std::memory_order_relaxed);
}

const char* simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::Scalar: return "scalar";
    case SimdLevel::AVX2: return "avx2";
    case SimdLevel::AVX512: return "avx512";
    case SimdLevel::AMX: return "amx";
  }
  return "?";
}

std::string cpu_features_string() {
  const CpuFeatures& f = cpu_features();
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(f.avx2, "AVX2");
  add(f.avx512, "AVX-512");
  add(f.avx512_vnni, "VNNI");
  add(f.avx_vnni, "AVX-VNNI");
  add(f.avx512_bf16, "BF16");
  add(f.amx_int8, "AMX-INT8");
  return s.empty() ? "none" : s;
}

std::string cpu_brand_string() {
  std::string brand;
#if defined(__x86_64__) || defined(__i386__)
  unsigned max_leaf = __get_cpuid_max(0x80000000u, nullptr);
  if (max_leaf >= 0x80000004u) {
    for (unsigned leaf = 0x80000002u; leaf <= 0x80000004u; ++leaf) {
      unsigned r[4] = {};
      __get_cpuid(leaf, &r[0], &r[1], &r[2], &r[3]);
      brand.append(reinterpret_cast<const char*>(r), sizeof(r));
    }
  }
#endif
  brand = brand.substr(0, brand.find('\0'));
  const size_t first = brand.find_first_not_of(' '), last = brand.find_last_not_of(' ');
  return first == std::string::npos ? "unknown CPU" : brand.substr(first, last - first + 1);
}

}  // namespace ember
