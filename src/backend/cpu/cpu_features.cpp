#include "backend/cpu/cpu_features.h"

#include <atomic>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <cstdlib>
#include <cstring>

namespace ember {

namespace {

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
#endif
  return f;
}

SimdLevel best_level() {
  const CpuFeatures& f = cpu_features();
  SimdLevel level = f.avx512 ? SimdLevel::AVX512 : f.avx2 ? SimdLevel::AVX2 : SimdLevel::Scalar;
  if (const char* env = std::getenv("EMBER_SIMD")) {
    SimdLevel asked = level;
    if (std::strcmp(env, "scalar") == 0) asked = SimdLevel::Scalar;
    if (std::strcmp(env, "avx2") == 0) asked = SimdLevel::AVX2;
    if (std::strcmp(env, "avx512") == 0) asked = SimdLevel::AVX512;
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
  const CpuFeatures& f = cpu_features();
  SimdLevel max = f.avx512 ? SimdLevel::AVX512 : f.avx2 ? SimdLevel::AVX2 : SimdLevel::Scalar;
  if (level > max) level = max;
  level_slot().store(static_cast<int>(level), std::memory_order_relaxed);
}

const char* simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::Scalar: return "scalar";
    case SimdLevel::AVX2: return "avx2";
    case SimdLevel::AVX512: return "avx512";
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
