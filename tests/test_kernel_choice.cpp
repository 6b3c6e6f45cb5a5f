// The kernel-choice table (backend/cpu/kernel_choice.h) and what fills it: per-regime
// dispatch with injected tables (which variant ran, and bitwise equal outputs either way),
// the cache file's reading and writing, and the modes and fallbacks of
// choose_packed_kernels. Nothing here depends on which variant is faster on this machine.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kernel_calibration.h"
#include "backend/cpu/kernel_choice.h"
#include "backend/cpu/kernel_choice_cache.h"
#include "backend/cpu/kernel_choice_setup.h"
#include "backend_check.h"
#include "tensor/quant.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace ember {
namespace {

using cpu::Regime;
using cpu::Variant;

bool avx512_variants_run() { return simd_level() >= SimdLevel::AVX512 && cpu_features().avx512_vnni; }

// A random matrix of type t, packed for the CPU kernels.
struct PackedMatrix {
  std::vector<uint8_t> rows_data;
  PackedWeight packed;

  PackedMatrix(DType t, int64_t rows, int64_t k, uint64_t seed) {
    check::Rng rng(seed);
    const size_t row_bytes = dtype_row_bytes(t, k);
    rows_data = check::quantized_normal_rows(t, rows, k, rng);
    std::optional<PackedWeight> p = ops::pack_weight(MatView{t, k, rows, row_bytes, rows_data.data()});
    REQUIRE(p.has_value());
    packed = *p;
  }
  const MatView& view() const { return packed.view; }
};

// Restores the table and the level a test changes.
struct ChoiceGuard {
  cpu::KernelChoiceTable table = cpu::kernel_choice();
  SimdLevel level = simd_level();
  ~ChoiceGuard() {
    cpu::set_kernel_choice(table);
    set_simd_level(level);
  }
};

std::vector<float> run_matmul(ThreadPool& pool, const MatView& w, const std::vector<float>& x, int64_t rows) {
  std::vector<float> y(static_cast<size_t>(rows * w.rows));
  ops::matmul(pool, w, check::dense_view(x.data(), rows, w.cols), check::dense_mat(y, rows, w.rows));
  return y;
}

uint64_t calls(Variant v, Regime r) { return cpu::variant_calls().n[static_cast<int>(v)][static_cast<int>(r)]; }

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() / ("ember-kchoice-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const char* name) const { return (path / name).string(); }
};

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
}

cpu::TypeSpeeds speeds(DType t, double a, double b) {
  cpu::TypeSpeeds s;
  s.type = t;
  for (int r = 0; r < cpu::kRegimes; ++r) s.regime[r].gbs = {a + r, b - r};
  return s;
}

}  // namespace

TEST_CASE("AVX2 is chosen only when it measured faster by more than the noise margin") {
  cpu::VariantSpeeds v;
  v.gbs = {10.2, 10.0};  // 2% faster: within the margin
  CHECK(v.faster() == Variant::Avx512);
  v.gbs = {10.4, 10.0};  // 4% faster
  CHECK(v.faster() == Variant::Avx2);
  v.gbs = {9.0, 10.0};
  CHECK(v.faster() == Variant::Avx512);
}

TEST_CASE("AMX is chosen only when it measured faster than the better of the others by more than the margin") {
  cpu::VariantSpeeds v;
  v.gbs = {10.0, 10.0, 10.2};  // a tie with AVX-512 (AMX hands fewer than 16 rows to it)
  CHECK(v.faster() == Variant::Avx512);
  v.gbs = {10.0, 10.0, 11.0};
  CHECK(v.faster() == Variant::Amx);
  v.gbs = {12.0, 10.0, 12.2};  // AVX2 is the one to beat
  CHECK(v.faster() == Variant::Avx2);
  v.gbs = {12.0, 10.0, 0.0};  // not measured
  CHECK(v.faster() == Variant::Avx2);
}

