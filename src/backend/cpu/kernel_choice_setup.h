// Fills the kernel-choice table (kernel_choice.h) for a loaded model: from the cache of
// measurements for this CPU (kernel_choice_cache.h), measuring the types it lacks
// (kernel_calibration.h), or not at all. EMBER_KERNEL_CHOICE says which:
//   auto       (default) cached numbers, calibrating and caching the types not cached yet
//   calibrate  measure again and rewrite the cache
//   widest     no measurement: the AVX-512 variant wherever the CPU has it (the old rule)
// EMBER_SIMD below avx512 still forces AVX2 kernels whatever the table says.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "backend/cpu/kernel_calibration.h"

namespace ember::cpu {

enum class KernelChoiceMode { Auto, Calibrate, Widest };
// From EMBER_KERNEL_CHOICE; an unknown value fails with Error(InvalidArgument), one line.
KernelChoiceMode kernel_choice_mode();

struct RegimeChoice {
  Variant variant = Variant::Avx512;
  std::string why;  // "calibrated: avx2 14.2 vs avx512 12.9 GB/s", "cached <path>: ..."
};
struct TypeChoice {
  DType type = DType::F32;
  std::array<RegimeChoice, kRegimes> regime;
};
struct KernelChoiceReport {
  std::vector<TypeChoice> types;  // per type with a choice; empty when `overall` applies
  std::string overall;            // "avx2 everywhere (forced by EMBER_SIMD=avx2)" and the like
  std::vector<std::string> lines() const;  // one per type and regime, or `overall`
};

struct KernelChoiceOptions {
  KernelChoiceMode mode = KernelChoiceMode::Auto;
  std::string cache_path;  // "": measure without caching
  CalibrationPlan plan;
  bool verbose = true;     // a line on stderr when it calibrates (warnings are always printed)
};
KernelChoiceOptions default_kernel_choice_options();  // mode from the environment, default path

// Sets the table for the packed matrices of a model about to run on `pool` and says why.
// Call before the model runs (the measurement forces the table while it runs).
KernelChoiceReport choose_packed_kernels(ThreadPool& pool, std::span<const MatView> packed,
                                         const KernelChoiceOptions& options);

// What a model with the given types would get at `threads` threads without measuring
// anything: the cached entries, the mode or the forcing level (for `ember --version`).
KernelChoiceReport cached_kernel_choice(int threads);

}  // namespace ember::cpu
