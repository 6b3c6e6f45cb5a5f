// Element types and quantization block layouts, bit-compatible with GGUF/ggml.
// This header is shared by host (C++) and device (CUDA) code: plain structs, no STL.
// Half-precision fields are stored as raw uint16_t bits (IEEE fp16) so both sides agree.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define EMBER_HD __host__ __device__
#else
#define EMBER_HD
#endif

namespace ember {

// Type ids as GGUF files store them (ggml_type). Gaps are ids ggml retired.
enum class DType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22,
  IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
  TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39,
};
constexpr uint32_t kDTypeIdLimit = 40;  // every valid id is below this

constexpr int QK4_0 = 32, QK4_1 = 32, QK5_0 = 32, QK5_1 = 32, QK8_0 = 32, QK8_1 = 32, QK_MXFP4 = 32;
constexpr int QK_K = 256;        // super-block size of the k-quants
constexpr int K_SCALE_SIZE = 12; // packed 6-bit scales/mins of Q4_K and Q5_K

using fp16_bits = uint16_t;

// x = d * (q - 8), q in [0, 15]; element j in low nibble of qs[j], j+16 in high nibble.
struct block_q4_0 { fp16_bits d; uint8_t qs[QK4_0 / 2]; };
// x = d * q + m, q in [0, 15]; same nibble order as q4_0.
struct block_q4_1 { fp16_bits d; fp16_bits m; uint8_t qs[QK4_1 / 2]; };
// x = d * (q - 16), q 5 bits: low 4 in qs (q4_0 order), bit 4 of element j in bit j of qh.
struct block_q5_0 { fp16_bits d; uint8_t qh[4]; uint8_t qs[QK5_0 / 2]; };
// x = d * q + m, 5-bit q as in q5_0.
struct block_q5_1 { fp16_bits d; fp16_bits m; uint8_t qh[4]; uint8_t qs[QK5_1 / 2]; };
// x = d * q, q int8.
struct block_q8_0 { fp16_bits d; int8_t qs[QK8_0]; };
// q8_0 plus s = d * sum(q), used for activations against q4_1/q5_1.
struct block_q8_1 { fp16_bits d; fp16_bits s; int8_t qs[QK8_1]; };

// 2-bit k-quant: 16 sub-blocks of 16, 4-bit scale and min per sub-block.
struct block_q2_K { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; fp16_bits d; fp16_bits dmin; };
// 3-bit k-quant: low 2 bits in qs, high bit in hmask, 6-bit scales packed in 12 bytes.
struct block_q3_K { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; fp16_bits d; };
// 4-bit k-quant: 8 sub-blocks of 32, 6-bit scale and min each, x = d*sc*q - dmin*m.
struct block_q4_K { fp16_bits d; fp16_bits dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qs[QK_K / 2]; };
// 5-bit k-quant: q4_K plus one high bit per element in qh.
struct block_q5_K { fp16_bits d; fp16_bits dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; };
// 6-bit k-quant: 16 sub-blocks of 16 with int8 scales, x = d*sc*(q - 32).
struct block_q6_K { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; fp16_bits d; };
// 8-bit k-quant for activations: float scale and per-16 sums.
struct block_q8_K { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; };
// OCP microscaling fp4 (gpt-oss experts): x = kMxfp4Values[q] * 2^(e - 128), i.e. the e2m1
// value (the table holds it doubled) times the E8M0 scale 2^(e - 127); q order as q4_0.
struct block_mxfp4 { uint8_t e; uint8_t qs[QK_MXFP4 / 2]; };

static_assert(sizeof(block_q4_0) == 2 + QK4_0 / 2, "q4_0 block size");
static_assert(sizeof(block_q4_1) == 4 + QK4_1 / 2, "q4_1 block size");
static_assert(sizeof(block_q5_0) == 2 + 4 + QK5_0 / 2, "q5_0 block size");
static_assert(sizeof(block_q5_1) == 4 + 4 + QK5_1 / 2, "q5_1 block size");
static_assert(sizeof(block_q8_0) == 2 + QK8_0, "q8_0 block size");
static_assert(sizeof(block_q8_1) == 4 + QK8_1, "q8_1 block size");
static_assert(sizeof(block_q2_K) == 2 * 2 + QK_K / 16 + QK_K / 4, "q2_K block size");
static_assert(sizeof(block_q3_K) == 2 + QK_K / 4 + QK_K / 8 + 12, "q3_K block size");
static_assert(sizeof(block_q4_K) == 2 * 2 + K_SCALE_SIZE + QK_K / 2, "q4_K block size");
static_assert(sizeof(block_q5_K) == 2 * 2 + K_SCALE_SIZE + QK_K / 2 + QK_K / 8, "q5_K block size");
static_assert(sizeof(block_q6_K) == 2 + QK_K / 16 + 3 * QK_K / 4, "q6_K block size");
static_assert(sizeof(block_q8_K) == 4 + QK_K + QK_K / 16 * 2, "q8_K block size");
static_assert(sizeof(block_mxfp4) == 1 + QK_MXFP4 / 2, "mxfp4 block size");

