#include "backend/cpu/kernel_choice.h"

#include <atomic>

namespace ember::cpu {

namespace {

constexpr size_t kTypes = kChoosableTypes.size();

// 1 where the entry is Avx2: zero-initialised, the table starts as the widest variant.
// Relaxed atomics: the table is set at load, before the steps that read it, and any value
// read is a valid variant whose output has the same bits.
std::atomic<uint8_t> g_avx2[kTypes][kRegimes] = {};
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

const char* variant_name(Variant v) { return v == Variant::Avx2 ? "avx2" : "avx512"; }

int choosable_index(DType t) {
  for (size_t i = 0; i < kTypes; ++i)
    if (kChoosableTypes[i] == t) return static_cast<int>(i);
  return -1;
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
      g_avx2[i][r].store(table.variant[i][r] == Variant::Avx2 ? 1 : 0, std::memory_order_relaxed);
}

KernelChoiceTable kernel_choice() {
  KernelChoiceTable t;
  for (size_t i = 0; i < kTypes; ++i)
    for (int r = 0; r < kRegimes; ++r)
      t.variant[i][r] = g_avx2[i][r].load(std::memory_order_relaxed) ? Variant::Avx2 : Variant::Avx512;
  return t;
}

Variant chosen_variant(DType t, Regime r) {
  const int i = choosable_index(t);
  return i >= 0 && g_avx2[i][static_cast<int>(r)].load(std::memory_order_relaxed) ? Variant::Avx2 : Variant::Avx512;
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
