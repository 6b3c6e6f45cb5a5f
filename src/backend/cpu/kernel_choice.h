// Which variant of a packed matmul kernel each weight type uses in each regime (one-token
// decode, small batches, prefill): a table that pick_kernel (matmul.cpp) reads on every
// call, filled by measurement (kernel_calibration.h, kernel_choice_setup.h) instead of "the
// widest instruction set wins". The packed AVX-512 VNNI kernels read the AVX2 kernels'
// groups and give the same bits, so a row gets the same output whichever variant the table
// names for the regime it runs in: batch invariance does not depend on the table.
#pragma once
#include <array>
#include <cstdint>

#include "tensor/dtype.h"

namespace ember::cpu {

enum class Regime : uint8_t { Decode = 0, SmallBatch = 1, Prefill = 2 };
constexpr int kRegimes = 3;
constexpr int64_t kSmallBatchMaxRows = 16;

// The regime of a matmul over `rows` activation rows: 1, 2..16, more.
Regime regime_of(int64_t rows);
const char* regime_name(Regime r);  // "decode", "batch", "prefill"

enum class Variant : uint8_t { Avx2 = 0, Avx512 = 1 };
constexpr int kVariants = 2;
const char* variant_name(Variant v);  // "avx2", "avx512"

// The weight types whose packed kernel has an AVX-512 variant besides the AVX2 one.
inline constexpr std::array<DType, 8> kChoosableTypes = {DType::Q4_0, DType::Q5_0, DType::Q4_1, DType::Q5_1,
                                                          DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};
int choosable_index(DType t);  // its index in kChoosableTypes, or -1

// Bumped when a kernel changes enough that cached measurements no longer hold.
constexpr int kKernelAbi = 1;

struct KernelChoiceTable {
  std::array<std::array<Variant, kRegimes>, kChoosableTypes.size()> variant;

  KernelChoiceTable();  // every entry Avx512: the widest variant, as before calibration
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