TEST_CASE("AVX2's decode variants are chosen only when they measured faster than its pairs by more than the margin") {
  cpu::VariantSpeeds v;
  const auto set = [&](double avx2, double avx512, double four, double near = 0.0) {
    v.gbs = {avx2, avx512, 0.0, four, near};
  };
  set(10.0, 0.0, 10.2);  // a CPU without AVX-512 VNNI, 2% apart: the pairs stay
  CHECK(v.faster() == Variant::Avx2);
  set(10.0, 0.0, 10.5);
  CHECK(v.faster() == Variant::Avx2FourStreams);
  set(10.0, 10.0, 10.5);  // beats AVX-512 too, by more than AVX2's margin
  CHECK(v.faster() == Variant::Avx2FourStreams);
  set(10.0, 10.6, 10.5);
  CHECK(v.faster() == Variant::Avx512);
  set(12.0, 10.0, 0.0);  // not measured (batch, prefill, the K-quants)
  CHECK(v.faster() == Variant::Avx2);
  CHECK(std::string(cpu::variant_name(Variant::Avx2FourStreams)) == "avx2-4streams");
  set(10.0, 0.0, 0.0, 10.2);  // the near prefetch likewise (a K-quant: no four-stream walk)
  CHECK(v.faster() == Variant::Avx2);
  set(10.0, 0.0, 0.0, 10.5);
  CHECK(v.faster() == Variant::Avx2NearPrefetch);
  set(10.0, 0.0, 10.4, 10.5);  // both clear the margin: the faster of them
  CHECK(v.faster() == Variant::Avx2NearPrefetch);
  set(10.0, 0.0, 10.6, 10.5);
  CHECK(v.faster() == Variant::Avx2FourStreams);
  set(10.0, 0.0, 10.2, 10.25);  // neither does
  CHECK(v.faster() == Variant::Avx2);
  CHECK(std::string(cpu::variant_name(Variant::Avx2NearPrefetch)) == "avx2-prefetch1k");
  CHECK(cpu::is_avx2_decode_variant(Variant::Avx2NearPrefetch));
  CHECK_FALSE(cpu::is_avx2_decode_variant(Variant::Avx512));
}

TEST_CASE("regimes split at one row and at 16 rows") {
  CHECK(cpu::regime_of(1) == Regime::Decode);
  CHECK(cpu::regime_of(2) == Regime::SmallBatch);
  CHECK(cpu::regime_of(16) == Regime::SmallBatch);
  CHECK(cpu::regime_of(17) == Regime::Prefill);
  CHECK(std::string(cpu::regime_name(Regime::SmallBatch)) == "batch");
}

TEST_CASE("the table starts at the widest variant and keeps what is set") {
  ChoiceGuard guard;
  const cpu::KernelChoiceTable widest;
  CHECK(widest.get(DType::Q4_0, Regime::Decode) == Variant::Avx512);
  CHECK(widest.get(DType::F16, Regime::Decode) == Variant::Avx512);  // no choice: the widest
  cpu::KernelChoiceTable t = widest;
  t.set(DType::Q4_K, Regime::Decode, Variant::Avx2);
  t.set(DType::F16, Regime::Decode, Variant::Avx2);  // ignored: F16 has one packed kernel
  cpu::set_kernel_choice(t);
  CHECK(cpu::kernel_choice() == t);
  CHECK(cpu::chosen_variant(DType::Q4_K, Regime::Decode) == Variant::Avx2);
  CHECK(cpu::chosen_variant(DType::Q4_K, Regime::Prefill) == Variant::Avx512);
  CHECK(cpu::chosen_variant(DType::F16, Regime::Decode) == Variant::Avx512);
}

TEST_CASE("each regime runs the variant the table names, and a row gets the same bits alone and in a batch") {
  ChoiceGuard guard;
  ThreadPool pool(2);
  for (DType t : cpu::kChoosableTypes) {
    CAPTURE(dtype_name(t));
    const int64_t k = 2 * 256;
    PackedMatrix w(t, 72, k, 7 + static_cast<int>(t));
    check::Rng rng(99);
    const std::vector<float> x = rng.normal(static_cast<size_t>(24 * k));

    // The batch under the other variant from the decode row's, both ways round.
    for (Variant decode : {Variant::Avx2, Variant::Avx512}) {
      const Variant other = decode == Variant::Avx2 ? Variant::Avx512 : Variant::Avx2;
      cpu::KernelChoiceTable table;
      table.set(t, Regime::Decode, decode);
      table.set(t, Regime::SmallBatch, other);
      table.set(t, Regime::Prefill, decode);
      cpu::set_kernel_choice(table);
      // Without AVX-512 VNNI every entry runs AVX2.
      const Variant ran_decode = avx512_variants_run() ? decode : Variant::Avx2;
      const Variant ran_other = avx512_variants_run() ? other : Variant::Avx2;

      const uint64_t d0 = calls(ran_decode, Regime::Decode), b0 = calls(ran_other, Regime::SmallBatch),
                     p0 = calls(ran_decode, Regime::Prefill);
      const std::vector<float> batch16 = run_matmul(pool, w.view(), x, 16);
      CHECK(calls(ran_other, Regime::SmallBatch) == b0 + 1);
      const std::vector<float> prefill24 = run_matmul(pool, w.view(), x, 24);
      CHECK(calls(ran_decode, Regime::Prefill) == p0 + 1);
      for (int64_t row = 0; row < 24; ++row) {
        const std::vector<float> one(x.begin() + row * k, x.begin() + (row + 1) * k);
        const std::vector<float> alone = run_matmul(pool, w.view(), one, 1);
        const std::vector<float>& in_batch = row < 16 ? batch16 : prefill24;
        CHECK(std::memcmp(alone.data(), in_batch.data() + row * w.view().rows, alone.size() * sizeof(float)) == 0);
        if (row < 16)
          CHECK(std::memcmp(alone.data(), prefill24.data() + row * w.view().rows, alone.size() * sizeof(float)) == 0);
      }
      CHECK(calls(ran_decode, Regime::Decode) == d0 + 24);
    }
  }
  if (!avx512_variants_run()) MESSAGE("no AVX-512 VNNI here: only the AVX2 variant ran");
}

