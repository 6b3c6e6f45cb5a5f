#include "backend/cpu/kernel_choice_setup.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kernel_choice_cache.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace ember::cpu {

namespace {

// "avx2 14.2 vs avx512 12.9 GB/s": the variants measured, AVX2's always.
std::string speeds_text(const VariantSpeeds& s) {
  std::string out = fmt::format("avx2 {:.1f}", s.of(Variant::Avx2));
  for (Variant v : {Variant::Avx2FourStreams, Variant::Avx2NearPrefetch, Variant::Avx512, Variant::Amx})
    if (s.of(v) > 0) out += fmt::format(" vs {} {:.1f}", variant_name(v), s.of(v));
  return out + " GB/s";
}

// Why no table applies (kernel_choice_applies), or "".
std::string forced_reason() {
  if (kernel_choice_applies()) return "";
  if (!cpu_features().avx2) return "scalar everywhere (this CPU has no AVX2)";
  const char* env = std::getenv("EMBER_SIMD");
  return fmt::format("{} everywhere (forced by {})", simd_level_name(simd_level()),
                     env ? fmt::format("EMBER_SIMD={}", env) : std::string("set_simd_level"));
}

// What EMBER_KERNEL_CHOICE=widest runs: AVX-512 where the CPU has VNNI, else AVX2's pairs.
std::string widest_text() {
  const bool avx512 = cpu_features().avx512_vnni;
  return fmt::format("{} everywhere (EMBER_KERNEL_CHOICE=widest)", avx512 ? "avx512" : "avx2");
}

// The choosable types among the packed matrices, in kChoosableTypes order.
std::vector<DType> packed_types(std::span<const MatView> packed) {
  std::vector<DType> out;
  for (DType t : kChoosableTypes)
    for (const MatView& w : packed)
      if (w.type == t && w.layout == WeightLayout::Interleaved) {
        out.push_back(t);
        break;
      }
  return out;
}

// Why a model has nothing to choose: no choosable packed type, or only types with one
// variant at this level ("avx2 everywhere (Q6_K: one variant here)").
std::string no_choice_text(const std::vector<DType>& single) {
  if (single.empty()) return "no packed matrix with a choice of variants";
  std::string names;
  for (DType t : single) names += (names.empty() ? "" : ", ") + std::string(dtype_name(t));
  return fmt::format("{} everywhere ({}: one variant here)", variant_name(runnable_variant(Variant::Avx512, single[0])),
                     names);
}

TypeChoice choice_from(const TypeSpeeds& s, const std::array<Variant, kRegimes>& use, const std::string& source) {
  TypeChoice c;
  c.type = s.type;
  for (int r = 0; r < kRegimes; ++r) {
    // What runs: a cached "amx" under EMBER_SIMD=avx512 runs AVX-512 (matmul narrows it too).
    const Variant runs = runnable_variant(use[r], s.type);
    const std::string note = runs != use[r] ? fmt::format("; {} off here", variant_name(use[r])) : "";
    c.regime[r] = {runs, fmt::format("{}: {}{}", source, speeds_text(s.regime[r]), note)};
  }
  return c;
}

std::array<Variant, kRegimes> faster_per_regime(const TypeSpeeds& s) {
  std::array<Variant, kRegimes> use{};
  for (int r = 0; r < kRegimes; ++r) use[r] = s.regime[r].faster();
  return use;
}

// A cached entry measured without AMX (EMBER_SIMD=avx512, or an older cache) while AMX runs
// here: measured again, so that the switch does not keep AMX off for good.
bool lacks_amx(const TypeSpeeds& s) {
  return packed_kernel_for(Variant::Amx, s.type) && s.regime[static_cast<int>(Regime::Prefill)].gbs[2] <= 0;
}

void warn(const std::string& line) { fmt::print(stderr, "ember: warning: {}\n", line); }

// The types' cached choices (auto mode), the rest measured, cached and chosen.
std::vector<TypeChoice> cached_or_measured(ThreadPool& pool, std::span<const MatView> packed,
                                           const std::vector<DType>& types, const KernelChoiceOptions& o) {
  const KernelCacheKey key = current_kernel_cache_key(pool.size());
  std::vector<TypeChoice> out;
  std::vector<DType> missing = types;
  if (o.mode == KernelChoiceMode::Auto && !o.cache_path.empty()) {
    const CachedSpeeds cached = read_kernel_cache(o.cache_path, key);
    if (!cached.warning.empty()) warn(cached.warning);
    for (size_t i = 0; i < cached.types.size(); ++i) {
      const auto it = std::find(missing.begin(), missing.end(), cached.types[i].type);
      if (it == missing.end() || lacks_amx(cached.types[i])) continue;
      missing.erase(it);
      out.push_back(choice_from(cached.types[i], cached.use[i], "cached " + o.cache_path));
    }
  }
  if (missing.empty()) return out;
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<TypeSpeeds> measured = measure_variants(pool, packed, missing, o.plan);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  for (const TypeSpeeds& s : measured) out.push_back(choice_from(s, faster_per_regime(s), "calibrated"));
  std::string where = "not cached";
  if (!o.cache_path.empty()) {
    const std::string error = write_kernel_cache(o.cache_path, key, measured);
    if (!error.empty()) warn(error);
    else where = "cached in " + o.cache_path;
  }
  if (o.verbose) {
    std::string names;
    for (const TypeSpeeds& s : measured) names += (names.empty() ? "" : ", ") + std::string(dtype_name(s.type));
    fmt::print(stderr, "ember: measured the CPU kernels for {} in {:.0f} ms ({} thread{}), {}\n", names, ms, pool.size(),
               pool.size() == 1 ? "" : "s", where);
  }
  return out;
}

}  // namespace

