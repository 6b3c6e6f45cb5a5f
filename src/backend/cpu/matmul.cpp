// ops::matmul: validates, picks the kernel for the weight type at the current SIMD level,
// prepares the activations (8-bit quantization for the integer kernels) and splits the
// output over the thread pool.
#include <algorithm>
#include <cstring>
#include <cstdint>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kernel_choice.h"
#include "backend/cpu/matmul_bf16_avx512.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/matmul_packed_avx512.h"
#include "util/guided_chunks.h"
#include "util/thread_pool.h"
#include "backend/ops.h"
#include "tensor/quant.h"
#include "util/error.h"

namespace ember::ops {

namespace {

// What the driver needs from a kernel, whichever layout it reads.
struct KernelPlan {
  cpu::ActFormat act;
  cpu::TileFn tile;
  int64_t row_group;  // rows are split between threads in multiples of this
};

// `rows`: the activation rows the kernel will see, whose regime picks the packed variant.
KernelPlan pick_kernel(const MatView& w, int64_t rows) {
  if (w.layout == WeightLayout::Interleaved) {
    // Packed views come from pack_weight, which only packs for a level that has the kernel.
    // Chunks of whole pairs of groups leave no pair half empty but the matrix's last: the
    // AVX-512 VNNI and AMX kernels read the AVX2 kernels' groups (types without one keep
    // AVX2's) two at a time (16 rows per register or tile), and the AVX2 kernels' decode pairs
    // a chunk's groups (packed_tiles.h), where an odd one out would read alone, as one slower
    // stream. All give the same bits, so the variant follows the measured table
    // (kernel_choice.h), narrowed to what runs here: AMX, then AVX-512, then AVX2.
    const cpu::Regime regime = cpu::regime_of(rows);
    const cpu::Variant v = cpu::runnable_variant(cpu::chosen_variant(w.type, regime), w.type);
    const cpu::PackedKernel* k = cpu::packed_kernel_for(v, w.type);
    if (!k) fail(ErrorKind::Unsupported, "matmul: no kernel reads {} weights in the interleaved layout", dtype_name(w.type));
    cpu::count_variant_call(v, regime);
    return {k->act, k->tile, 2 * k->group_rows};
  }
  // Rows are split in groups of 12, a multiple of every micro-tile height.
  // The rows layout's only AVX-512 kernel is BF16's (dpbf16, activations rounded to bf16);
  // other types on an AVX-512 machine run the AVX2 ones.
  const cpu::MatmulKernel* k = nullptr;
  if (simd_level() >= SimdLevel::AVX512 && cpu_features().avx512_bf16 && w.type == DType::BF16)
    k = cpu::avx512::matmul_kernel_bf16();
  if (!k && simd_level() >= SimdLevel::AVX2) k = cpu::matmul_kernel_avx2(w.type);
  if (!k) k = cpu::matmul_kernel_scalar(w.type);
  if (!k) fail(ErrorKind::Unsupported, "matmul: no kernel for weight type {}", dtype_name(w.type));
  return {k->act, k->tile, 12};
}

void validate(const MatView& w, const MatView& x, const F32Mat& y) {
  if (!dtype_can_compute(w.type))
    fail(ErrorKind::Unsupported, "matmul: weight type {} is not supported on the CPU", dtype_name(w.type));
  if (x.type != DType::F32)
    fail(ErrorKind::InvalidArgument, "matmul: activations must be F32, got {}", dtype_name(x.type));
  const int bs = dtype_size(w.type).block_size;
  if (w.cols % bs != 0)
    fail(ErrorKind::InvalidArgument, "matmul: {} weight rows of {} elements are not whole blocks of {}",
         dtype_name(w.type), w.cols, bs);
  if (x.cols != w.cols || y.rows != x.rows || y.cols != w.rows)
    fail(ErrorKind::InvalidArgument, "matmul: x {}x{} times W^T ({}x{}) does not give y {}x{}", x.rows, x.cols,
         w.rows, w.cols, y.rows, y.cols);
  if ((w.layout == WeightLayout::Rows && w.row_stride < dtype_row_bytes(w.type, w.cols)) || x.row_stride < static_cast<size_t>(x.cols) * 4 ||
      y.stride < y.cols)
    fail(ErrorKind::InvalidArgument, "matmul: a row stride is smaller than its row");
  // Kernels read fp16 fields and floats in place: rows must keep their natural alignment
  // (GGUF tensor data is 32-byte aligned and rows are packed, so files always do).
  // MXFP4 has no fp16 field: its 17-byte blocks sit at any address.
  const size_t align = w.type == DType::F32 ? 4 : w.type == DType::MXFP4 ? 1 : 2;
  if (reinterpret_cast<uintptr_t>(w.data) % align != 0 || w.row_stride % align != 0 ||
      reinterpret_cast<uintptr_t>(x.data) % 4 != 0 || x.row_stride % 4 != 0)
    fail(ErrorKind::InvalidArgument, "matmul: {} weight rows must be {}-byte aligned and f32 activations 4-byte aligned",
         dtype_name(w.type), align);
}

// Each calling thread keeps one buffer per activation format, reused across calls; a
// dispatch whose matrices read two formats (a Q4_K_M layer mixes Q4_K and Q6_K, both Q8K;
// Q4_0 with a Q6_K V reads Q8S and Q8K) quantizes x once into each.
constexpr int kActFormats = 3;

struct PreparedActivations {
  const uint8_t* data = nullptr;
  size_t stride = 0;
};

PreparedActivations prepare_activations(ThreadPool& pool, cpu::ActFormat format, const MatView& x) {
  if (format == cpu::ActFormat::F32) return {static_cast<const uint8_t*>(x.data), x.row_stride};
  thread_local std::vector<uint8_t> buffers[kActFormats];
  std::vector<uint8_t>& act = buffers[static_cast<int>(format)];
  const size_t row_bytes = cpu::act_row_bytes(format, x.cols);
  act.resize(row_bytes * static_cast<size_t>(x.rows));
  uint8_t* act_data = act.data();  // a pointer: inside the workers `act` names their own buffer
  pool.parallel_for(x.rows, 4, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t)
      cpu::quantize_act_row(format, reinterpret_cast<const float*>(x.row(t)), act_data + t * row_bytes, x.cols);
  });
  return {act_data, row_bytes};
}