TEST_CASE("the AMX variant runs where the CPU has it, narrows to AVX-512 or AVX2 elsewhere, and keeps the bits") {
  ChoiceGuard guard;
  ThreadPool pool(2);
  for (DType t : cpu::kChoosableTypes) {
    CAPTURE(dtype_name(t));
    const int64_t k = 3 * 256, rows = 40;  // 40 rows: two 16-token tiles and 8 left over
    PackedMatrix w(t, 56, k, 30 + static_cast<int>(t));
    const std::vector<float> x = check::Rng(31).normal(static_cast<size_t>(rows * k));
    for (SimdLevel level : {SimdLevel::AMX, SimdLevel::AVX512}) {  // EMBER_SIMD=avx512 switches AMX off
      set_simd_level(level);
      CAPTURE(simd_level_name(simd_level()));
      const Variant ran = cpu::packed_kernel_for(Variant::Amx, t)      ? Variant::Amx
                          : cpu::packed_kernel_for(Variant::Avx512, t) ? Variant::Avx512
                                                                       : Variant::Avx2;
      if (simd_level() < SimdLevel::AMX) CHECK(ran != Variant::Amx);
      cpu::set_kernel_choice(cpu::KernelChoiceTable::all(Variant::Avx2));
      const std::vector<float> avx2 = run_matmul(pool, w.view(), x, rows);
      cpu::set_kernel_choice(cpu::KernelChoiceTable::all(Variant::Amx));
      const uint64_t p0 = calls(ran, Regime::Prefill), b0 = calls(ran, Regime::SmallBatch);
      const std::vector<float> prefill = run_matmul(pool, w.view(), x, rows);
      const std::vector<float> batch16 = run_matmul(pool, w.view(), x, 16);
      CHECK(calls(ran, Regime::Prefill) == p0 + 1);
      CHECK(calls(ran, Regime::SmallBatch) == b0 + 1);
      CHECK(std::memcmp(prefill.data(), avx2.data(), avx2.size() * sizeof(float)) == 0);
      CHECK(std::memcmp(batch16.data(), avx2.data(), batch16.size() * sizeof(float)) == 0);
      for (int64_t row : {int64_t{0}, int64_t{17}, rows - 1}) {
        const std::vector<float> one(x.begin() + row * k, x.begin() + (row + 1) * k);
        const std::vector<float> alone = run_matmul(pool, w.view(), one, 1);
        CHECK(std::memcmp(alone.data(), prefill.data() + row * w.view().rows, alone.size() * sizeof(float)) == 0);
      }
    }
  }
  if (!cpu_features().amx_int8) MESSAGE("no AMX int8 here: the AMX entries ran AVX-512 or AVX2");
}

// The types with each of AVX2's decode variants (kernel_choice.h).
bool has_decode_variant(Variant v, DType t) {
  const bool q32 = t == DType::Q8_0 || t == DType::Q4_0 || t == DType::Q5_0 || t == DType::Q4_1 || t == DType::Q5_1;
  return v == Variant::Avx2FourStreams ? q32 : q32 || t == DType::Q4_K || t == DType::Q5_K;
}

TEST_CASE("AVX2's decode variants give the pairs' bits at every row count and thread count") {
  ChoiceGuard guard;
  if (simd_level() < SimdLevel::AVX2) {
    MESSAGE("no AVX2 here: no packed kernels");
    return;
  }
  for (Variant variant : {Variant::Avx2FourStreams, Variant::Avx2NearPrefetch})
    for (DType t : cpu::kChoosableTypes) {
      CAPTURE(cpu::variant_name(variant));
      CAPTURE(dtype_name(t));
      const bool has_kernel = cpu::packed_kernel_for(variant, t) != nullptr;
      CHECK(has_kernel == has_decode_variant(variant, t));
      const Variant ran = has_kernel ? variant : Variant::Avx2;
      CHECK(cpu::runnable_variant(variant, t) == ran);
      const int64_t k = 256;
      const std::vector<float> x = check::Rng(41).normal(static_cast<size_t>(3 * k));
      // 1 to 33 groups of 8 (a short last one too): quarters, pairs and a single left over,
      // in chunks of every size the threads cut.
      for (int64_t rows : {8, 16, 24, 32, 40, 56, 60, 72, 104, 136, 264}) {
        CAPTURE(rows);
        PackedMatrix w(t, rows, k, 50 + static_cast<uint64_t>(rows));
        for (int threads : {1, 2, 3}) {
          CAPTURE(threads);
          ThreadPool pool(threads);
          for (int64_t tokens : {1, 2, 3}) {
            cpu::set_kernel_choice(cpu::KernelChoiceTable::all(Variant::Avx2));
            const std::vector<float> pairs = run_matmul(pool, w.view(), x, tokens);
            cpu::set_kernel_choice(cpu::KernelChoiceTable::all(variant));
            const Regime regime = cpu::regime_of(tokens);
            const uint64_t before = calls(ran, regime);
            const std::vector<float> out = run_matmul(pool, w.view(), x, tokens);
            CHECK(calls(ran, regime) == before + 1);
            CHECK(std::memcmp(out.data(), pairs.data(), pairs.size() * sizeof(float)) == 0);
          }
        }
      }
    }
}

