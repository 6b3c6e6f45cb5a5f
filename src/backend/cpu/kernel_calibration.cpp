#include "backend/cpu/kernel_calibration.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "backend/cpu/matmul_kernels.h"
#include "backend/ops.h"
#include "util/stream_buffer.h"
#include "util/thread_pool.h"

namespace ember::cpu {

namespace {

size_t weight_bytes(const MatView& w) { return dtype_row_bytes(w.type, w.cols) * static_cast<size_t>(w.rows); }

// Activations and outputs big enough for any matrix of the type at the largest row count.
struct Workspace {
  int64_t max_cols = 0, max_rows = 0, max_tokens = 0;
  std::vector<float> x, y;

  Workspace(const std::vector<MatView>& mats, int64_t tokens) : max_tokens(tokens) {
    for (const MatView& w : mats) {
      max_cols = std::max(max_cols, w.cols);
      max_rows = std::max(max_rows, w.rows);
    }
    x.resize(static_cast<size_t>(max_cols * tokens));
    y.resize(static_cast<size_t>(max_rows * tokens));
    uint32_t s = 12345;  // activations of both signs and many magnitudes, as a model's are
    for (float& v : x) {
      s = s * 1664525u + 1013904223u;
      v = static_cast<float>(static_cast<int32_t>(s)) * (1.0f / 2147483648.0f);
    }
  }

  void matmul(ThreadPool& pool, const MatView& w, int64_t tokens) {
    const MatView xv{DType::F32, w.cols, tokens, static_cast<size_t>(max_cols) * sizeof(float), x.data()};
    ops::matmul(pool, w, xv, F32Mat{y.data(), w.rows, tokens, w.rows});
  }
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Rows per group of a packed type's layout (matmul_pack.cpp: row_stride bytes per group).
int64_t group_rows_of(DType type) {
  const PackedKernel* kernel = packed_kernel_avx2(type);
  return kernel ? kernel->group_rows : 1;
}

size_t packed_extent(const MatView& w) {
  const int64_t group_rows = group_rows_of(w.type);
  return w.row_stride * static_cast<size_t>((w.rows + group_rows - 1) / group_rows);
}

// One decode-like pass: matrices from `next` on (wrapping), one row each, until `bytes`
// are read or every matrix once. Returns GB/s; `next` moves on, so repeats read other data.
double decode_pass(ThreadPool& pool, Workspace& ws, const std::vector<MatView>& mats, size_t& next, size_t bytes) {
  size_t done = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < mats.size() && done < bytes; ++i) {
    const MatView& w = mats[next];
    next = (next + 1) % mats.size();
    ws.matmul(pool, w, 1);
    done += weight_bytes(w);
  }
  return static_cast<double>(done) / seconds_since(t0) / 1e9;
}

// `w` again and again, `tokens` rows each time, until `bytes` are read. Returns GB/s.
double batch_pass(ThreadPool& pool, Workspace& ws, const MatView& w, int64_t tokens, size_t bytes) {
  size_t done = 0;
  const auto t0 = std::chrono::steady_clock::now();
  do {
    ws.matmul(pool, w, tokens);
    done += weight_bytes(w);
  } while (done < bytes);
  return static_cast<double>(done) / seconds_since(t0) / 1e9;
}

// The first rows of the largest matrix, about `bytes` of them, in whole pairs of 16-row
// groups (an interleaved view may end at any group: the kernels read rows [0, rows)).
MatView largest_slice(const std::vector<MatView>& mats, size_t bytes) {
  MatView w = *std::max_element(mats.begin(), mats.end(),
                                [](const MatView& a, const MatView& b) { return weight_bytes(a) < weight_bytes(b); });
  const int64_t rows = static_cast<int64_t>(bytes / dtype_row_bytes(w.type, w.cols)) / 32 * 32;
  w.rows = std::clamp<int64_t>(rows, std::min<int64_t>(32, w.rows), w.rows);
  return w;
}

TypeSpeeds measure_type(ThreadPool& pool, DType type, const std::vector<MatView>& mats, const CalibrationPlan& plan) {
  const DecodeStream stream = decode_stream_copies(mats, plan.decode_stream_bytes, plan.decode_matrix_bytes);
  std::vector<MatView> all = mats;  // the workspace fits the tall matrices too
  all.insert(all.end(), stream.mats.begin(), stream.mats.end());
  Workspace ws(all, std::max(plan.batch_rows, plan.prefill_rows));
  const MatView largest = largest_slice(mats, plan.slice_bytes);
  TypeSpeeds s;
  s.type = type;
  // The variants that can run the type here (AMX only where the CPU has it and a kernel).
  std::vector<Variant> variants;
  for (int v = 0; v < kVariants; ++v)
    if (packed_kernel_for(static_cast<Variant>(v), type)) variants.push_back(static_cast<Variant>(v));
  for (Variant v : variants) {  // first calls: kernel tables, pool wake-up, AMX tile state
    set_kernel_choice(KernelChoiceTable::all(v));
    ws.matmul(pool, largest, plan.prefill_rows);
  }
  size_t next = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int rep = 0; rep < plan.repeats || (rep < plan.max_repeats && seconds_since(t0) < plan.budget_seconds); ++rep) {
    const size_t n = variants.size();
    for (size_t k = 0; k < n; ++k) {
      const Variant v = variants[(rep + k) % n];  // alternate which variant goes first
      const int vi = static_cast<int>(v);
      set_kernel_choice(KernelChoiceTable::all(v));
      const auto keep_best = [&](Regime r, double gbs) {
        double& best = s.regime[static_cast<int>(r)].gbs[vi];
        best = std::max(best, gbs);
      };
      // AMX only for prefill: below 16 rows it runs the AVX-512 kernel (its 0 there never
      // wins). AVX2's decode variants only for decode: from 4 rows on they are AVX2's kernel.
      if (v != Variant::Amx) keep_best(Regime::Decode, decode_pass(pool, ws, stream.mats, next, plan.decode_bytes));
      if (v == Variant::Avx2 || v == Variant::Avx512)
        keep_best(Regime::SmallBatch, batch_pass(pool, ws, largest, plan.batch_rows, plan.batch_pass_bytes));
      if (!is_avx2_decode_variant(v))
        keep_best(Regime::Prefill, batch_pass(pool, ws, largest, plan.prefill_rows, plan.prefill_pass_bytes));
    }
  }
  return s;
}

}  // namespace

