// The packed AVX-512 VNNI kernels (src/backend/cpu/matmul_packed_avx512.h) against the plain
// reference loop and against the AVX2 packed kernels whose groups they read:
// - their SIMDe build (namespace avx512_emulated, compiled into this test when CMake found
//   SIMDe: EMBER_AVX512_EMULATION) on any CPU with AVX2, which runs the kernels' exact logic;
// - their native build (namespace avx512, in ember_core) when the CPU has AVX-512 VNNI;
// - the AMX int8 kernels (matmul_packed_amx.h) of the types that have one, when the CPU has
//   AMX (no emulation: skipped with a message elsewhere), with more tokens (whole 16-token
//   tiles and the AVX-512 kernel's leftovers) in a test case of their own.
// Odd shapes: rows that leave a pair of groups half filled and a short last group, row ranges
// that start at an odd group (as the driver's chunks may), several blocks per row, 1 to 70
// tokens (whole and partial 4-token tiles, and a second token block). Every output is checked
// against the reference (nMSE), bitwise against the AVX2 kernel, bitwise between a batch and
// each of its tokens alone (decode = batch), and for writes outside its place (sentinels).
// The AVX-512 BF16 kernel for BF16 weights in the rows layout gets the same checks (against
// the reference only: it rounds the activations to bf16, see its section below), and one of
// its rounding of the activations.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/matmul_bf16_avx512.h"
#include "backend/cpu/matmul_packed_amx.h"
#include "backend/cpu/matmul_packed_avx512.h"
#include "backend/cpu/matmul_reference.h"
#include "backend_check.h"
#include "tensor/fp16.h"
#include "tensor/quant.h"

using namespace ember;

namespace {

const DType kTypes[] = {DType::Q4_0, DType::Q5_0, DType::Q4_1, DType::Q5_1, DType::Q8_0,
                        DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::MXFP4};

// The 32-element formats, whose rows of a few blocks are short: they get more blocks.
bool is_32_element(DType t) { return dtype_size(t).block_size == 32; }

using KernelTable = const cpu::PackedKernel* (*)(DType);

struct Level {
  const char* name;
  KernelTable avx512;
};

// The builds of the kernels this CPU can run.
std::vector<Level> levels() {
  std::vector<Level> out;
#if defined(EMBER_AVX512_EMULATION)
  if (cpu_features().avx2) out.push_back({"avx512 emulated (SIMDe)", cpu::avx512_emulated::packed_kernel});
#endif
  if (cpu_features().avx512_vnni) out.push_back({"avx512 native", cpu::avx512::packed_kernel});
  if (cpu_features().amx_int8) out.push_back({"amx", cpu::amx::packed_kernel});
  return out;
}

TEST_CASE("the AVX-512 kernel builds that run here") {
#if defined(EMBER_AVX512_EMULATION)
  MESSAGE((std::string("emulated AVX-512 kernels (SIMDe): ") +
          (cpu_features().avx2 ? "tested" : "skipped (this CPU lacks AVX2)")));
#else
  MESSAGE("emulated AVX-512 kernels: not built (SIMDe headers not found, install libsimde-dev)");
#endif
  MESSAGE((std::string("native AVX-512 VNNI kernels: ") +
          (cpu_features().avx512_vnni ? "tested" : "skipped (this CPU lacks AVX-512 VNNI)")));
  MESSAGE((std::string("AMX int8 kernels: ") +
          (cpu_features().amx_int8 ? "tested" : "skipped (this CPU or OS offers no AMX int8)")));
  // The types without a kernel keep the AVX2 one; those with one read its groups.
  for (const Level& level : levels()) {
    CHECK(level.avx512(DType::F32) == nullptr);
    CHECK(level.avx512(DType::Q2_K) == nullptr);
    CHECK(level.avx512(DType::F16) == nullptr);
  }
}

// Runs `tile` over each of the row ranges [row_cuts[i], row_cuts[i+1]) x token ranges, into y.
void run_tiles(cpu::TileFn tile, int64_t k, const uint8_t* w, size_t w_stride, const uint8_t* a, size_t a_stride,
               check::StridedF32& y, const std::vector<int64_t>& row_cuts, const std::vector<int64_t>& token_cuts) {
  cpu::MatmulArgs args;
  args.k = k;
  args.w = w;
  args.w_stride = w_stride;
  args.a = a;
  args.a_stride = a_stride;
  args.y = y.row(0);
  args.y_stride = y.stride();
  for (size_t i = 0; i + 1 < row_cuts.size(); ++i)
    for (size_t j = 0; j + 1 < token_cuts.size(); ++j) tile(args, row_cuts[i], row_cuts[i + 1], token_cuts[j], token_cuts[j + 1]);
}

// Row-layout weights, the packed copy the AVX2 kernel makes of them, and activations
// quantized to the kernels' format.
struct Problem {
  DType type;
  int64_t rows, k, tokens;
  std::vector<uint8_t> w;  // rows in their block format
  std::vector<float> x;    // tokens x k
  const cpu::PackedKernel* avx2;
  size_t group_bytes = 0;
  check::GuardedBuffer packed{0};
  std::vector<uint8_t> act;
  size_t act_stride = 0;