TEST_CASE("EMBER_SIMD below avx512 runs AVX2 whatever the table says") {
  ChoiceGuard guard;
  set_simd_level(SimdLevel::AVX2);
  cpu::set_kernel_choice(cpu::KernelChoiceTable::all(Variant::Avx512));
  ThreadPool pool(2);
  PackedMatrix w(DType::Q4_0, 32, 256, 3);
  const std::vector<float> x = check::Rng(5).normal(size_t{256});
  const uint64_t before = calls(Variant::Avx2, Regime::Decode);
  run_matmul(pool, w.view(), x, 1);
  CHECK(calls(Variant::Avx2, Regime::Decode) == before + 1);
  if (!cpu_features().avx512_vnni) return;  // AVX2 is this CPU's own level: its two walks are chosen (below)
  CHECK_FALSE(cpu::kernel_choice_applies());
  cpu::KernelChoiceOptions o;
  o.cache_path = "";
  const cpu::KernelChoiceReport r = cpu::choose_packed_kernels(pool, std::vector<MatView>{w.view()}, o);
  CHECK(r.types.empty());
  CHECK(r.overall.find("forced by") != std::string::npos);
}

TEST_CASE("decode is measured on AVX2's decode variants too, and a CPU without AVX-512 VNNI gets a table from them") {
  ChoiceGuard guard;
  if (simd_level() < SimdLevel::AVX2) {
    MESSAGE("no AVX2 here: no packed kernels");
    return;
  }
  if (cpu_features().avx512_vnni) set_simd_level(SimdLevel::AVX512);  // measured with the AVX-512 ones there
  CHECK(cpu::kernel_choice_applies());
  TempDir dir;
  ThreadPool pool(2);
  PackedMatrix q8(DType::Q8_0, 64, 512, 2), q4k(DType::Q4_K, 64, 512, 3), q6k(DType::Q6_K, 64, 512, 4);
  cpu::KernelChoiceOptions o;
  o.cache_path = dir.file("kernel-choice.json");
  o.plan.decode_bytes = 1 << 16;
  o.plan.decode_stream_bytes = 1 << 20;
  o.plan.repeats = o.plan.max_repeats = 1;
  o.plan.batch_pass_bytes = o.plan.prefill_pass_bytes = 1 << 16;
  o.verbose = false;
  const cpu::KernelChoiceReport r = cpu::choose_packed_kernels(pool, std::vector<MatView>{q8.view(), q4k.view()}, o);
  CHECK(r.overall.empty());
  // Q4_K has the near prefetch but no four-stream walk.
  REQUIRE(r.types.size() == 2u);
  CHECK(r.types[0].type == DType::Q8_0);
  CHECK(r.types[0].regime[0].why.find(" vs avx2-4streams ") != std::string::npos);
  CHECK(r.types[0].regime[0].why.find(" vs avx2-prefetch1k ") != std::string::npos);
  CHECK(r.types[1].type == DType::Q4_K);
  CHECK(r.types[1].regime[0].why.find(" vs avx2-prefetch1k ") != std::string::npos);
  CHECK(r.types[1].regime[0].why.find("avx2-4streams") == std::string::npos);
  for (int reg = 1; reg < cpu::kRegimes; ++reg)  // decode only
    for (const cpu::TypeChoice& type : r.types) {
      CHECK(type.regime[reg].why.find("avx2-4streams") == std::string::npos);
      CHECK(type.regime[reg].why.find("avx2-prefetch1k") == std::string::npos);
    }
  for (int reg = 0; reg < cpu::kRegimes; ++reg)
    CHECK(cpu::chosen_variant(DType::Q8_0, static_cast<Regime>(reg)) == r.types[0].regime[reg].variant);
  if (!cpu_features().avx512_vnni) {
    CHECK(r.types[0].regime[1].variant == Variant::Avx2);
    CHECK(r.types[0].regime[2].variant == Variant::Avx2);
  }
  const cpu::CachedSpeeds cached = cpu::read_kernel_cache(o.cache_path, cpu::current_kernel_cache_key(pool.size()));
  REQUIRE(!cached.types.empty());
  CHECK(cached.types[0].regime[0].of(Variant::Avx2FourStreams) > 0);
  CHECK(cached.types[0].regime[0].of(Variant::Avx2NearPrefetch) > 0);
  CHECK(cached.types[0].regime[1].of(Variant::Avx2FourStreams) == 0);
  CHECK(cached.types[0].regime[1].of(Variant::Avx2NearPrefetch) == 0);
  CHECK(cached.use[0][0] == r.types[0].regime[0].variant);

  if (!cpu_features().avx512_vnni) {  // a model of Q6_K alone has nothing to choose here
    const cpu::KernelChoiceReport q6_only = cpu::choose_packed_kernels(pool, std::vector<MatView>{q6k.view()}, o);
    CHECK(q6_only.types.empty());
    CHECK(q6_only.overall == "avx2 everywhere (Q6_K: one variant here)");
  }
  o.mode = cpu::KernelChoiceMode::Widest;  // no measurement: the pairs where AVX2 runs
  const cpu::KernelChoiceReport wide = cpu::choose_packed_kernels(pool, std::vector<MatView>{q8.view()}, o);
  CHECK(wide.overall.find(cpu_features().avx512_vnni ? "avx512 everywhere" : "avx2 everywhere") != std::string::npos);
  CHECK_FALSE(cpu::is_avx2_decode_variant(cpu::chosen_variant(DType::Q8_0, Regime::Decode)));
}

