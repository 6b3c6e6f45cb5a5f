// A whole model under kernel-choice tables that send decode, small batches and prefill to
// different packed variants: a sequence's logits are the same bits whichever regime (and so
// whichever variant) computed them, fed alone one token at a time, in one prefill call, or in
// chunks batched with other sequences.
#include <doctest/doctest.h>

#include <cstring>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kernel_choice.h"
#include "models/model_support.h"
#include "models/scheduler_support.h"
#include "models/synth_family.h"

namespace ember {
namespace {

using cpu::Regime;
using cpu::Variant;

// The sequence's tokens in chunks of 7 beside 5 tokens of another sequence: batches of 12
// rows (the small-batch regime).
std::vector<float> in_small_batches(Context& ctx, const std::vector<int32_t>& a, const std::vector<int32_t>& other) {
  std::vector<float> got;
  for (size_t begin = 0; begin < a.size(); begin += 7) {
    Batch b;
    for (size_t i = 0; i < 5; ++i) b.add(other[(begin / 7 * 5 + i) % other.size()], -1, 0, false);
    const size_t end = std::min(a.size(), begin + 7);
    for (size_t i = begin; i < end; ++i) b.add(a[i], -1, 1, true);
    const std::span<const float> l = ctx.decode(b);
    got.insert(got.end(), l.begin(), l.end());
  }
  return got;
}

uint64_t total_calls(Variant v) {
  const cpu::VariantCalls c = cpu::variant_calls();
  uint64_t n = 0;
  for (uint64_t x : c.n[static_cast<int>(v)]) n += x;
  return n;
}

}  // namespace

TEST_CASE("a model's logits are the same bits whichever variant each regime runs") {
  const cpu::KernelChoiceTable saved = cpu::kernel_choice();
  test::TempDir dir("kchoice-model");
  for (const char* type : {"q4_0", "q8_0", "q4_k_m"}) {
    CAPTURE(type);
    auto model = Model::load(test::synth_family(dir, "llama", type), test::quiet_load());
    const std::vector<int32_t> a = test::prompt_of(40, 1), other = test::prompt_of(30, 2);
    ThreadPool pool(2);
    std::vector<std::vector<float>> runs;
    // Decode and prefill on one variant, small batches on the other; then prefill on AMX
    // (where the CPU has it: the 40-token prefill is two AMX tiles and 8 tokens left over);
    // then decode on AVX2's four-stream walk (Q4_0 and Q8_0 have it; Q4_K falls back to AVX2)
    // and on its near prefetch (Q4_K has it too; Q6_K falls back).
    for (Variant decode :
         {Variant::Avx2, Variant::Avx512, Variant::Amx, Variant::Avx2FourStreams, Variant::Avx2NearPrefetch}) {
      const Variant batch = decode == Variant::Avx512 ? Variant::Avx2 : Variant::Avx512;
      cpu::KernelChoiceTable table;
      for (DType t : cpu::kChoosableTypes) {
        table.set(t, Regime::Decode, decode == Variant::Amx ? Variant::Avx2 : decode);
        table.set(t, Regime::SmallBatch, batch);
        table.set(t, Regime::Prefill, decode);
      }
      cpu::set_kernel_choice(table);
      const uint64_t avx2_before = total_calls(Variant::Avx2), avx512_before = total_calls(Variant::Avx512),
                     amx_before = total_calls(Variant::Amx), decode_before = total_calls(decode);
      Context one(*model, test::options(1), pool), prefill(*model, test::options(1), pool),
          mixed(*model, test::options(2), pool);
      runs.push_back(test::run_one_by_one(one, a, 0, a.size()));
      runs.push_back(test::run_batch(prefill, a, 0, a.size()));
      runs.push_back(in_small_batches(mixed, a, other));
      const bool k_quants = std::strcmp(type, "q4_k_m") == 0;
      if (!cpu::is_avx2_decode_variant(decode) || k_quants) CHECK(total_calls(Variant::Avx2) > avx2_before);
      if (decode == Variant::Avx2NearPrefetch || (decode == Variant::Avx2FourStreams && !k_quants))
        CHECK(total_calls(decode) > decode_before);
      if (simd_level() >= SimdLevel::AVX512 && cpu_features().avx512_vnni) CHECK(total_calls(Variant::Avx512) > avx512_before);
      if (decode == Variant::Amx && simd_level() >= SimdLevel::AMX) CHECK(total_calls(Variant::Amx) > amx_before);
    }
    if (simd_level() < SimdLevel::AMX) MESSAGE("no AMX int8 here: the AMX prefill entries ran AVX-512 or AVX2");
    for (size_t i = 1; i < runs.size(); ++i) {
      CAPTURE(i);
      REQUIRE(runs[i].size() == runs[0].size());
      CHECK(std::memcmp(runs[i].data(), runs[0].data(), runs[0].size() * sizeof(float)) == 0);
    }
  }
  cpu::set_kernel_choice(saved);
}

}  // namespace ember