  Problem(DType t, int64_t rows_, int64_t k_, std::vector<uint8_t> weights, std::vector<float> acts)
      : type(t), rows(rows_), k(k_), tokens(static_cast<int64_t>(acts.size()) / k_), w(std::move(weights)),
        x(std::move(acts)), avx2(cpu::packed_kernel_avx2(t)) {
    REQUIRE(avx2 != nullptr);
    const size_t row_bytes = dtype_row_bytes(t, k);
    group_bytes = avx2->group_bytes(k);
    const int64_t groups = (rows + avx2->group_rows - 1) / avx2->group_rows;
    packed = check::GuardedBuffer(group_bytes * static_cast<size_t>(groups));
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t r0 = g * avx2->group_rows;
      const int n = static_cast<int>(std::min<int64_t>(avx2->group_rows, rows - r0));
      avx2->pack_group(w.data() + r0 * row_bytes, row_bytes, n, k, packed.data() + g * group_bytes);
    }
    act_stride = cpu::act_row_bytes(avx2->act, k);
    act.resize(act_stride * static_cast<size_t>(tokens));
    for (int64_t t = 0; t < tokens; ++t) cpu::quantize_act_row(avx2->act, x.data() + t * k, act.data() + t * act_stride, k);
  }

  MatView weights() const { return MatView{type, k, rows, dtype_row_bytes(type, k), w.data()}; }

  std::vector<float> reference() const {
    std::vector<float> want(static_cast<size_t>(tokens * rows));
    ops::reference::matmul(weights(), check::dense_view(x, tokens, k), check::dense_mat(want, tokens, rows));
    return want;
  }

  void run(const cpu::PackedKernel& kernel, check::StridedF32& y, const std::vector<int64_t>& row_cuts,
           const std::vector<int64_t>& token_cuts) const {
    run_tiles(kernel.tile, k, packed.data(), group_bytes, act.data(), act_stride, y, row_cuts, token_cuts);
  }
};

int64_t differences(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  int64_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return n;
}

// All the checks of one problem with one build of the kernels.
void check_kernel(const Level& level, const Problem& pb, const std::string& what_) {
  const std::string what = what_ + ", " + level.name;
  INFO(what);
  const cpu::PackedKernel* kernel = level.avx512(pb.type);
  REQUIRE(kernel != nullptr);
  // The same groups as the AVX2 kernel: weights are packed once, whatever level reads them.
  const bool same_groups = kernel->group_rows == pb.avx2->group_rows && kernel->group_bytes == pb.avx2->group_bytes &&
                           kernel->pack_group == pb.avx2->pack_group && kernel->act == pb.avx2->act;
  CHECK(same_groups);

  const std::vector<int64_t> all_rows{0, pb.rows}, all_tokens{0, pb.tokens};
  check::StridedF32 batch(pb.tokens, pb.rows, 2);
  pb.run(*kernel, batch, all_rows, all_tokens);
  CHECK(batch.guards_intact());
  check::expect_close(batch.dense(), pb.reference(), 5e-4, what);

  // Bitwise as the AVX2 kernel: the same integer dots and f32 steps.
  check::StridedF32 avx2(pb.tokens, pb.rows, 2);
  pb.run(*pb.avx2, avx2, all_rows, all_tokens);
  CHECK(differences(batch.dense(), avx2.dense()) == 0);

  // Chunks that start at group 1 (pairs 1-2, 3-4, ...) and split tokens: a group's outputs
  // do not depend on the group it is paired with, nor a token's on its tile.
  std::vector<int64_t> row_cuts{0};
  if (pb.rows > 8) row_cuts.push_back(8);
  row_cuts.push_back(pb.rows);
  check::StridedF32 chunked(pb.tokens, pb.rows, 1);
  pb.run(*kernel, chunked, row_cuts, {0, pb.tokens / 2, pb.tokens});
  CHECK(chunked.guards_intact());
  CHECK(differences(chunked.dense(), batch.dense()) == 0);

  // Decode = batch: each token alone.
  check::StridedF32 single(pb.tokens, pb.rows, 3);
  for (int64_t t = 0; t < pb.tokens; ++t) pb.run(*kernel, single, all_rows, {t, t + 1});
  CHECK(single.guards_intact());
  CHECK(differences(single.dense(), batch.dense()) == 0);
}