// One matrix's part of a dispatch. Its rows (in the kernel's row groups) are split when
// there are enough of them: each thread then reads its own slice of W once per token block.
// Otherwise (few rows, many tokens) its tokens are split, in nth ranges. Either way its work
// is `units` units, which run_jobs hands out in chunks.
struct MatmulJob {
  cpu::TileFn tile = nullptr;
  cpu::MatmulArgs args;
  int64_t rows = 0, tokens = 0, row_group = 1;
  bool split_rows = true;
  int64_t units = 0;      // row groups (split_rows), else token ranges
  int64_t unit_work = 0;  // rows x tokens of a unit, to weigh jobs with more tokens

  MatmulJob() = default;
  MatmulJob(const KernelPlan& kernel, const MatView& w, PreparedActivations act, F32Mat y, int64_t n_tokens, int nth)
      : tile(kernel.tile), rows(w.rows), tokens(n_tokens), row_group(kernel.row_group) {
    args.k = w.cols;
    args.w = static_cast<const uint8_t*>(w.data);
    args.w_stride = w.row_stride;
    args.a = act.data;
    args.a_stride = act.stride;
    args.y = y.data;
    args.y_stride = y.stride;
    split_rows = rows >= row_group * nth || tokens < nth;
    units = split_rows ? (rows + row_group - 1) / row_group : nth;
    unit_work = split_rows ? row_group * tokens : rows * ((tokens + nth - 1) / nth);
  }

  void run_units(int64_t u0, int64_t u1) const {
    if (split_rows) {
      const int64_t r0 = std::min(rows, u0 * row_group), r1 = std::min(rows, u1 * row_group);
      if (r0 < r1) tile(args, r0, r1, 0, tokens);
    } else {
      const int64_t c0 = tokens * u0 / units, c1 = tokens * u1 / units;
      if (c0 < c1) tile(args, 0, rows, c0, c1);
    }
  }
};

// Runs the jobs on all threads: their units, end to end, are cut into guided chunks
// (util/guided_chunks.h) that the threads take in order from a shared counter, so a chunk
// may run through several matrices. Chunks were once cut per matrix: a MoE layer's 16
// expert matrices of 1.2 MB then made ~240 chunks per dispatch, most of them short streams
// that the prefetchers pick up late; now ~40. qwen3moe of OLMoE's shape, Q4_K_M, ember bench
// tg128 on the 2-core Sapphire Rapids VM of issue 29, alternated rounds on a quiet machine:
// 36.6/36.3 -> 39.5/38.7 t/s, 70.4/70.8 -> 75.8/74.3% of the roofline (with matmul_id's
// in-place rows); dense files gain nothing measurable (few matrices per dispatch).
// Rows are split on row-group boundaries either way, so no output's bits change.
// Only chunks are shared between threads: an even split of the units would be
// as fast on an idle machine, but a descheduled thread would then stall the whole op.
void run_jobs(ThreadPool& pool, const MatmulJob* jobs, int n_jobs) {
  thread_local std::vector<int64_t> units, unit_work;
  thread_local GuidedPieces plan;
  units.resize(static_cast<size_t>(n_jobs));
  unit_work.resize(static_cast<size_t>(n_jobs));
  for (int j = 0; j < n_jobs; ++j) {
    units[j] = jobs[j].units;
    unit_work[j] = jobs[j].unit_work;
  }
  guided_pieces(units, unit_work, pool.size(), plan);
  const GuidedPieces* p = &plan;  // a pointer: inside the workers `plan` is their own
  pool.for_each_index(p->chunks(), [&](int64_t ch) {
    for (int i = p->chunk_first[ch]; i < p->chunk_first[ch + 1]; ++i) {
      const ChunkPiece& piece = p->pieces[i];
      jobs[piece.part].run_units(piece.begin, piece.end);
    }
  });
}

}  // namespace

