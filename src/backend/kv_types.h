// The one table of KV cache types: what -ctk/-ctv accept and print, and the block layout
// (tensor/dtype.h's dtype_size) that the cache's rows, the store kernels and the attention
// loaders share. Every kernel's type check reads it. Adding a type is a row here plus its
// kernels:
//   CUDA store (store_rows.cuh) and load (attention.cuh) dispatch over the rows
//     (kv_type_dispatch); the store fails to compile for a row without its case, the load
//     decodes through dequant.cuh;
//   CPU store is the reference quantizer, load is dequantize_row (AVX2 where
//     attention_avx2.cpp has a case);
//   the kernel tests loop over the rows (test_kv_types.cpp, test_cuda_cpu_rows.cpp,
//     test_cuda_cpu_fused.cpp, test_cuda_cpu_attention.cpp, test_backend_ops_attention.cpp),
//     so a row whose kernels are missing or wrong fails them.
// It lives beside the KV view (kv_view.h), below kv/ and the kernels, because the kernels in
// backend/ and cuda/ read it and kv/ sits above backend/.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include <string>

#include "tensor/dtype.h"

namespace ember {

struct KVType {
  DType type;
  const char* name;  // as -ctk/-ctv spell it and bench prints it
};

inline constexpr KVType kKVTypes[] = {
    {DType::F32, "f32"},
    {DType::F16, "f16"},
    {DType::Q8_0, "q8_0"},
    {DType::Q4_0, "q4_0"},
};
inline constexpr int kKVTypeCount = static_cast<int>(sizeof(kKVTypes) / sizeof(kKVTypes[0]));

constexpr bool kv_type_known(DType t) {
  for (const KVType& k : kKVTypes)
    if (k.type == t) return true;
  return false;
}

// Every row is a single value or a block of 32: a CUDA warp stores one block, and the
// attention loaders decode a tile's rows block by block.
constexpr bool kv_blocks_fit() {
  for (const KVType& k : kKVTypes)
    if (dtype_size(k.type).block_size != 1 && dtype_size(k.type).block_size != 32) return false;
  return true;
}
static_assert(kv_blocks_fit(), "a KV type's blocks must be single values or 32 elements");

// f(KVTypeTag<T>{}) for the row whose type T is `t`, or nothing when no row is: the
// kernels' switch over KV types, so every row of the table gets its instantiation.
template <DType T>
struct KVTypeTag {
  static constexpr DType value = T;
};
template <int I = 0, class F>
EMBER_HD inline void kv_type_dispatch(DType t, F&& f) {
  if constexpr (I < kKVTypeCount) {
    using Tag = KVTypeTag<kKVTypes[I].type>;
    if (t == Tag::value) return f(Tag{});
    kv_type_dispatch<I + 1>(t, static_cast<F&&>(f));
  }
}

// Host side: the names the table accepts, "f32, f16, q8_0, q4_0", for help texts and errors;
// a type's name ("q8_0"; dtype_name for a type the table lacks); and -ctk/-ctv's parse,
// case-insensitive, which throws InvalidArgument naming `flag` and the accepted names.
std::string kv_type_names();
const char* kv_type_name(DType t);
DType parse_kv_type(const std::string& name, const char* flag);

}  // namespace ember