// Checks every build that has a kernel for the problem's type.
void check_levels(const Problem& pb, const std::string& what) {
  for (const Level& level : levels())
    if (level.avx512(pb.type)) check_kernel(level, pb, what);
}

int64_t block_k(DType t, int64_t blocks) { return blocks * dtype_size(t).block_size; }

TEST_CASE("packed AVX-512 kernels match the reference and the AVX2 kernels on odd shapes") {
  uint64_t seed = 11;
  for (DType t : kTypes) {
    // rows: 37 = 4 full groups and a short fifth (a half-filled last pair), 29 = a pair whose
    // second group is short, 8 = one group alone. tokens: 1, 3, 4, 5, 13 (an 8-token tile,
    // a 4-token tile and one token, for Q4_0's 8/4/1 walk), 17 and 70 (a second token block
    // of 6, so whole and partial tiles in both).
    struct Shape {
      int64_t rows, blocks, tokens;
    };
    const int64_t b = is_32_element(t) ? 5 : 2;
    for (const Shape& s : {Shape{37, b, 1}, Shape{29, b, 3}, Shape{8, b, 4}, Shape{37, b, 5}, Shape{37, b, 13}, Shape{29, 1, 17},
                           Shape{37, b, 70}}) {
      check::Rng rng(seed++);
      const int64_t k = block_k(t, s.blocks);
      Problem pb(t, s.rows, k, check::quantized_normal_rows(t, s.rows, k, rng),
                 rng.uniform(static_cast<size_t>(s.tokens * k), -2.0f, 2.0f));
      const std::string what = std::string(dtype_name(t)) + " " + std::to_string(s.rows) + "x" + std::to_string(k) +
                               ", " + std::to_string(s.tokens) + " tokens";
      check_levels(pb, what);
    }
  }
}

TEST_CASE("packed AVX-512 kernels on extreme codes over long rows") {
  // As test_matmul's saturated case: every weight and activation at the edge of its range,
  // signs aligned so that all products add up (the int32 sums' worst case).
  const int64_t k = 4096, rows = 13, tokens = 5;
  std::vector<float> xs(static_cast<size_t>(tokens * k));
  for (int64_t i = 0; i < tokens * k; ++i) xs[i] = (i % 3 == 0 ? -100.0f : 100.0f);
  for (DType t : kTypes) {
    const size_t row_bytes = dtype_row_bytes(t, k);
    std::vector<uint8_t> w(row_bytes * rows);
    std::vector<float> src(static_cast<size_t>(k));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < k; ++i) src[i] = (i % 3 == 0 ? -1.0f : 1.0f) * static_cast<float>(r + 1);
      quantize_row_reference(t, src.data(), w.data() + r * row_bytes, k);
    }
    Problem pb(t, rows, k, std::move(w), xs);
    check_levels(pb, std::string(dtype_name(t)) + " saturated");
  }
}

