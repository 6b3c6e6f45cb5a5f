// The CUDA row kernels run on the CPU through cuda/cpu_exec: dequant.cuh's load_element and
// dequant_block32, launch_get_rows and launch_store_rows. The contract is bit-exactness with
// the CPU (dequantize_row, ops::store_row), so outputs are compared bitwise, fenced by
// sentinels, on odd shapes, padded strides and scattered rows, in round-robin and shuffled
// thread orders.
#include <doctest/doctest.h>

#include <cstddef>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "backend/kv_types.h"
#include "backend/ops.h"
#include "backend_check.h"
#include "cuda/cpu_exec/launch.h"
#include "cuda/kernels/dequant.cuh"
#include "cuda/kernels/get_rows.cuh"
#include "cuda/kernels/store_rows.cuh"
#include "tensor/quant.h"

namespace {

using ember::DType;
using ember::cpu_exec::launch;
using ember::cpu_exec::Order;
using ember::cpu_exec::ScopedSchedule;
namespace check = ember::check;

const DType kReadTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0, DType::Q4_1,
                            DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K,
                            DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::MXFP4};

const Order kOrders[] = {Order::RoundRobin, Order::Shuffled};

int block_size(DType t) { return ember::dtype_size(t).block_size; }
size_t row_bytes(DType t, int64_t n) { return ember::dtype_row_bytes(t, n); }

// "" when a and b hold the same bits, else where they first differ.
std::string first_difference(const void* a, const void* b, size_t bytes) {
  const auto* pa = static_cast<const uint8_t*>(a);
  const auto* pb = static_cast<const uint8_t*>(b);
  for (size_t i = 0; i < bytes; ++i)
    if (pa[i] != pb[i]) return fmt::format("byte {}: got {:#04x}, want {:#04x}", i, pa[i], pb[i]);
  return "";
}
std::string first_difference(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0)
      return fmt::format("element {}: got {} want {}", i, got[i], want[i]);
  return "";
}

// The fp16 fields of each block type (scales and mins), by offset.
std::vector<size_t> half_field_offsets(DType t) {
  switch (t) {
    case DType::Q4_0: return {offsetof(ember::block_q4_0, d)};
    case DType::Q4_1: return {offsetof(ember::block_q4_1, d), offsetof(ember::block_q4_1, m)};
    case DType::Q5_0: return {offsetof(ember::block_q5_0, d)};
    case DType::Q5_1: return {offsetof(ember::block_q5_1, d), offsetof(ember::block_q5_1, m)};
    case DType::Q8_0: return {offsetof(ember::block_q8_0, d)};
    case DType::Q2_K: return {offsetof(ember::block_q2_K, d), offsetof(ember::block_q2_K, dmin)};
    case DType::Q3_K: return {offsetof(ember::block_q3_K, d)};
    case DType::Q4_K: return {offsetof(ember::block_q4_K, d), offsetof(ember::block_q4_K, dmin)};
    case DType::Q5_K: return {offsetof(ember::block_q5_K, d), offsetof(ember::block_q5_K, dmin)};
    case DType::Q6_K: return {offsetof(ember::block_q6_K, d)};
    case DType::F16: case DType::BF16: return {0};  // every element, as one-element blocks
    default: return {};
  }
}

// A row of n elements of random bytes (every code, scale and bit pattern), with the fp16
// fields made finite: NaN and Inf would only test the host's NaN propagation.
std::vector<uint8_t> random_row_bytes(DType t, int64_t n, check::Rng& rng) {
  std::vector<uint8_t> row(row_bytes(t, n));
  if (t == DType::F32) {
    const auto v = rng.normal(static_cast<size_t>(n), 0.0f, 3.0f);
    std::memcpy(row.data(), v.data(), row.size());
    return row;
  }
  for (uint8_t& b : row) b = static_cast<uint8_t>(rng.integer(0, 255));
  const size_t bytes = static_cast<size_t>(ember::dtype_size(t).block_bytes);
  const uint16_t exp_mask = t == DType::BF16 ? 0x7f80 : 0x7c00;
  for (size_t block = 0; block < row.size() / bytes; ++block)
    for (size_t off : half_field_offsets(t)) {
      uint16_t h;
      std::memcpy(&h, row.data() + block * bytes + off, 2);
      if ((h & exp_mask) == exp_mask) h = static_cast<uint16_t>(h & ~0x4000);  // drop the exponent's top bit
      std::memcpy(row.data() + block * bytes + off, &h, 2);
    }
  return row;
}