void matmul(ThreadPool& pool, const MatView& w, const MatView& x, F32Mat y) {
  matmul_same_input(pool, {MatmulTarget{w, y}}, x);
}

void matmul_same_input(ThreadPool& pool, std::initializer_list<MatmulTarget> targets, const MatView& x) {
  constexpr int kMaxTargets = 4;
  if (targets.size() > kMaxTargets)
    fail(ErrorKind::Internal, "matmul_same_input: {} matrices, at most {}", targets.size(), kMaxTargets);
  for (const MatmulTarget& t : targets) validate(t.w, x, t.y);
  if (x.rows == 0) return;

  PreparedActivations act[kActFormats];  // data == nullptr: not prepared yet
  MatmulJob jobs[kMaxTargets];
  int n_jobs = 0;
  for (const MatmulTarget& t : targets) {
    if (t.w.rows == 0) continue;
    const KernelPlan kernel = pick_kernel(t.w, x.rows);
    const int f = static_cast<int>(kernel.act);
    if (!act[f].data) act[f] = prepare_activations(pool, kernel.act, x);
    jobs[n_jobs++] = MatmulJob(kernel, t.w, act[f], t.y, x.rows, pool.size());
  }
  if (n_jobs > 0) run_jobs(pool, jobs, n_jobs);
}


namespace {

// The rows of a matmul_id call in expert order: rows [start[e], start[e+1]) of the sorted
// order use expert e, and sorted row i is output row order[i] (t*n_used + j). A counting
// sort, stable, so each expert's rows keep their order.
// position is the inverse: output row r is sorted row position[r].
// One per thread, refilled by each call: decode sorts twice per layer, with no allocation.
struct ExpertBuckets {
  std::vector<int64_t> start, order, position, next;
  void fill(const int32_t* ids, int64_t n_rows, int64_t n_expert) {
    start.assign(static_cast<size_t>(n_expert) + 1, 0);
    order.resize(static_cast<size_t>(n_rows));
    position.resize(static_cast<size_t>(n_rows));
    for (int64_t i = 0; i < n_rows; ++i) {
      if (ids[i] < 0 || ids[i] >= n_expert)
        fail(ErrorKind::InvalidArgument, "matmul_id: expert id {} out of range (0..{})", ids[i], n_expert - 1);
      ++start[ids[i] + 1];
    }
    for (int64_t e = 0; e < n_expert; ++e) start[e + 1] += start[e];
    next.assign(start.begin(), start.end() - 1);
    for (int64_t i = 0; i < n_rows; ++i) order[next[ids[i]]++] = i;
    for (int64_t i = 0; i < n_rows; ++i) position[order[i]] = i;
  }
  int64_t rows_of(int64_t e) const { return start[e + 1] - start[e]; }
};

// The activations of a matmul_id call in expert order, in one format: sorted row i holds x's
// row for output row order[i] (its token's row when the slots share x), prepared as any
// matmul's (f32 copied, else quantized). A shared row is prepared once, then copied to its
// other slots, so a token costs one quantization whatever n_used; each row is prepared on its
// own, so its bits do not depend on its neighbours (batch invariance).
PreparedActivations prepare_expert_activations(ThreadPool& pool, cpu::ActFormat format, const MatView& x,
                                               const ExpertBuckets& buckets, int n_used) {
  thread_local std::vector<uint8_t> buffers[kActFormats];
  std::vector<uint8_t>& act = buffers[static_cast<int>(format)];
  const int64_t n_rows = static_cast<int64_t>(buckets.order.size()), n_tokens = n_rows / n_used;
  const bool per_slot = x.rows == n_rows;
  const size_t row_bytes = cpu::act_row_bytes(format, x.cols);
  act.resize(row_bytes * static_cast<size_t>(n_rows));
  uint8_t* act_data = act.data();  // a pointer: inside the workers `act` names their own buffer
  const auto prepare = [&](const void* src, uint8_t* dst) {
    if (format == cpu::ActFormat::F32)
      std::memcpy(dst, src, row_bytes);
    else
      cpu::quantize_act_row(format, static_cast<const float*>(src), dst, x.cols);
  };
  pool.parallel_for(n_tokens, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const uint8_t* first = act_data + buckets.position[t * n_used] * row_bytes;
      for (int j = 0; j < n_used; ++j) {
        uint8_t* dst = act_data + buckets.position[t * n_used + j] * row_bytes;
        if (per_slot || j == 0)
          prepare(x.row(per_slot ? t * n_used + j : t), dst);
        else
          std::memcpy(dst, first, row_bytes);
      }
    }
  });
  return {act_data, row_bytes};
}

