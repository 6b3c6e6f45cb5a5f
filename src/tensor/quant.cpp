// The traits table and the float formats (F32, F16, BF16); block formats live in
// quant_legacy.cpp (32-element blocks), quant_k.cpp (256-element k-quants) and
// quant_mxfp4.cpp.
#include "tensor/quant.h"

#include <cstring>

#include "tensor/fp16.h"
#include "util/error.h"

namespace ember {

namespace {

void f32_to_float(const void* src, float* dst, int64_t n) { std::memcpy(dst, src, static_cast<size_t>(n) * 4); }
void f32_from_float(const float* src, void* dst, int64_t n) { std::memcpy(dst, src, static_cast<size_t>(n) * 4); }

void f16_to_float(const void* src, float* dst, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_f32(h[i]);
}
void f16_from_float(const float* src, void* dst, int64_t n) {
  uint16_t* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = f32_to_fp16(src[i]);
}
void bf16_to_float(const void* src, float* dst, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(h[i]);
}
void bf16_from_float(const float* src, void* dst, int64_t n) {
  uint16_t* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = f32_to_bf16(src[i]);
}

QuantTraits make(DType t, bool compute, DequantizeRowFn to, QuantizeRowFn from) {
  DTypeSize s = dtype_size(t);
  return QuantTraits{t, s.name, s.block_size, s.block_bytes, compute, to, from};
}

// Q8_1 and Q8_K are activation formats: they (de)quantize but are not weight types.
const QuantTraits kTraits[] = {
    make(DType::F32, true, f32_to_float, f32_from_float),
    make(DType::F16, true, f16_to_float, f16_from_float),
    make(DType::BF16, true, bf16_to_float, bf16_from_float),
    make(DType::Q4_0, true, quant::dequantize_q4_0, quant::quantize_q4_0),
    make(DType::Q4_1, true, quant::dequantize_q4_1, quant::quantize_q4_1),
    make(DType::Q5_0, true, quant::dequantize_q5_0, quant::quantize_q5_0),
    make(DType::Q5_1, true, quant::dequantize_q5_1, quant::quantize_q5_1),
    make(DType::Q8_0, true, quant::dequantize_q8_0, quant::quantize_q8_0),
    make(DType::Q8_1, false, quant::dequantize_q8_1, quant::quantize_q8_1),
    make(DType::Q2_K, true, quant::dequantize_q2_K, quant::quantize_q2_K),
    make(DType::Q3_K, true, quant::dequantize_q3_K, quant::quantize_q3_K),
    make(DType::Q4_K, true, quant::dequantize_q4_K, quant::quantize_q4_K),
    make(DType::Q5_K, true, quant::dequantize_q5_K, quant::quantize_q5_K),
    make(DType::Q6_K, true, quant::dequantize_q6_K, quant::quantize_q6_K),
    make(DType::Q8_K, false, quant::dequantize_q8_K, quant::quantize_q8_K),
    make(DType::MXFP4, true, quant::dequantize_mxfp4, quant::quantize_mxfp4),
};

const QuantTraits& checked(DType t, int64_t n, const char* what) {
  const QuantTraits* tr = quant_traits(t);
  if (!tr) fail(ErrorKind::Unsupported, "{}: tensor type {} is not supported", what, dtype_name(t));
  if (n < 0 || n % tr->block_size != 0)
    fail(ErrorKind::InvalidArgument, "{}: row of {} elements is not a multiple of the {} block size {}", what, n,
         tr->name, tr->block_size);
  return *tr;
}

}  // namespace

const QuantTraits* quant_traits(DType t) {
  for (const QuantTraits& tr : kTraits)
    if (tr.type == t) return &tr;
  return nullptr;
}

bool dtype_can_quantize(DType t) { return quant_traits(t) != nullptr; }

bool dtype_can_compute(DType t) {
  const QuantTraits* tr = quant_traits(t);
  return tr && tr->compute;
}

void dequantize_row(DType t, const void* src, float* dst, int64_t n) {
  checked(t, n, "dequantize").to_float(src, dst, n);
}

void quantize_row_reference(DType t, const float* src, void* dst, int64_t n) {
  checked(t, n, "quantize").from_float_reference(src, dst, n);
}

}  // namespace ember