std::vector<float> dequantized(DType t, const void* row, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  ember::dequantize_row(t, row, out.data(), n);
  return out;
}

__global__ void load_element_kernel(DType type, const void* row, int64_t n, float* out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = ember::cuda::load_element(type, row, i);
}

__global__ void dequant_block32_kernel(DType type, const void* row, int64_t n_sub, float* out) {
  const int64_t sub = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (sub >= n_sub) return;
  float v[32];
  ember::cuda::dequant_block32(type, row, sub, v);
  for (int l = 0; l < 32; ++l) out[32 * sub + l] = v[l];
}

// A quantized table of `rows` rows of `cols` from random data of varied magnitude, each row
// `pad` bytes longer than its data (the padding is garbage a kernel must not read as data).
struct Table {
  DType type;
  int64_t rows, cols;
  size_t stride;
  std::vector<uint8_t> bytes;
  ember::MatView view() const {
    return ember::MatView{type, cols, rows, stride, bytes.data(), ember::WeightLayout::Rows};
  }
};

Table make_table(DType t, int64_t rows, int64_t cols, check::Rng& rng) {
  const size_t pad = 8;
  Table tab{t, rows, cols, row_bytes(t, cols) + pad, {}};
  tab.bytes.assign(tab.stride * static_cast<size_t>(rows), 0xEE);
  for (int64_t r = 0; r < rows; ++r) {
    const float scale = r % 3 == 0 ? 0.01f : r % 3 == 1 ? 1.0f : 300.0f;
    const auto x = rng.normal(static_cast<size_t>(cols), 0.1f * scale, scale);
    ember::quantize_row_reference(t, x.data(), tab.bytes.data() + r * tab.stride, cols);
  }
  return tab;
}

// Row widths: for the element types odd ones; for the block types one block and an odd
// count of blocks (more than one 256-thread chunk).
std::vector<int64_t> widths(DType t) {
  if (block_size(t) == 1) return {37, 1031};
  if (block_size(t) == 32) return {32, 1056};
  return {256, 1280};
}

void expect_invalid_argument(const std::function<void()>& f, const std::string& what) {
  INFO(what);
  try {
    f();
    FAIL("no error");
  } catch (const ember::Error& e) {
    CHECK(e.kind() == ember::ErrorKind::InvalidArgument);
  }
}

// ---- store_rows inputs: blocks of 32 values drawn from cases where a careless quantizer
// or fp16 conversion gives other bytes than the reference.
std::vector<float> tricky_block(int pattern, check::Rng& rng) {
  std::vector<float> b(32);
  switch (pattern % 8) {
    case 0:  // plain random
      for (float& v : b) v = rng.normal(0.0f, 2.0f);
      break;
    case 1:  // all zeros, the first -0 (the reference's q4_0 scale is then -0, from +0 / -8)
      b[0] = -0.0f;
      break;
    case 2:  // q8_0 with d = 1: halves round away from zero
      b[0] = 127.0f;
      for (int j = 1; j < 32; ++j) b[j] = static_cast<float>(rng.integer(-126, 125)) + 0.5f;
      break;
    case 3:  // q4_0 with d = 1 (first of largest magnitude is -8): x + 8.5 lands on integers
      b[3] = 8.0f;  // same magnitude, later: must lose to b[1]
      b[1] = -8.0f;
      for (int j : {0, 2, 4, 5, 6, 8, 9, 20, 31}) b[j] = static_cast<float>(rng.integer(-8, 7)) + 0.5f;
      break;
    case 4:  // equal magnitudes, positive first
      for (float& v : b) v = rng.uniform(-5.0f, 5.0f);
      b[2] = 6.0f;
      b[17] = -6.0f;
      break;
    case 5:  // large: fp16 overflow and the values around 65504
      for (float& v : b) v = rng.uniform(-70000.0f, 70000.0f);
      b[0] = 65519.0f;
      b[1] = 65520.0f;
      b[2] = -65504.0f;
      b[3] = 1e30f;
      break;
    case 6:  // fp16 ties and subnormals
      for (int j = 0; j < 32; ++j) {
        const float ulp_tie = std::ldexp(1.0f, -11 - j % 4);  // exact halfway points near 1, 0.5, ...
        b[j] = (j % 2 ? -1.0f : 1.0f) * (std::ldexp(1.0f, -(j % 4)) + ulp_tie * (1 + 2 * (j % 3)));
      }
      b[20] = std::ldexp(1.0f, -25);      // halfway between 0 and the smallest subnormal
      b[21] = 3 * std::ldexp(1.0f, -25);  // halfway between two subnormals
      b[22] = 1e-8f;
      b[23] = -std::ldexp(1.0f, -15);
      break;
    default:  // tiny block: d is an fp16 subnormal
      for (float& v : b) v = rng.uniform(-1e-5f, 1e-5f);
      break;
  }
  return b;
}