void validate_id(const ExpertTarget& t, const MatView& x, int n_used) {
  if (t.experts.empty() || n_used <= 0 || t.y.rows % n_used != 0)
    fail(ErrorKind::InvalidArgument, "matmul_id: {} experts, {} used, {} output rows", t.experts.size(), n_used, t.y.rows);
  const int64_t n_tokens = t.y.rows / n_used;
  if (x.rows != n_tokens && x.rows != t.y.rows)
    fail(ErrorKind::InvalidArgument, "matmul_id: x has {} rows for {} tokens of {} experts", x.rows, n_tokens, n_used);
  const MatView& w0 = t.experts[0];
  for (const MatView& w : t.experts)
    if (w.type != w0.type || w.cols != w0.cols || w.rows != w0.rows || w.layout != w0.layout)
      fail(ErrorKind::InvalidArgument, "matmul_id: expert slices differ in type or shape");
  validate(w0, MatView{DType::F32, x.cols, 1, x.row_stride, x.data}, F32Mat{t.y.data, t.y.cols, 1, t.y.stride});
}

}  // namespace

void matmul_id(ThreadPool& pool, std::initializer_list<ExpertTarget> targets, const MatView& x, const int32_t* ids,
               int n_used) {
  constexpr int kMaxTargets = 2;
  if (targets.size() == 0 || targets.size() > kMaxTargets)
    fail(ErrorKind::Internal, "matmul_id: {} targets, 1 to {}", targets.size(), kMaxTargets);
  for (const ExpertTarget& t : targets) validate_id(t, x, n_used);
  const ExpertTarget& first = *targets.begin();
  const int64_t n_rows = first.y.rows, n_expert = static_cast<int64_t>(first.experts.size());
  if (n_rows == 0) return;
  thread_local ExpertBuckets buckets;
  buckets.fill(ids, n_rows, n_expert);

  // Each target's outputs in expert order. An expert with one row writes it in place (every
  // expert of a one-token step); the others' rows are copied to their places at the end.
  thread_local std::vector<float> ys[kMaxTargets];
  PreparedActivations act[kActFormats];
  thread_local std::vector<MatmulJob> jobs;  // reused: a call has up to 2 per expert
  jobs.clear();
  int ti = 0;
  for (const ExpertTarget& t : targets) {
    const int64_t cols = t.experts[0].rows;
    std::vector<float>& y = ys[ti++];
    y.resize(static_cast<size_t>(n_rows * cols));
    // Every variant of a type reads one activation format: each token is quantized once,
    // straight into expert order.
    const cpu::ActFormat format = pick_kernel(t.experts[0], 1).act;
    const int f = static_cast<int>(format);
    if (!act[f].data) act[f] = prepare_expert_activations(pool, format, x, buckets, n_used);
    for (int64_t e = 0; e < n_expert; ++e) {
      const int64_t r0 = buckets.start[e], n = buckets.rows_of(e);
      if (n == 0) continue;
      // Each expert's variant follows the regime of its own rows.
      const KernelPlan kernel = pick_kernel(t.experts[e], n);
      const PreparedActivations a{act[f].data + r0 * act[f].stride, act[f].stride};
      const F32Mat out = n == 1 ? F32Mat{t.y.row(buckets.order[r0]), cols, 1, cols}
                                : F32Mat{y.data() + r0 * cols, cols, n, cols};
      jobs.emplace_back(kernel, t.experts[e], a, out, n, pool.size());
    }
  }
  run_jobs(pool, jobs.data(), static_cast<int>(jobs.size()));

  ti = 0;
  for (const ExpertTarget& t : targets) {
    const std::vector<float>& y = ys[ti++];
    const int64_t cols = t.y.cols;
    for (int64_t e = 0; e < n_expert; ++e) {
      if (buckets.rows_of(e) < 2) continue;
      for (int64_t i = buckets.start[e]; i < buckets.start[e + 1]; ++i)
        std::memcpy(t.y.row(buckets.order[i]), &y[i * cols], static_cast<size_t>(cols) * sizeof(float));
    }
  }
}

}  // namespace ember::ops