KernelChoiceMode kernel_choice_mode() {
  const char* env = std::getenv("EMBER_KERNEL_CHOICE");
  if (!env || !*env || std::strcmp(env, "auto") == 0) return KernelChoiceMode::Auto;
  if (std::strcmp(env, "calibrate") == 0) return KernelChoiceMode::Calibrate;
  if (std::strcmp(env, "widest") == 0) return KernelChoiceMode::Widest;
  fail(ErrorKind::InvalidArgument, "EMBER_KERNEL_CHOICE={}: expected auto, calibrate or widest", env);
}

KernelChoiceOptions default_kernel_choice_options() {
  KernelChoiceOptions o;
  o.mode = kernel_choice_mode();
  o.cache_path = default_kernel_cache_path();
  return o;
}

std::vector<std::string> KernelChoiceReport::lines() const {
  std::vector<std::string> out;
  if (!overall.empty()) out.push_back("kernels: " + overall);
  for (const TypeChoice& t : types)
    for (int r = 0; r < kRegimes; ++r)
      out.push_back(fmt::format("kernels: {} {}: {} ({})", dtype_name(t.type), regime_name(static_cast<Regime>(r)),
                                variant_name(t.regime[r].variant), t.regime[r].why));
  return out;
}

KernelChoiceReport choose_packed_kernels(ThreadPool& pool, std::span<const MatView> packed,
                                         const KernelChoiceOptions& options) {
  KernelChoiceReport report;
  const std::vector<DType> choosable = packed_types(packed);
  std::vector<DType> types = choosable;  // those with more than one variant here
  std::erase_if(types, [](DType t) { return !has_kernel_choice(t); });
  const std::string forced = forced_reason();
  if (!forced.empty() && !choosable.empty()) {
    report.overall = forced;
  } else if (types.empty()) {
    report.overall = no_choice_text(choosable);
  } else if (options.mode == KernelChoiceMode::Widest) {
    set_kernel_choice(KernelChoiceTable::all(Variant::Avx512));
    report.overall = widest_text();
  } else {
    report.types = cached_or_measured(pool, packed, types, options);
    KernelChoiceTable table = kernel_choice();
    for (const TypeChoice& t : report.types)
      for (int r = 0; r < kRegimes; ++r) table.set(t.type, static_cast<Regime>(r), t.regime[r].variant);
    set_kernel_choice(table);
  }
  return report;
}

KernelChoiceReport cached_kernel_choice(int threads) {
  KernelChoiceReport report;
  if (std::string forced = forced_reason(); !forced.empty()) {
    report.overall = forced;
    return report;
  }
  const KernelChoiceMode mode = kernel_choice_mode();
  if (mode == KernelChoiceMode::Widest) {
    report.overall = widest_text();
    return report;
  }
  const std::string path = default_kernel_cache_path();
  const CachedSpeeds cached = read_kernel_cache(path, current_kernel_cache_key(threads));
  for (size_t i = 0; i < cached.types.size(); ++i)
    report.types.push_back(choice_from(cached.types[i], cached.use[i], "cached " + path));
  if (report.types.empty())
    report.overall = fmt::format("measured per type when a model loads ({}; nothing cached for {} threads{})",
                                 mode == KernelChoiceMode::Calibrate ? "EMBER_KERNEL_CHOICE=calibrate" : "auto", threads,
                                 cached.warning.empty() ? "" : ": " + cached.warning);
  return report;
}

}  // namespace ember::cpu