std::vector<float> tricky_rows(int64_t rows, int64_t cols, check::Rng& rng) {
  std::vector<float> x;
  int pattern = 0;
  while (x.size() < static_cast<size_t>(rows * cols)) {
    const auto b = tricky_block(pattern++, rng);
    x.insert(x.end(), b.begin(), b.end());
  }
  x.resize(static_cast<size_t>(rows * cols));
  return x;
}

}  // namespace

TEST_CASE("cuda dequant.cuh: load_element and dequant_block32 equal dequantize_row bit for bit") {
  check::Rng rng(7);
  const int64_t n = 768;  // whole blocks of every type
  for (DType t : kReadTypes) {
    const auto row = random_row_bytes(t, n, rng);
    const auto want = dequantized(t, row.data(), n);
    std::vector<float> by_element(static_cast<size_t>(n)), by_block(static_cast<size_t>(n));
    launch(static_cast<unsigned>(n / 128), 128, 0, load_element_kernel, t, static_cast<const void*>(row.data()), n,
           by_element.data());
    launch(1, static_cast<unsigned>(n / 32), 0, dequant_block32_kernel, t, static_cast<const void*>(row.data()), n / 32,
           by_block.data());
    INFO(ember::dtype_name(t));
    CHECK(first_difference(by_element, want) == "");
    CHECK(first_difference(by_block, want) == "");
  }
}

TEST_CASE("cuda get_rows: every table type, bit for bit dequantize_row, strided table and output") {
  check::Rng rng(11);
  const std::vector<int32_t> ids = {4, 0, 3, 3, 1, 5, 2};  // repeats, out of order
  const int64_t n = static_cast<int64_t>(ids.size());
  for (DType t : kReadTypes)
    for (int64_t cols : widths(t)) {
      const Table tab = make_table(t, 6, cols, rng);
      std::vector<float> want;
      for (int32_t id : ids) {
        const auto r = dequantized(t, tab.bytes.data() + id * tab.stride, cols);
        want.insert(want.end(), r.begin(), r.end());
      }
      for (Order order : kOrders) {
        ScopedSchedule schedule({order, static_cast<uint64_t>(cols)});
        check::StridedF32 out(n, cols, /*pad=*/3);
        ember::cuda::launch_get_rows(tab.view(), ids.data(), n, out.mat(), nullptr);
        INFO(ember::dtype_name(t), " cols ", cols, " order ", static_cast<int>(order));
        CHECK(out.guards_intact());
        CHECK(first_difference(out.dense(), want) == "");
      }
    }
}

TEST_CASE("cuda get_rows: an id outside the table gives a NaN row, the others are unaffected") {
  check::Rng rng(12);
  const Table tab = make_table(DType::Q4_0, 3, 64, rng);
  const std::vector<int32_t> ids = {2, -1, 3, 0};
  check::StridedF32 out(4, 64, 1);
  ember::cuda::launch_get_rows(tab.view(), ids.data(), 4, out.mat(), nullptr);
  CHECK(out.guards_intact());
  for (int64_t c = 0; c < 64; ++c) {
    CHECK(std::isnan(out.row(1)[c]));
    CHECK(std::isnan(out.row(2)[c]));
  }
  const auto want0 = dequantized(DType::Q4_0, tab.bytes.data() + 2 * tab.stride, 64);
  const auto want3 = dequantized(DType::Q4_0, tab.bytes.data(), 64);
  CHECK(std::memcmp(out.row(0), want0.data(), 64 * sizeof(float)) == 0);
  CHECK(std::memcmp(out.row(3), want3.data(), 64 * sizeof(float)) == 0);
}

