// Output "file types" the tools accept (--type / quantize TYPE): a single tensor type or
// one of llama.cpp's mixes, with the general.file_type id llama.cpp writes for each.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "tensor/dtype.h"

namespace ember::quantize {

struct FileType {
  std::string name;     // canonical upper-case name: "Q4_K_M", "F16" ...
  DType base;           // type of the bulk of the 2-D weights
  bool mix = false;     // a _M mix: some tensors get more bits (see mix.h)
  uint32_t llama_ftype; // general.file_type (llama.cpp's llama_ftype)
};

// Case-insensitive: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k q4_k_m q5_k_m mxfp4_moe (q4_k
// and q5_k mean the _S variants: every weight in that type). Throws Error(InvalidArgument)
// listing the accepted names.
FileType parse_file_type(std::string_view name);

// The file type of a single tensor type (for files whose weights all have one type).
FileType file_type_of(DType type);

// "f32, f16, ..." for help texts.
std::string file_type_names();

}  // namespace ember::quantize
