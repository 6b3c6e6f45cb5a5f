// Internal interface between the matmul driver (matmul.cpp) and its kernels, one table per
// SIMD level (matmul_scalar.cpp, matmul_avx2.cpp).
//
// The fast path follows llama.cpp: activations are first quantized to 8 bits per row
// (block_q8s for the 32-element weight formats, Q8_K for the k-quants), then each output is
// an integer dot product per block scaled in f32. Float weights (F32, F16, BF16) are dotted
// with the f32 activations directly (FMA).
#pragma once
#include <cstddef>
#include <cstdint>

#include "tensor/dtype.h"

namespace ember::cpu {

enum class ActFormat { F32, Q8S, Q8K };

// Activation block for the 32-element weight formats: like ggml's Q8_1 but with f32 scale
// and sum (s = d * sum(qs)), which the _1 formats need for their offset term.
struct block_q8s {
  float d;
  float s;
  int8_t qs[32];
};
static_assert(sizeof(block_q8s) == 40, "q8s block size");

// Bytes of one prepared activation row of k elements.
size_t act_row_bytes(ActFormat f, int64_t k);
// Quantizes one f32 row of k elements into the activation format (not for F32), with the
// fastest code the CPU runs; _scalar is the plain loop (the bytes are the same).
void quantize_act_row(ActFormat f, const float* x, void* dst, int64_t k);
void quantize_act_row_scalar(ActFormat f, const float* x, void* dst, int64_t k);

// One matmul's operands as the kernels see them.
struct MatmulArgs {
  int64_t k = 0;              // elements per row
  const uint8_t* w = nullptr; // weight rows in their block format
  size_t w_stride = 0;        // bytes between weight rows
  const uint8_t* a = nullptr; // activation rows in the kernel's ActFormat
  size_t a_stride = 0;        // bytes between activation rows
  float* y = nullptr;         // y[c * y_stride + r] = dot(activation c, weight row r)
  int64_t y_stride = 0;       // floats
};

// Computes the outputs for weight rows [r0, r1) and activation rows [c0, c1).
using TileFn = void (*)(const MatmulArgs& args, int64_t r0, int64_t r1, int64_t c0, int64_t c1);

struct MatmulKernel {
  ActFormat act;
  TileFn tile;
};

// The kernel of a weight type at a level, or nullptr when that level has none for it.
const MatmulKernel* matmul_kernel_scalar(DType w);
const MatmulKernel* matmul_kernel_avx2(DType w);

// Kernels over weights repacked at load time (WeightLayout::Interleaved): the rows are
// stored in groups of `group_rows`, each group one contiguous run of `group_bytes(k)` bytes
// laid out as the kernel likes (e.g. the rows' blocks interleaved, scales unpacked), so a
// thread streams one sequential range and the codes of all rows of a group come from
// single loads. The last group is padded with zero rows.
struct PackedKernel {
  int group_rows;
  size_t (*group_bytes)(int64_t k);
  // Packs rows [0, n_rows) (n_rows <= group_rows) of a row-layout matrix into one group.
  void (*pack_group)(const uint8_t* w, size_t w_stride, int n_rows, int64_t k, uint8_t* dst);
  ActFormat act;
  // As TileFn with args.w the first group and args.w_stride the group bytes; r0 is a
  // multiple of group_rows, r1 one too or the matrix's row count.
  TileFn tile;
};

// The packed kernel of a weight type at a level, or nullptr (the type is read in place).
const PackedKernel* packed_kernel_avx2(DType w);
// The same layout read with the four-stream decode walk (kernel_choice.h's avx2-4streams),
// or nullptr for the types that keep the pairs.
const PackedKernel* packed_kernel_avx2_four_streams(DType w);
// The same layout with decode's pairs prefetching kNearPrefetchDistance ahead (kernel_choice.h's
// avx2-prefetch1k), or nullptr for the types without it (Q6_K tunes its own distance).
const PackedKernel* packed_kernel_avx2_near_prefetch(DType w);

// Activation rows are swept in blocks of this many tokens so that a block stays in L2 while
// every weight row of the thread's share meets it (weights are then read once per block).
constexpr int64_t kTokenBlock = 64;

// Walks [r0, r1) x [c0, c1) in micro-tiles of RM rows x RN tokens, token block by token
// block; `full(r, c)` computes an RM x RN tile, `partial(r, rm, c, rn)` a smaller one.
template <int RM, int RN, class Full, class Partial>
inline void for_each_tile(int64_t r0, int64_t r1, int64_t c0, int64_t c1, Full&& full, Partial&& partial) {
  for (int64_t cb = c0; cb < c1; cb += kTokenBlock) {
    const int64_t ce = cb + kTokenBlock < c1 ? cb + kTokenBlock : c1;
    for (int64_t r = r0; r < r1; r += RM) {
      const int rm = static_cast<int>(r1 - r < RM ? r1 - r : RM);
      for (int64_t c = cb; c < ce; c += RN) {
        const int rn = static_cast<int>(ce - c < RN ? ce - c : RN);
        if (rm == RM && rn == RN)
          full(r, c);
        else
          partial(r, rm, c, rn);
      }
    }
  }
}

}  // namespace ember::cpu
