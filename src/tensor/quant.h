// Reference (de)quantization of rows between f32 and the GGUF block formats.
// Dequantization follows ggml's formulas exactly; the quantizers write blocks that
// llama.cpp reads unchanged (same layouts), choosing scales by their own documented search
// (see quant_legacy.cpp and quant_k.cpp), so bytes may differ from llama-quantize's.
//
// Rows are `n` elements long; n must be a multiple of the type's block size.
// Types without an implementation throw ember::Error(ErrorKind::Unsupported) naming the type.
#pragma once
#include <cstddef>
#include <cstdint>

#include "tensor/dtype.h"

namespace ember {

using DequantizeRowFn = void (*)(const void* src, float* dst, int64_t n);
using QuantizeRowFn = void (*)(const float* src, void* dst, int64_t n);

struct QuantTraits {
  DType type;
  const char* name;
  int block_size;        // elements per block
  int block_bytes;       // bytes per block
  bool compute;          // usable as a matmul weight / get_rows table on the CPU backend
  DequantizeRowFn to_float;
  QuantizeRowFn from_float_reference;
};

// Traits of a type with a (de)quantizer, or nullptr (F64, I8..I64, IQ*, TQ* ...).
const QuantTraits* quant_traits(DType t);

bool dtype_can_quantize(DType t);  // quantize_row_reference / dequantize_row work
bool dtype_can_compute(DType t);   // ops::matmul and ops::get_rows accept it as weights

// dst receives n floats.
void dequantize_row(DType t, const void* src, float* dst, int64_t n);
// dst receives dtype_row_bytes(t, n) bytes.
void quantize_row_reference(DType t, const float* src, void* dst, int64_t n);

// The per-format implementations (one file per family), used by the traits table.
namespace quant {
void dequantize_q4_0(const void* src, float* dst, int64_t n);
void dequantize_q4_1(const void* src, float* dst, int64_t n);
void dequantize_q5_0(const void* src, float* dst, int64_t n);
void dequantize_q5_1(const void* src, float* dst, int64_t n);
void dequantize_q8_0(const void* src, float* dst, int64_t n);
void dequantize_q8_1(const void* src, float* dst, int64_t n);
void quantize_q4_0(const float* src, void* dst, int64_t n);
void quantize_q4_1(const float* src, void* dst, int64_t n);
void quantize_q5_0(const float* src, void* dst, int64_t n);
void quantize_q5_1(const float* src, void* dst, int64_t n);
void quantize_q8_0(const float* src, void* dst, int64_t n);
void quantize_q8_1(const float* src, void* dst, int64_t n);

void dequantize_q2_K(const void* src, float* dst, int64_t n);
void dequantize_q3_K(const void* src, float* dst, int64_t n);
void dequantize_q4_K(const void* src, float* dst, int64_t n);
void dequantize_q5_K(const void* src, float* dst, int64_t n);
void dequantize_q6_K(const void* src, float* dst, int64_t n);
void dequantize_q8_K(const void* src, float* dst, int64_t n);
void quantize_q2_K(const float* src, void* dst, int64_t n);
void quantize_q3_K(const float* src, void* dst, int64_t n);
void quantize_q4_K(const float* src, void* dst, int64_t n);
void quantize_q5_K(const float* src, void* dst, int64_t n);
void quantize_q6_K(const float* src, void* dst, int64_t n);
void quantize_q8_K(const float* src, void* dst, int64_t n);

void dequantize_mxfp4(const void* src, float* dst, int64_t n);
void quantize_mxfp4(const float* src, void* dst, int64_t n);
}  // namespace quant

}  // namespace ember