// Blocks of random bytes (every code, scale and min pattern, Q8_0's -128 included) with
// finite fp16 factors, which quantizing real rows rarely reaches.
std::vector<uint8_t> random_blocks(DType t, int64_t rows, int64_t k, check::Rng& rng) {
  const size_t block_bytes = static_cast<size_t>(dtype_size(t).block_bytes);
  std::vector<uint8_t> w(dtype_row_bytes(t, k) * static_cast<size_t>(rows));
  for (uint8_t& byte : w) byte = static_cast<uint8_t>(rng.integer(0, 255));
  // dmin (the k-quants) or m (Q4_1, Q5_1) follows d
  const bool has_min = t == DType::Q4_K || t == DType::Q5_K || t == DType::Q4_1 || t == DType::Q5_1;
  const size_t d_at = t == DType::Q6_K ? offsetof(block_q6_K, d) : 0;
  for (size_t at = 0; at < w.size(); at += block_bytes) {
    if (t == DType::MXFP4) {  // exponents around 1 (2^-13 .. 2^13): every code, finite sums
      w[at] = static_cast<uint8_t>(rng.integer(114, 140));
      continue;
    }
    const uint16_t d = f32_to_fp16(rng.uniform(-0.02f, 0.02f)), dmin = f32_to_fp16(rng.uniform(-0.02f, 0.02f));
    std::memcpy(&w[at + d_at], &d, 2);
    if (has_min) std::memcpy(&w[at + 2], &dmin, 2);
  }
  return w;
}

TEST_CASE("packed AVX-512 kernels on random bit patterns") {
  uint64_t seed = 500;
  for (DType t : kTypes) {
    check::Rng rng(seed++);
    const int64_t rows = 21, tokens = 6, k = block_k(t, is_32_element(t) ? 9 : 3);
    Problem pb(t, rows, k, random_blocks(t, rows, k, rng), rng.uniform(static_cast<size_t>(tokens * k), -3.0f, 3.0f));
    check_levels(pb, std::string(dtype_name(t)) + " random blocks");
  }
}