TEST_CASE("decode is timed on tall copies of a small model's largest matrix, the model's own codes") {
  ThreadPool pool(2);
  const PackedMatrix small(DType::Q4_K, 12, 256, 7), largest(DType::Q4_K, 20, 512, 8);  // 2 and 3 groups of 8
  const std::vector<MatView> mats = {small.view(), largest.view()};
  const size_t group_bytes = largest.view().row_stride;

  const cpu::DecodeStream enough = cpu::decode_stream_copies(mats, 1024, size_t{1} << 20);
  CHECK(enough.storage == nullptr);  // the model holds the bytes: its own matrices
  REQUIRE(enough.mats.size() == 2);
  CHECK(enough.mats[1].data == largest.view().data);

  const size_t min_bytes = 200 * group_bytes, matrix_bytes = 40 * group_bytes;
  const cpu::DecodeStream tall = cpu::decode_stream_copies(mats, min_bytes, matrix_bytes);
  REQUIRE(tall.storage != nullptr);
  REQUIRE(tall.mats.size() == 5);  // 200 groups in matrices of 40 (>= 3 groups, >= 40 groups' bytes)
  check::Rng rng(11);
  const std::vector<float> x = rng.normal(size_t{512});
  const std::vector<float> want = run_matmul(pool, largest.view(), x, 1);
  for (const MatView& w : tall.mats) {
    CHECK(w.type == DType::Q4_K);
    CHECK(w.cols == 512);
    CHECK(w.row_stride == group_bytes);
    REQUIRE(w.rows == 40 * 8);
    const std::vector<float> y = run_matmul(pool, w, x, 1);
    for (int64_t r = 0; r < w.rows; ++r)  // group g is the largest's group g % 3 (row 20-23: padding)
      if (r % 24 < 20) CHECK(y[static_cast<size_t>(r)] == want[static_cast<size_t>(r % 24)]);
  }
}

TEST_CASE("the cache file: written, read back, merged per thread count") {
  TempDir dir;
  const std::string path = dir.file("sub/kernel-choice.json");
  const cpu::KernelCacheKey key2{"Test CPU 9000", "1.2.3", cpu::kKernelAbi, 2};
  CHECK(cpu::read_kernel_cache(path, key2).types.empty());  // absent: no warning
  CHECK(cpu::read_kernel_cache(path, key2).warning.empty());

  REQUIRE(cpu::write_kernel_cache(path, key2, {speeds(DType::Q4_0, 10, 12)}) == "");
  cpu::KernelCacheKey key1 = key2;
  key1.threads = 1;
  REQUIRE(cpu::write_kernel_cache(path, key1, {speeds(DType::Q8_0, 20, 5)}) == "");
  REQUIRE(cpu::write_kernel_cache(path, key2, {speeds(DType::Q6_K, 7, 3)}) == "");

  const cpu::CachedSpeeds two = cpu::read_kernel_cache(path, key2);
  CHECK(two.warning.empty());
  REQUIRE(two.types.size() == 2);  // Q4_0 kept, Q6_K added
  CHECK(two.types[0].type == DType::Q4_0);
  CHECK(two.types[0].regime[0].gbs[0] == 10);
  CHECK(two.types[0].regime[2].gbs[1] == 10);
  // 10 < 12: avx512; a tie (11, 11) keeps avx512; 12 > 10 by more than the margin: avx2.
  CHECK(two.use[0] == std::array<Variant, 3>{Variant::Avx512, Variant::Avx512, Variant::Avx2});
  CHECK(two.types[1].type == DType::Q6_K);
  CHECK(two.use[1][0] == Variant::Avx2);
  const cpu::CachedSpeeds one = cpu::read_kernel_cache(path, key1);
  REQUIRE(one.types.size() == 1);
  CHECK(one.types[0].type == DType::Q8_0);
  CHECK(cpu::read_kernel_cache(path, cpu::KernelCacheKey{key2.cpu, key2.ember, key2.abi, 8}).types.empty());
}