TEST_CASE("cuda store_rows: the bytes of ops::store_row at scattered rows, nothing else touched") {
  check::Rng rng(13);
  const std::vector<int32_t> rows = {9, 0, 4, 10, 2};  // non-monotone, gaps left untouched
  const int64_t n_src = static_cast<int64_t>(rows.size()), n_dst = 11;
  for (const ember::KVType& kv : ember::kKVTypes)  // every row of the KV type table
    for (int64_t cols : widths(kv.type)) {
      const DType t = kv.type;
      const auto x = tricky_rows(n_src, cols, rng);
      check::StridedF32 src(x, n_src, cols, /*pad=*/3);
      const size_t dst_row_bytes = row_bytes(t, cols) + 8;
      const size_t total = dst_row_bytes * static_cast<size_t>(n_dst);
      std::vector<uint8_t> want(total, 0x5A);
      for (int64_t r = 0; r < n_src; ++r)
        ember::ops::store_row(x.data() + r * cols, cols, t, want.data() + rows[r] * dst_row_bytes);
      for (Order order : kOrders) {
        ScopedSchedule schedule({order, static_cast<uint64_t>(cols) + 1});
        check::GuardedBuffer dst(total, 0x5A);
        ember::cuda::launch_store_rows(src.view(), t, dst.data(), dst_row_bytes, rows.data(), nullptr);
        INFO(ember::dtype_name(t), " cols ", cols, " order ", static_cast<int>(order));
        CHECK(dst.guards_intact());
        CHECK(first_difference(dst.data(), want.data(), total) == "");
      }
    }
}

TEST_CASE("cuda store_rows: a negative destination row is skipped") {
  check::Rng rng(14);
  const auto x = rng.normal(size_t{2 * 64});
  const std::vector<int32_t> rows = {-1, 1};
  const size_t dst_row_bytes = row_bytes(DType::Q8_0, 64);
  std::vector<uint8_t> want(2 * dst_row_bytes, 0x5A);
  ember::ops::store_row(x.data() + 64, 64, DType::Q8_0, want.data() + dst_row_bytes);
  check::GuardedBuffer dst(want.size(), 0x5A);
  ember::cuda::launch_store_rows(check::dense_view(x, 2, 64), DType::Q8_0, dst.data(), dst_row_bytes, rows.data(),
                                 nullptr);
  CHECK(dst.guards_intact());
  CHECK(first_difference(dst.data(), want.data(), want.size()) == "");
}

TEST_CASE("cuda get_rows and store_rows reject bad types and shapes") {
  check::Rng rng(15);
  const Table tab = make_table(DType::Q4_0, 2, 64, rng);
  const int32_t ids[] = {0, 1};
  check::StridedF32 out(2, 64);
  auto get = [&](ember::MatView v, ember::F32Mat o) {
    return [=] { ember::cuda::launch_get_rows(v, ids, 2, o, nullptr); };
  };
  ember::MatView v = tab.view();
  v.type = DType::Q8_K;
  expect_invalid_argument(get(v, out.mat()), "get_rows Q8_K table");
  v.type = DType::I32;
  expect_invalid_argument(get(v, out.mat()), "get_rows I32 table");
  v = tab.view();
  v.layout = ember::WeightLayout::Interleaved;
  expect_invalid_argument(get(v, out.mat()), "get_rows interleaved table");
  v = tab.view();
  v.cols = 48;
  expect_invalid_argument(get(v, out.mat()), "get_rows partial block");
  v = tab.view();
  v.row_stride = row_bytes(DType::Q4_0, 64) - 2;
  expect_invalid_argument(get(v, out.mat()), "get_rows short stride");
  check::StridedF32 narrow(2, 32);
  expect_invalid_argument(get(tab.view(), narrow.mat()), "get_rows output width");
  check::StridedF32 short_out(1, 64);
  expect_invalid_argument(get(tab.view(), short_out.mat()), "get_rows output rows");

  const auto x = rng.normal(size_t{2 * 64});
  const int32_t rows[] = {0, 1};
  check::GuardedBuffer dst(2 * 64 * 4);
  auto store = [&](ember::MatView src, DType t, size_t dst_row_bytes) {
    return [=, &dst] { ember::cuda::launch_store_rows(src, t, dst.data(), dst_row_bytes, rows, nullptr); };
  };
  const ember::MatView src = check::dense_view(x, 2, 64);
  for (DType t : {DType::BF16, DType::Q4_1, DType::Q8_1, DType::Q4_K, DType::I32})
    expect_invalid_argument(store(src, t, 256), fmt::format("store_rows {}", ember::dtype_name(t)));
  ember::MatView f16_src = src;
  f16_src.type = DType::F16;
  expect_invalid_argument(store(f16_src, DType::F16, 256), "store_rows f16 source");
  expect_invalid_argument(store(check::dense_view(x, 2, 48), DType::Q8_0, 256), "store_rows partial block");
  expect_invalid_argument(store(src, DType::Q8_0, row_bytes(DType::Q8_0, 64) - 1), "store_rows short destination");
  expect_invalid_argument(store(src, DType::F32, 258), "store_rows misaligned f32 destination");
}
