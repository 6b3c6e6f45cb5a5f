#include "backend/cpu/kernel_choice.h"

#include <atomic>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/matmul_packed_amx.h"
#include "backend/cpu/matmul_packed_avx512.h"

namespace ember::cpu {

namespace {

constexpr size_t kTypes = kChoosableTypes.size();

// Each entry's variant XOR Avx512, so that the zero-initialised table starts as Avx512.
// Relaxed atomics: the table is set at load, before the steps that read it, and any value
// read is a valid variant whose output has the same bits.
std::atomic<uint8_t> g_entry[kTypes][kRegimes] = {};
uint8_t encode(Variant v) { return static_cast<uint8_t>(static_cast<uint8_t>(v) ^ static_cast<uint8_t>(Variant::Avx512)); }
Variant decode(uint8_t e) { return static_cast<Variant>(e ^ static_cast<uint8_t>(Variant::Avx512)); }
std::atomic<uint64_t> g_calls[kVariants][kRegimes] = {};

}  // namespace

Regime regime_of(int64_t rows) {
  return rows <= 1 ? Regime::Decode : rows <= kSmallBatchMaxRows ? Regime::SmallBatch : Regime::Prefill;
}

const char* regime_name(Regime r) {
  switch (r) {
    case Regime::Decode: return "decode";
    case Regime::SmallBatch: return "batch";
    case Regime::Prefill: return "prefill";
  }
  return "?";
}

const char* variant_name(Variant v) {
  switch (v) {
    case Variant::Avx2: return "avx2";
    case Variant::Avx512: return "avx512";
    case Variant::Amx: return "amx";
    case Variant::Avx2FourStreams: return "avx2-4streams";
    case Variant::Avx2NearPrefetch: return "avx2-prefetch1k";
  }
  return "?";
}

const PackedKernel* packed_kernel_for(Variant v, DType t) {
  switch (v) {
    case Variant::Avx2: return simd_level() >= SimdLevel::AVX2 ? packed_kernel_avx2(t) : nullptr;
    case Variant::Avx512:
      return simd_level() >= SimdLevel::AVX512 && cpu_features().avx512_vnni ? packed_kernel_avx512(t) : nullptr;
    case Variant::Amx: return simd_level() >= SimdLevel::AMX ? amx::packed_kernel(t) : nullptr;
    case Variant::Avx2FourStreams: return simd_level() >= SimdLevel::AVX2 ? packed_kernel_avx2_four_streams(t) : nullptr;
    case Variant::Avx2NearPrefetch: return simd_level() >= SimdLevel::AVX2 ? packed_kernel_avx2_near_prefetch(t) : nullptr;
  }
  return nullptr;
}

bool kernel_choice_applies() {
  if (cpu_features().avx512_vnni) return simd_level() >= SimdLevel::AVX512;
  return simd_level() >= SimdLevel::AVX2;  // AVX2's kernels are the CPU's best: its decode variants
}

bool has_kernel_choice(DType t) {
  int runnable = 0;
  for (int v = 0; v < kVariants; ++v) runnable += packed_kernel_for(static_cast<Variant>(v), t) != nullptr;
  return runnable > 1;
}

int choosable_index(DType t) {
  for (size_t i = 0; i < kTypes; ++i)
    if (kChoosableTypes[i] == t) return static_cast<int>(i);
  return -1;
}

Variant runnable_variant(Variant v, DType t) {
  if (v == Variant::Amx && !packed_kernel_for(v, t)) v = Variant::Avx512;
  if (v == Variant::Avx512 && !packed_kernel_for(v, t)) v = Variant::Avx2;
  if (is_avx2_decode_variant(v) && !packed_kernel_for(v, t)) v = Variant::Avx2;
  return v;
}

KernelChoiceTable::KernelChoiceTable() {
  for (auto& row : variant) row.fill(Variant::Avx512);
}

KernelChoiceTable KernelChoiceTable::all(Variant v) {
  KernelChoiceTable t;
  for (auto& row : t.variant) row.fill(v);
  return t;
}

Variant KernelChoiceTable::get(DType t, Regime r) const {
  const int i = choosable_index(t);
  return i < 0 ? Variant::Avx512 : variant[i][static_cast<int>(r)];
}

void KernelChoiceTable::set(DType t, Regime r, Variant v) {
  const int i = choosable_index(t);
  if (i >= 0) variant[i][static_cast<int>(r)] = v;
}

void set_kernel_choice(const KernelChoiceTable& table) {
  for (size_t i = 0; i < kTypes; ++i)
    for (int r = 0; r < kRegimes; ++r)
      g_entry[i][r].store(encode(table.variant[i][r]), std::memory_order_relaxed);
}

KernelChoiceTable kernel_choice() {
  KernelChoiceTable t;
  for (size_t i = 0; i < kTypes; ++i)
    for (int r = 0; r < kRegimes; ++r)
      t.variant[i][r] = decode(g_entry[i][r].load(std::memory_order_relaxed));
  return t;
}

Variant chosen_variant(DType t, Regime r) {
  const int i = choosable_index(t);
  return i < 0 ? Variant::Avx512 : decode(g_entry[i][static_cast<int>(r)].load(std::memory_order_relaxed));
}

VariantCalls variant_calls() {
  VariantCalls c;
  for (int v = 0; v < kVariants; ++v)
    for (int r = 0; r < kRegimes; ++r) c.n[v][r] = g_calls[v][r].load(std::memory_order_relaxed);
  return c;
}

void count_variant_call(Variant v, Regime r) {
  g_calls[static_cast<int>(v)][static_cast<int>(r)].fetch_add(1, std::memory_order_relaxed);
}

}  // namespace ember::cpu