TEST_CASE("a foreign or corrupt cache file is ignored with one line, and replaced on write") {
  TempDir dir;
  const std::string path = dir.file("kernel-choice.json");
  const cpu::KernelCacheKey key{"Test CPU 9000", "1.2.3", cpu::kKernelAbi, 2};
  REQUIRE(cpu::write_kernel_cache(path, key, {speeds(DType::Q4_0, 10, 12)}) == "");

  for (auto other : {cpu::KernelCacheKey{"Other CPU", key.ember, key.abi, 2},
                     cpu::KernelCacheKey{key.cpu, "9.9.9", key.abi, 2},
                     cpu::KernelCacheKey{key.cpu, key.ember, key.abi + 1, 2}}) {
    const cpu::CachedSpeeds c = cpu::read_kernel_cache(path, other);
    CHECK(c.types.empty());
    CHECK(c.warning.find("made for 'Test CPU 9000'") != std::string::npos);
    CHECK(c.warning.find('\n') == std::string::npos);
  }

  const char* bad[] = {
      "{not json",
      "",
      "[1, 2]",
      R"({"format": "something else"})",
      R"({"format": "ember-kernel-choice", "cpu": "Test CPU 9000", "ember": "1.2.3", "abi": 1, "threads": 5})",
      R"({"format": "ember-kernel-choice", "cpu": "Test CPU 9000", "ember": "1.2.3", "abi": 1,
          "threads": {"2": {"Q4_0": {"decode": {"use": "sse9", "avx2_gbs": 1, "avx512_gbs": 2}}}}})",
      R"({"format": "ember-kernel-choice", "cpu": "Test CPU 9000", "ember": "1.2.3", "abi": 1,
          "threads": {"2": {"Q4_0": {"decode": {"use": "avx2"}}}}})",
  };
  for (const std::string text : bad) {
    CAPTURE(text);
    write_file(path, text);
    const cpu::CachedSpeeds c = cpu::read_kernel_cache(path, key);
    CHECK(c.types.empty());
    CAPTURE(c.warning);
    CHECK(c.warning.rfind("ignoring kernel-choice cache", 0) == 0);
    CHECK(c.warning.find('\n') == std::string::npos);
    REQUIRE(cpu::write_kernel_cache(path, key, {speeds(DType::Q8_0, 1, 2)}) == "");
    const cpu::CachedSpeeds fixed = cpu::read_kernel_cache(path, key);
    CAPTURE(fixed.warning);
    CHECK(fixed.warning.empty());
    CHECK(fixed.types.size() == 1);
  }
}

TEST_CASE("a cached \"use\" is honoured and types this build cannot choose are skipped") {
  TempDir dir;
  const std::string path = dir.file("kernel-choice.json");
  const cpu::KernelCacheKey key{"Test CPU 9000", "1.2.3", cpu::kKernelAbi, 2};
  write_file(path, R"({"format": "ember-kernel-choice", "cpu": "Test CPU 9000", "ember": "1.2.3", "abi": )" +
                       std::to_string(cpu::kKernelAbi) + R"(,
    "threads": {"2": {"F16": {}, "Q4_0": {
      "decode": {"use": "avx2", "avx2_gbs": 1, "avx512_gbs": 2},
      "batch": {"use": "avx512", "avx2_gbs": 1, "avx512_gbs": 2},
      "prefill": {"use": "avx2", "avx2_gbs": 3, "avx512_gbs": 2}}, "Q8_0": {
      "decode": {"use": "avx512", "avx2_gbs": 1, "avx512_gbs": 2, "amx_gbs": 2},
      "batch": {"use": "avx512", "avx2_gbs": 1, "avx512_gbs": 2},
      "prefill": {"use": "amx", "avx2_gbs": 1, "avx512_gbs": 2, "amx_gbs": 5}}, "Q5_0": {
      "decode": {"use": "avx2-4streams", "avx2_gbs": 3, "avx512_gbs": 0, "avx2_4streams_gbs": 4},
      "batch": {"use": "avx2", "avx2_gbs": 1, "avx512_gbs": 0},
      "prefill": {"use": "avx2", "avx2_gbs": 1, "avx512_gbs": 0}}, "Q4_K": {
      "decode": {"use": "avx2-prefetch1k", "avx2_gbs": 3, "avx512_gbs": 0, "avx2_prefetch1k_gbs": 3.5},
      "batch": {"use": "avx2", "avx2_gbs": 1, "avx512_gbs": 0},
      "prefill": {"use": "avx2", "avx2_gbs": 1, "avx512_gbs": 0}}}}})");
  const cpu::CachedSpeeds c = cpu::read_kernel_cache(path, key);
  CHECK(c.warning.empty());
  REQUIRE(c.types.size() == 4);
  CHECK(c.use[0] == std::array<Variant, 3>{Variant::Avx2, Variant::Avx512, Variant::Avx2});
  CHECK(c.use[1] == std::array<Variant, 3>{Variant::Avx512, Variant::Avx512, Variant::Amx});
  CHECK(c.types[1].regime[2].gbs[2] == 5);
  CHECK(c.types[1].regime[1].gbs[2] == 0);  // no amx_gbs: not measured
  CHECK(c.types[2].type == DType::Q5_0);
  CHECK(c.use[2] == std::array<Variant, 3>{Variant::Avx2FourStreams, Variant::Avx2, Variant::Avx2});
  CHECK(c.types[2].regime[0].of(Variant::Avx2FourStreams) == 4);
  CHECK(c.types[2].regime[1].of(Variant::Avx2FourStreams) == 0);
  CHECK(c.types[3].type == DType::Q4_K);
  CHECK(c.use[3] == std::array<Variant, 3>{Variant::Avx2NearPrefetch, Variant::Avx2, Variant::Avx2});
  CHECK(c.types[3].regime[0].of(Variant::Avx2NearPrefetch) == 3.5);
  CHECK(c.types[3].regime[0].of(Variant::Avx2FourStreams) == 0);
}

