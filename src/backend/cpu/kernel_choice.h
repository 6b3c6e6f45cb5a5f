// Which variant of a packed matmul kernel each weight type uses in each regime (one-token
// decode, small batches, prefill): a table that pick_kernel (matmul.cpp) reads on every
// call, filled by measurement (kernel_calibration.h, kernel_choice_setup.h) instead of "the
// widest instruction set wins". The packed AVX-512 VNNI kernels read the AVX2 kernels'
// groups and give the same bits, so a row gets the same output whichever variant the table
// names for the regime it runs in: batch invariance does not depend on the table. The AMX
// int8 kernels (matmul_packed_amx.h) read the same groups and give the same bits as well.
#pragma once
#include <array>
#include <cstdint>

#include "tensor/dtype.h"

namespace ember::cpu {

struct PackedKernel;

enum class Regime : uint8_t { Decode = 0, SmallBatch = 1, Prefill = 2 };
constexpr int kRegimes = 3;
constexpr int64_t kSmallBatchMaxRows = 16;

// The regime of a matmul over `rows` activation rows: 1, 2..16, more.
Regime regime_of(int64_t rows);
const char* regime_name(Regime r);  // "decode", "batch", "prefill"

// Amx: the AMX int8 kernel for whole 16-token tiles, the AVX-512 one for the tokens left over
// (so it differs from Avx512 only from 16 rows on: in prefill, and batches of exactly 16).
// Avx2FourStreams: the AVX2 kernel whose decode (fewer than 4 tokens) reads four far-apart
// row groups at once and leaves prefetching to the hardware (packed_tiles.h,
// for_each_group_quad), for Q8_0 and the 32-element formats; it differs from Avx2 only in
// decode. One more variant to choose between on CPUs whose best is AVX2.
// Avx2NearPrefetch: the AVX2 kernel whose decode pairs prefetch 1 KiB ahead instead of 2
// (packed_tiles.h, kNearPrefetchDistance), for the formats above and Q4_K, Q5_K; it too
// differs from Avx2 only in decode.
enum class Variant : uint8_t { Avx2 = 0, Avx512 = 1, Amx = 2, Avx2FourStreams = 3, Avx2NearPrefetch = 4 };
constexpr int kVariants = 5;
const char* variant_name(Variant v);  // "avx2", "avx512", "amx", "avx2-4streams", "avx2-prefetch1k"
// The variants that are AVX2's kernel with another decode (fewer than 4 tokens): measured
// for decode only, and where a type has no such kernel it runs plain Avx2.
constexpr bool is_avx2_decode_variant(Variant v) {
  return v == Variant::Avx2FourStreams || v == Variant::Avx2NearPrefetch;
}

// The weight types whose packed kernel has an AVX-512 variant besides the AVX2 one.
inline constexpr std::array<DType, 8> kChoosableTypes = {DType::Q4_0, DType::Q5_0, DType::Q4_1, DType::Q5_1,
                                                          DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};
int choosable_index(DType t);  // its index in kChoosableTypes, or -1

// Bumped when a kernel changes enough that cached measurements no longer hold (2: AMX; 3:
// decode timed beyond the caches, see CalibrationPlan::decode_stream_bytes, and the AVX-512
// decode walk of far-apart group pairs, packed_tiles_avx512.h; 4: avx2-4streams; 5:
// avx2-prefetch1k).
constexpr int kKernelAbi = 5;

// The packed kernel of variant v for weights of type t at the current SIMD level (simd_level,
// cpu_features), or nullptr when that variant cannot run it here (the caller falls back to a
// narrower variant: every variant of a type reads the same groups and gives the same bits).
const PackedKernel* packed_kernel_for(Variant v, DType t);
// The variant that runs where v is chosen: v, or the next narrower one that has a kernel for t
// here (Amx, then Avx512, then Avx2; Avx2FourStreams or Avx2NearPrefetch, then Avx2).
Variant runnable_variant(Variant v, DType t);
// Whether there is a variant to choose at the current SIMD level: the AVX-512 VNNI ones
// besides AVX2's, or, where AVX2 is the CPU's best, AVX2's decode variants. False when
// EMBER_SIMD (or set_simd_level) keeps a CPU with AVX-512 VNNI below it: the level is forced,
// and every type runs its plain AVX2 kernel.
bool kernel_choice_applies();
// Whether type t has more than one variant that can run here (a type with one is not measured).
bool has_kernel_choice(DType t);

struct KernelChoiceTable {
  std::array<std::array<Variant, kRegimes>, kChoosableTypes.size()> variant;

  KernelChoiceTable();  // every entry Avx512: the rule before calibration (no AMX unmeasured)
  static KernelChoiceTable all(Variant v);
  Variant get(DType t, Regime r) const;  // Avx512 for a type not in kChoosableTypes
  void set(DType t, Regime r, Variant v);
  bool operator==(const KernelChoiceTable&) const = default;
};

// The table pick_kernel reads (process-wide; set it before running models, as loading does).
void set_kernel_choice(const KernelChoiceTable& table);
KernelChoiceTable kernel_choice();
Variant chosen_variant(DType t, Regime r);  // one entry of it, a relaxed atomic load

// How many packed matmuls each variant ran per regime since the process started (each
// pick_kernel of an interleaved weight counts one): `ember bench` and the tests read it to
// see which kernel actually ran.
struct VariantCalls {
  uint64_t n[kVariants][kRegimes] = {};
};
VariantCalls variant_calls();
void count_variant_call(Variant v, Regime r);

}  // namespace ember::cpu