DecodeStream decode_stream_copies(const std::vector<MatView>& mats, size_t min_bytes, size_t matrix_bytes) {
  size_t total = 0;
  for (const MatView& w : mats) total += packed_extent(w);
  if (mats.empty() || total >= min_bytes) return {mats, nullptr};
  const MatView& w = *std::max_element(mats.begin(), mats.end(), [](const MatView& a, const MatView& b) {
    return packed_extent(a) < packed_extent(b);
  });
  const size_t groups = packed_extent(w) / w.row_stride;
  const size_t tall_groups = std::max(groups, (matrix_bytes + w.row_stride - 1) / w.row_stride);
  const size_t tall_bytes = tall_groups * w.row_stride;
  const size_t copies = (min_bytes + tall_bytes - 1) / tall_bytes;
  DecodeStream out;
  out.storage = allocate_stream_buffer(copies * tall_bytes);
  if (!out.storage) return {mats, nullptr};  // then decode is timed on the originals, as before
  const auto* src = static_cast<const uint8_t*>(w.data);
  for (size_t g = 0; g < copies * tall_groups; ++g)  // each tall matrix: groups 0, 1, ..., 0, 1, ...
    std::memcpy(out.storage.get() + g * w.row_stride, src + (g % tall_groups % groups) * w.row_stride, w.row_stride);
  MatView tall = w;
  tall.rows = static_cast<int64_t>(tall_groups) * group_rows_of(w.type);
  for (size_t c = 0; c < copies; ++c) {
    tall.data = out.storage.get() + c * tall_bytes;
    out.mats.push_back(tall);
  }
  return out;
}

std::vector<TypeSpeeds> measure_variants(ThreadPool& pool, std::span<const MatView> packed, std::span<const DType> types,
                                         const CalibrationPlan& plan) {
  struct RestoreTable {  // also when a matmul throws
    KernelChoiceTable saved = kernel_choice();
    ~RestoreTable() { set_kernel_choice(saved); }
  } restore;
  std::vector<TypeSpeeds> out;
  for (DType type : types) {
    std::vector<MatView> mats;
    for (const MatView& w : packed)
      if (w.type == type && w.layout == WeightLayout::Interleaved && w.rows > 0) mats.push_back(w);
    if (!mats.empty()) out.push_back(measure_type(pool, type, mats, plan));
  }
  return out;
}

}  // namespace ember::cpu