TEST_CASE("choose_packed_kernels: cached entries set the table, missing types are measured and cached, widest skips") {
  ChoiceGuard guard;
  if (!avx512_variants_run()) {
    MESSAGE("no AVX-512 VNNI here: the table does not apply");
    return;
  }
  TempDir dir;
  ThreadPool pool(2);
  PackedMatrix q4(DType::Q4_0, 64, 512, 1), q8(DType::Q8_0, 64, 512, 2);
  const std::vector<MatView> packed{q4.view(), q8.view()};
  cpu::KernelChoiceOptions o;
  o.cache_path = dir.file("kernel-choice.json");
  o.plan.decode_bytes = 1 << 16;
  o.plan.repeats = o.plan.max_repeats = 1;
  o.plan.batch_pass_bytes = o.plan.prefill_pass_bytes = 1 << 16;
  o.verbose = false;
  // Q4_0 cached with a choice no measurement would make (avx2 where avx512 is listed faster
  // and the other way round): the table must follow the file.
  // An AMX figure for prefill, lower than AVX2's: where AMX runs, an entry without one would
  // be measured again (the next test case).
  cpu::TypeSpeeds q4_0 = speeds(DType::Q4_0, 0, 0);
  q4_0.regime[static_cast<int>(Regime::Prefill)].gbs[2] = 1;
  REQUIRE(cpu::write_kernel_cache(o.cache_path, cpu::current_kernel_cache_key(pool.size()), {q4_0}) == "");
  write_file(o.cache_path, [&] {
    std::ifstream f(o.cache_path);
    std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    // Written: decode avx512 (a tie), batch and prefill avx2 (listed faster); batch becomes avx512.
    const std::string from = "\"use\": \"avx2\"";
    for (size_t at = s.find(from), n = 0; at != std::string::npos; at = s.find(from, at + 1), ++n)
      if (n == 0) s.replace(at, from.size(), "\"use\": \"avx512\"");
    return s;
  }());
  cpu::set_kernel_choice(cpu::KernelChoiceTable::all(Variant::Avx512));
  const cpu::KernelChoiceReport r = cpu::choose_packed_kernels(pool, packed, o);
  REQUIRE(r.types.size() == 2);
  CHECK(r.types[0].type == DType::Q4_0);
  CHECK(r.types[0].regime[0].why.rfind("cached " + o.cache_path, 0) == 0);
  CHECK(cpu::chosen_variant(DType::Q4_0, Regime::Decode) == Variant::Avx512);
  CHECK(cpu::chosen_variant(DType::Q4_0, Regime::SmallBatch) == Variant::Avx512);
  CHECK(cpu::chosen_variant(DType::Q4_0, Regime::Prefill) == Variant::Avx2);
  // Q8_0 was measured: whichever variant won, the table names it and the cache now holds it.
  CHECK(r.types[1].type == DType::Q8_0);
  CHECK(r.types[1].regime[0].why.rfind("calibrated: avx2 ", 0) == 0);
  for (int reg = 0; reg < cpu::kRegimes; ++reg)
    CHECK(cpu::chosen_variant(DType::Q8_0, static_cast<Regime>(reg)) == r.types[1].regime[reg].variant);
  CHECK(cpu::read_kernel_cache(o.cache_path, cpu::current_kernel_cache_key(pool.size())).types.size() == 2);
  CHECK(r.lines().size() == 6);

  o.mode = cpu::KernelChoiceMode::Widest;
  const cpu::KernelChoiceReport wide = cpu::choose_packed_kernels(pool, packed, o);
  CHECK(wide.types.empty());
  CHECK(wide.overall.find("widest") != std::string::npos);
  CHECK(cpu::kernel_choice() == cpu::KernelChoiceTable::all(Variant::Avx512));

  // Calibrate ignores the cache: Q4_0's entry is measured again (its numbers were 0).
  o.mode = cpu::KernelChoiceMode::Calibrate;
  const cpu::KernelChoiceReport again = cpu::choose_packed_kernels(pool, packed, o);
  REQUIRE(again.types.size() == 2);
  CHECK(again.types[0].regime[0].why.rfind("calibrated", 0) == 0);
  const cpu::CachedSpeeds now = cpu::read_kernel_cache(o.cache_path, cpu::current_kernel_cache_key(pool.size()));
  REQUIRE(now.types.size() == 2);
  CHECK(now.types[0].regime[0].gbs[0] > 0);
}

