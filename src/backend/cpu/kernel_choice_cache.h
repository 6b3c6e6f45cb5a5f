// The kernel-choice measurements cached on disk, so that calibration runs once per CPU model:
// one JSON file under the user's cache folder, for one CPU (CPUID brand string), ember
// version and kernel ABI, holding one set of measurements per thread count:
//
//   {"format": "ember-kernel-choice", "cpu": "...", "ember": "0.1.0", "abi": 5,
//    "threads": {"2": {"Q4_0": {"decode": {"use": "avx2", "avx2_gbs": 14.2, "avx512_gbs": 12.9},
//                               "batch": {...}, "prefill": {...}}}}}
//
// ("amx_gbs" besides, where the CPU has AMX and the type an AMX kernel, "use" then maybe
// "amx"; "avx2_4streams_gbs" and "avx2_prefetch1k_gbs" for decode, where the type has those
// kernels, "use" maybe "avx2-4streams" or "avx2-prefetch1k"; "avx512_gbs" is 0 where the CPU
// has no AVX-512 VNNI.)
//
// A file that does not parse, or was made for another CPU, version or ABI, is ignored with a
// one-line warning (and replaced by the next write); reading never throws.
#pragma once
#include <string>
#include <vector>

#include "backend/cpu/kernel_calibration.h"

namespace ember::cpu {

struct KernelCacheKey {
  std::string cpu;    // cpu_brand_string()
  std::string ember;  // EMBER_VERSION
  int abi = kKernelAbi;
  int threads = 1;
};
KernelCacheKey current_kernel_cache_key(int threads);

// $XDG_CACHE_HOME/ember/kernel-choice.json, else $HOME/.cache/ember/kernel-choice.json,
// else "" (no cache).
std::string default_kernel_cache_path();

struct CachedSpeeds {
  // A cached type's "use" per regime (normally the faster of its two numbers; a hand edit
  // of "use" is honoured) and the numbers themselves.
  std::vector<TypeSpeeds> types;
  std::vector<std::array<Variant, kRegimes>> use;  // parallel to types
  std::string warning;  // why the file was ignored ("" when it was read or is absent)
};

CachedSpeeds read_kernel_cache(const std::string& path, const KernelCacheKey& key);

// Writes `types` for `key` into the file, keeping the file's entries for other thread
// counts and other types when it is for the same CPU, version and ABI. Returns "" or a
// one-line reason it could not (the caller warns; a read-only cache folder is not fatal).
std::string write_kernel_cache(const std::string& path, const KernelCacheKey& key, const std::vector<TypeSpeeds>& types);

}  // namespace ember::cpu
