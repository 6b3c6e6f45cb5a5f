// The measurement behind the kernel-choice table (kernel_choice.h): each packed variant run
// through ops::matmul on the loaded model's own matrices, per regime, variants alternated,
// best of a few repeats. Milliseconds per type; the caller caches the result
// (kernel_choice_cache.h), so it runs once per CPU model.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/cpu/kernel_choice.h"
#include "backend/ops.h"

namespace ember {
class ThreadPool;
}

namespace ember::cpu {

// Weight bytes per second (GB/s, 1e9) of one regime, best of its repeats, per variant (0: not
// measured: the variant cannot run the type here, or does not differ from another in this
// regime).
struct VariantSpeeds {
  std::array<double, kVariants> gbs = {};
  // AVX2 only when it measured clearly faster: a tie or a gap within run-to-run noise keeps
  // the widest kernel, so that noise does not flip the cached choice from run to run (Q6_K
  // decode did, 2-3% apart, on the Sapphire Rapids VM).
  static constexpr double kAvx2Margin = 1.03;
  // AMX likewise only when clearly faster than the better of the others: below 16 rows it
  // runs the AVX-512 kernel, so decode and small batches measure a tie there.
  static constexpr double kAmxMargin = 1.03;
  // AVX2's decode variants (the four-stream walk, the near prefetch) likewise only when
  // clearly faster than its plain kernel (all are AVX2: the margin keeps a tie from flipping
  // between runs), the faster of them when both are. Measured for decode only.
  static constexpr double kAvx2DecodeMargin = 1.03;
  double of(Variant v) const { return gbs[static_cast<int>(v)]; }
  Variant faster() const {
    Variant avx2 = Variant::Avx2;
    for (Variant v : {Variant::Avx2FourStreams, Variant::Avx2NearPrefetch})
      if (of(v) > of(Variant::Avx2) * kAvx2DecodeMargin && of(v) > of(avx2)) avx2 = v;
    const Variant best = of(avx2) > of(Variant::Avx512) * kAvx2Margin ? avx2 : Variant::Avx512;
    return of(Variant::Amx) > of(best) * kAmxMargin ? Variant::Amx : best;
  }
};

struct TypeSpeeds {
  DType type = DType::F32;
  std::array<VariantSpeeds, kRegimes> regime;
};

struct CalibrationPlan {
  // Decode streams the type's matrices one after the other, one activation row each, as a
  // decode step does, this many bytes per repeat (fewer if the model holds fewer): enough
  // to leave the private caches, so the numbers are those of a bandwidth-bound step.
  size_t decode_bytes = size_t{64} << 20;
  // ... from at least this many bytes of distinct data, in matrices of at least
  // decode_matrix_bytes, as a model that streams from memory has: the choice is cached per
  // CPU, not per model, and a small model's matrices time the caches and the pool's wake-ups
  // instead. On the Sapphire Rapids VM of issue 32 (480 MiB of L3) a small model's Q4_K entry
  // (AVX-512 19.5 vs AVX2 17.8 GB/s, 2 threads) was cached and then made TinyLlama-shaped
  // Q4_K_M decode run AVX-512: 74% of the roofline, against 85% with AVX2 (streaming: AVX2
  // 31.6 vs AVX-512 26.8 GB/s). A type with fewer bytes is timed on decode_stream_copies.
  size_t decode_stream_bytes = size_t{256} << 20;
  size_t decode_matrix_bytes = size_t{4} << 20;
  // Rounds (each variant once per regime, alternated): at least `repeats`, more while the
  // type's time is under `budget_seconds`, at most `max_repeats`. More rounds on a quiet
  // machine make "best of" steadier; a busy one still stops after `repeats`.
  int repeats = 3;
  int max_repeats = 8;
  double budget_seconds = 0.08;
  int64_t batch_rows = 8;       // the small-batch regime's activation rows (2..16)
  int64_t prefill_rows = 64;    // the prefill regime's (one token block of the kernels)
  // Batch and prefill read the first rows of the type's largest matrix, about slice_bytes
  // of them: the kernels' speed per row does not depend on the matrix's height, and a
  // 64-row pass over a whole 50 MiB output matrix would take most of a second.
  // Each pass repeats the slice until it has read this many bytes (a pass of one short
  // call would time the thread pool's wake-up more than the kernel).
  size_t slice_bytes = size_t{2} << 20;
  size_t batch_pass_bytes = size_t{16} << 20;
  size_t prefill_pass_bytes = size_t{4} << 20;
};

// Matrices for the decode passes: `mats` themselves when they hold at least `min_bytes`;
// else tall matrices of the largest one's shape, each its groups of rows repeated to at
// least `matrix_bytes` (whole groups copied, so the kernels read the model's own codes),
// as many as reach `min_bytes`.
struct DecodeStream {
  std::vector<MatView> mats;
  std::shared_ptr<uint8_t> storage;  // the tall matrices; null when `mats` are the originals
};
DecodeStream decode_stream_copies(const std::vector<MatView>& mats, size_t min_bytes, size_t matrix_bytes);

// Measures every type of `types` that has a packed (interleaved) matrix among `packed`;
// the others are left out of the result. The kernel-choice table is forced for each measurement and restored after, so
// call it before the model runs, not while other threads run matmuls.
std::vector<TypeSpeeds> measure_variants(ThreadPool& pool, std::span<const MatView> packed, std::span<const DType> types,
                                         const CalibrationPlan& plan = {});

}  // namespace ember::cpu