// The e2m1 code points doubled (0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives), so they are
// integers and an MXFP4 block dots with 8-bit activations in integer arithmetic.
constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// Half the E8M0 scale 2^(e - 127), exactly (e = 0 and 1 give the f32 subnormals 2^-128 and
// 2^-127); e = 255 (NaN in the OCP spec) gives 2^127, as ggml reads it. Static: SIMD files
// compiled with other flags keep their own copy (no ODR pick of an AVX2 build elsewhere).
EMBER_HD static inline float mxfp4_half_scale(uint8_t e) {
  const uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e - 1) << 23);
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

// Size facts for every id a GGUF may carry (also the ones ember cannot compute with, so
// the reader can validate such files). block_size 0 marks an unknown/retired id.
struct DTypeSize {
  const char* name;
  int block_size;      // elements per block
  int block_bytes;     // bytes per block
};

EMBER_HD constexpr DTypeSize dtype_size(DType t) {
  switch (t) {
    case DType::F32: return {"F32", 1, 4};
    case DType::F16: return {"F16", 1, 2};
    case DType::BF16: return {"BF16", 1, 2};
    case DType::Q4_0: return {"Q4_0", QK4_0, sizeof(block_q4_0)};
    case DType::Q4_1: return {"Q4_1", QK4_1, sizeof(block_q4_1)};
    case DType::Q5_0: return {"Q5_0", QK5_0, sizeof(block_q5_0)};
    case DType::Q5_1: return {"Q5_1", QK5_1, sizeof(block_q5_1)};
    case DType::Q8_0: return {"Q8_0", QK8_0, sizeof(block_q8_0)};
    case DType::Q8_1: return {"Q8_1", QK8_1, sizeof(block_q8_1)};
    case DType::Q2_K: return {"Q2_K", QK_K, sizeof(block_q2_K)};
    case DType::Q3_K: return {"Q3_K", QK_K, sizeof(block_q3_K)};
    case DType::Q4_K: return {"Q4_K", QK_K, sizeof(block_q4_K)};
    case DType::Q5_K: return {"Q5_K", QK_K, sizeof(block_q5_K)};
    case DType::Q6_K: return {"Q6_K", QK_K, sizeof(block_q6_K)};
    case DType::Q8_K: return {"Q8_K", QK_K, sizeof(block_q8_K)};
    case DType::IQ2_XXS: return {"IQ2_XXS", QK_K, 2 + QK_K / 4};
    case DType::IQ2_XS: return {"IQ2_XS", QK_K, 2 + QK_K / 4 + QK_K / 32};
    case DType::IQ3_XXS: return {"IQ3_XXS", QK_K, 2 + 3 * QK_K / 8};
    case DType::IQ1_S: return {"IQ1_S", QK_K, 2 + QK_K / 8 + QK_K / 16};
    case DType::IQ4_NL: return {"IQ4_NL", 32, 2 + 16};
    case DType::IQ3_S: return {"IQ3_S", QK_K, 2 + QK_K / 4 + QK_K / 32 + QK_K / 8 + QK_K / 64};
    case DType::IQ2_S: return {"IQ2_S", QK_K, 2 + QK_K / 4 + QK_K / 32 + QK_K / 32};
    case DType::IQ4_XS: return {"IQ4_XS", QK_K, 2 + 2 + QK_K / 64 + QK_K / 2};
    case DType::IQ1_M: return {"IQ1_M", QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32};
    case DType::TQ1_0: return {"TQ1_0", QK_K, (QK_K - 4 * QK_K / 64) / 5 + QK_K / 64 + 2};
    case DType::TQ2_0: return {"TQ2_0", QK_K, QK_K / 4 + 2};
    case DType::MXFP4: return {"MXFP4", QK_MXFP4, sizeof(block_mxfp4)};
    case DType::I8: return {"I8", 1, 1};
    case DType::I16: return {"I16", 1, 2};
    case DType::I32: return {"I32", 1, 4};
    case DType::I64: return {"I64", 1, 8};
    case DType::F64: return {"F64", 1, 8};
  }
  return {"unknown", 0, 0};
}

// True for ids that name a type (used by the GGUF reader before trusting a type field).
constexpr bool dtype_id_known(uint32_t id) {
  return id < kDTypeIdLimit && dtype_size(static_cast<DType>(id)).block_size != 0;
}

// Bytes of a row of n elements (n must be a multiple of the block size).
EMBER_HD constexpr size_t dtype_row_bytes(DType t, int64_t n) {
  DTypeSize s = dtype_size(t);
  return static_cast<size_t>(n / s.block_size) * static_cast<size_t>(s.block_bytes);
}

inline const char* dtype_name(DType t) { return dtype_size(t).name; }

}  // namespace ember