TEST_CASE("packed kernels with 16-token tiles (AMX) on odd shapes, extreme and random codes") {
  // The AMX kernels take whole tiles of 16 tokens and leave the rest to the AVX-512 kernel:
  // 16 (one tile), 33 (two and one left), 70 (four tiles, then 6 left)
  // and 80 (five whole tiles, none left), 150 (a second token block of the AMX
  // walk's 128, with one tile and 6 left). Rows as above; K of one and of several
  // (super-)blocks. The checks compare every build (the AVX-512 ones too) with the reference
  // and bitwise with the AVX2 kernel, on the chunked runs and token by token as well.
  if (!cpu_features().amx_int8) MESSAGE("AMX int8 kernels skipped: this CPU or OS offers no AMX int8");
  uint64_t seed = 700;
  for (DType t : {DType::Q4_0, DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    for (int64_t blocks : {1, 3, 7})
      for (int64_t rows : {37, 29, 8})
        for (int64_t tokens : {16, 33, 70, 80, 150}) {
          check::Rng rng(seed++);
          const int64_t k = block_k(t, blocks);
          Problem pb(t, rows, k, check::quantized_normal_rows(t, rows, k, rng),
                     rng.uniform(static_cast<size_t>(tokens * k), -2.0f, 2.0f));
          check_levels(pb, std::string(dtype_name(t)) + " " + std::to_string(rows) + "x" + std::to_string(k) + ", " +
                               std::to_string(tokens) + " tokens");
        }
    check::Rng rng(seed++);
    const int64_t rows = 21, tokens = 35, k = block_k(t, 5);
    Problem random(t, rows, k, random_blocks(t, rows, k, rng), rng.uniform(static_cast<size_t>(tokens * k), -3.0f, 3.0f));
    check_levels(random, std::string(dtype_name(t)) + " random blocks, 35 tokens");
    // Saturated: the largest codes and scales, activations at +-127 with signs aligned.
    const int64_t sk = 4096, srows = 19, stokens = 32;
    std::vector<float> xs(static_cast<size_t>(stokens * sk));
    for (int64_t i = 0; i < stokens * sk; ++i) xs[i] = (i % 3 == 0 ? -100.0f : 100.0f);
    const size_t row_bytes = dtype_row_bytes(t, sk);
    std::vector<uint8_t> w(row_bytes * srows);
    std::vector<float> src(static_cast<size_t>(sk));
    for (int64_t r = 0; r < srows; ++r) {
      for (int64_t i = 0; i < sk; ++i) src[i] = (i % 3 == 0 ? -1.0f : 1.0f) * static_cast<float>(r + 1);
      quantize_row_reference(t, src.data(), w.data() + r * row_bytes, sk);
    }
    check_levels(Problem(t, srows, sk, std::move(w), xs), std::string(dtype_name(t)) + " saturated, 32 tokens");
  }
}


// ---------------------------------------------------------------- BF16 weights, rows layout
// The AVX-512 BF16 kernel (matmul_bf16_avx512.h) rounds each f32 activation to bf16 (nearest
// even, as vcvtne2ps2bf16) and sums the exact products with dpbf16. Against the f32 reference
// the rounding costs an nMSE around 1e-6 (at most 2^-9 relative per activation), checked
// within 5e-4 like the 8-bit activation formats; against the reference on the activations
// rounded the same way only the f32 summation order differs, checked within 1e-12
// (measured here: 1.2e-6 to 4.3e-6 against f32, below 1e-14 against the rounded activations).

struct Bf16Level {
  const char* name;
  const cpu::MatmulKernel* kernel;
};

std::vector<Bf16Level> bf16_levels() {
  std::vector<Bf16Level> out;
#if defined(EMBER_AVX512_EMULATION)
  if (cpu_features().avx2) out.push_back({"avx512-bf16 emulated (SIMDe)", cpu::avx512_emulated::matmul_kernel_bf16()});
#endif
  if (cpu_features().avx512_bf16) out.push_back({"avx512-bf16 native", cpu::avx512::matmul_kernel_bf16()});
  return out;
}

TEST_CASE("the AVX-512 BF16 kernel builds that run here") {
  MESSAGE((std::string("native AVX-512 BF16 kernel: ") +
          (cpu_features().avx512_bf16 ? "tested" : "skipped (this CPU lacks AVX-512 BF16)")));
  for (const Bf16Level& level : bf16_levels()) CHECK(level.kernel->act == cpu::ActFormat::F32);
}

// BF16 weight rows (packed: odd k leaves them 2-byte aligned only) and f32 activations, as
// the driver hands them to a rows-layout kernel.
struct Bf16Problem {
  int64_t rows, k, tokens;
  std::vector<uint8_t> w;
  std::vector<float> x;  // tokens x k

  size_t row_bytes() const { return dtype_row_bytes(DType::BF16, k); }
  MatView weights() const { return MatView{DType::BF16, k, rows, row_bytes(), w.data()}; }

  // The reference on the activations as given, or rounded to bf16 as the kernel rounds them
  // (f32_to_bf16 is the instruction's rounding for the normal values used here).
  std::vector<float> reference(bool round_activations) const {
    std::vector<float> xs = x;
    if (round_activations)
      for (float& v : xs) v = bf16_to_f32(f32_to_bf16(v));
    std::vector<float> want(static_cast<size_t>(tokens * rows));
    ops::reference::matmul(weights(), check::dense_view(xs, tokens, k), check::dense_mat(want, tokens, rows));
    return want;
  }

  void run(const cpu::MatmulKernel& kernel, check::StridedF32& y, const std::vector<int64_t>& row_cuts,
           const std::vector<int64_t>& token_cuts) const {
    run_tiles(kernel.tile, k, w.data(), row_bytes(), reinterpret_cast<const uint8_t*>(x.data()),
              static_cast<size_t>(k) * sizeof(float), y, row_cuts, token_cuts);
  }
};

void check_bf16_kernel(const Bf16Level& level, const Bf16Problem& pb, const std::string& what_) {
  const std::string what = what_ + ", " + level.name;
  INFO(what);
  const std::vector<int64_t> all_rows{0, pb.rows}, all_tokens{0, pb.tokens};
  check::StridedF32 batch(pb.tokens, pb.rows, 2);
  pb.run(*level.kernel, batch, all_rows, all_tokens);
  CHECK(batch.guards_intact());
  check::expect_close(batch.dense(), pb.reference(false), 5e-4, what + " vs f32 activations");
  check::expect_close(batch.dense(), pb.reference(true), 1e-12, what + " vs bf16-rounded activations");

  // Row ranges that split the 4-row tiles and tokens split in two: no output depends on its tile.
  check::StridedF32 chunked(pb.tokens, pb.rows, 1);
  pb.run(*level.kernel, chunked, {0, pb.rows / 2 + 1, pb.rows}, {0, pb.tokens / 2, pb.tokens});
  CHECK(chunked.guards_intact());
  CHECK(differences(chunked.dense(), batch.dense()) == 0);

  // Decode = batch: each token alone.
  check::StridedF32 single(pb.tokens, pb.rows, 3);
  for (int64_t t = 0; t < pb.tokens; ++t) pb.run(*level.kernel, single, all_rows, {t, t + 1});
  CHECK(single.guards_intact());
  CHECK(differences(single.dense(), batch.dense()) == 0);
}

TEST_CASE("AVX-512 BF16 kernel matches the reference on odd shapes") {
  // k: 37 = one chunk and a tail, 64 = whole chunks only, 300 = 9 chunks and a tail of 12.
  // rows: 5, 13, 29 (whole and partial 4-row tiles); tokens: 1 (decode), 3 (below a tile),
  // 17, and a second token block of 2 (66: below a tile) or 6 (70: a tile and a partial one).
  uint64_t seed = 900;
  for (int64_t rows : {5, 13, 29})
    for (int64_t k : {37, 64, 300})
      for (int64_t tokens : {1, 3, 17, 66, 70}) {
        check::Rng rng(seed++);
        Bf16Problem pb{rows, k, tokens, check::quantized_normal_rows(DType::BF16, rows, k, rng),
                       rng.uniform(static_cast<size_t>(tokens * k), -2.0f, 2.0f)};
        const std::string what =
            "BF16 " + std::to_string(rows) + "x" + std::to_string(k) + ", " + std::to_string(tokens) + " tokens";
        for (const Bf16Level& level : bf16_levels()) check_bf16_kernel(level, pb, what);
      }
}

TEST_CASE("AVX-512 BF16 kernel rounds activations as vcvtne2ps2bf16") {
  // Token t holds one value at one place (in the whole chunk or in the tail), zeros elsewhere;
  // weight row r is all (r + 1), so y[t][r] = (r + 1) * bf16(value) exactly. The bf16 results
  // follow the SDM's convert_fp32_to_bfloat16: ties to even, denormals to zero, NaN quieted.
  struct Case {
    uint32_t in;
    uint16_t out;
  };
  const Case cases[] = {
      {0x3F808000u, 0x3F80u},  // 1 + 2^-8: a tie, rounds down to the even 1.0
      {0x3F818000u, 0x3F82u},  // a tie whose lower neighbour is odd: rounds up
      {0x3F808001u, 0x3F81u},  // just above the tie
      {0xBF80FFFFu, 0xBF81u},  // negative, rounds away from zero
      {0x00400000u, 0x0000u},  // denormal: zero (bf16 could hold 0x0040)
      {0x7F7FFFFFu, 0x7F80u},  // the largest float rounds to infinity
      {0xFF800000u, 0xFF80u},  // -infinity stays
      {0x7F800001u, 0x7FC0u},  // signalling NaN: quiet NaN
  };
  const int64_t k = 40, rows = 3, tokens = static_cast<int64_t>(std::size(cases));
  Bf16Problem pb{rows, k, tokens, std::vector<uint8_t>(dtype_row_bytes(DType::BF16, k) * rows),
                 std::vector<float>(static_cast<size_t>(tokens * k), 0.0f)};
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t h = f32_to_bf16(static_cast<float>(r + 1));
    for (int64_t i = 0; i < k; ++i) std::memcpy(&pb.w[(r * k + i) * 2], &h, 2);
  }
  for (int64_t t = 0; t < tokens; ++t) std::memcpy(&pb.x[t * k + (t * 7) % k], &cases[t].in, 4);
  for (const Bf16Level& level : bf16_levels()) {
    INFO(level.name);
    check::StridedF32 y(tokens, rows, 1);
    pb.run(*level.kernel, y, {0, rows}, {0, tokens});
    CHECK(y.guards_intact());
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t r = 0; r < rows; ++r) {
        INFO("input 0x" << std::hex << cases[t].in << std::dec << ", row " << r);
        const float want = static_cast<float>(r + 1) * bf16_to_f32(cases[t].out);
        const float got = y.row(t)[r];
        if (std::isnan(want))
          CHECK(std::isnan(got));
        else
          CHECK(got == want);
      }
  }
}

}  // namespace