TEST_CASE("a cached entry measured without AMX is measured again where AMX runs") {
  ChoiceGuard guard;
  if (!cpu::packed_kernel_for(Variant::Amx, DType::Q8_0)) {
    MESSAGE("no AMX int8 here: nothing to measure again");
    return;
  }
  TempDir dir;
  ThreadPool pool(2);
  PackedMatrix q8(DType::Q8_0, 64, 512, 2);
  cpu::KernelChoiceOptions o;
  o.cache_path = dir.file("kernel-choice.json");
  o.plan.decode_bytes = 1 << 16;
  o.plan.repeats = o.plan.max_repeats = 1;
  o.plan.batch_pass_bytes = o.plan.prefill_pass_bytes = 1 << 16;
  o.verbose = false;
  // As written under EMBER_SIMD=avx512 (or by an older ember): no amx_gbs.
  REQUIRE(cpu::write_kernel_cache(o.cache_path, cpu::current_kernel_cache_key(pool.size()),
                                  {speeds(DType::Q8_0, 10, 12)}) == "");
  const cpu::KernelChoiceReport r = cpu::choose_packed_kernels(pool, std::vector<MatView>{q8.view()}, o);
  REQUIRE(r.types.size() == 1);
  CHECK(r.types[0].regime[2].why.rfind("calibrated", 0) == 0);
  CHECK(r.types[0].regime[2].why.find("amx") != std::string::npos);
  const cpu::CachedSpeeds now = cpu::read_kernel_cache(o.cache_path, cpu::current_kernel_cache_key(pool.size()));
  REQUIRE(now.types.size() == 1);
  CHECK(now.types[0].regime[2].gbs[2] > 0);
  CHECK(now.types[0].regime[0].gbs[2] == 0);  // AMX is measured for prefill only

  // Under EMBER_SIMD=avx512 the same cache is used as it is, and nothing runs AMX.
  set_simd_level(SimdLevel::AVX512);
  CHECK(cpu::packed_kernel_for(Variant::Amx, DType::Q8_0) == nullptr);
  const cpu::KernelChoiceReport capped = cpu::choose_packed_kernels(pool, std::vector<MatView>{q8.view()}, o);
  REQUIRE(capped.types.size() == 1);
  CHECK(capped.types[0].regime[2].why.rfind("cached", 0) == 0);
}

TEST_CASE("EMBER_KERNEL_CHOICE: auto, calibrate, widest, anything else refused in one line") {
  const char* old = std::getenv("EMBER_KERNEL_CHOICE");
  const std::string saved = old ? old : "";
  ::unsetenv("EMBER_KERNEL_CHOICE");
  CHECK(cpu::kernel_choice_mode() == cpu::KernelChoiceMode::Auto);
  ::setenv("EMBER_KERNEL_CHOICE", "calibrate", 1);
  CHECK(cpu::kernel_choice_mode() == cpu::KernelChoiceMode::Calibrate);
  ::setenv("EMBER_KERNEL_CHOICE", "widest", 1);
  CHECK(cpu::kernel_choice_mode() == cpu::KernelChoiceMode::Widest);
  ::setenv("EMBER_KERNEL_CHOICE", "fastest", 1);
  CHECK_THROWS_WITH_AS(cpu::kernel_choice_mode(), doctest::Contains("expected auto, calibrate or widest"), Error);
  if (old) ::setenv("EMBER_KERNEL_CHOICE", saved.c_str(), 1);
  else ::unsetenv("EMBER_KERNEL_CHOICE");
}

TEST_CASE("the cache path follows XDG_CACHE_HOME, then HOME") {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const std::string saved = xdg ? xdg : "";
  ::setenv("XDG_CACHE_HOME", "/tmp/xdg-test", 1);
  CHECK(cpu::default_kernel_cache_path() == "/tmp/xdg-test/ember/kernel-choice.json");
  ::unsetenv("XDG_CACHE_HOME");
  if (const char* home = std::getenv("HOME"); home && *home)
    CHECK(cpu::default_kernel_cache_path() == std::string(home) + "/.cache/ember/kernel-choice.json");
  if (xdg) ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
}

}  // namespace ember
