#include "quantize/ftype.h"

#include <cctype>
#include <vector>

#include "util/error.h"

namespace ember::quantize {

namespace {

// llama_ftype ids from llama.h (LLAMA_FTYPE_ALL_F32 = 0, MOSTLY_F16 = 1, ...).
const std::vector<FileType>& table() {
  static const std::vector<FileType> t = {
      {"F32", DType::F32, false, 0},    {"F16", DType::F16, false, 1},
      {"BF16", DType::BF16, false, 32}, {"Q8_0", DType::Q8_0, false, 7},
      {"Q4_0", DType::Q4_0, false, 2},  {"Q4_1", DType::Q4_1, false, 3},
      {"Q5_0", DType::Q5_0, false, 8},  {"Q5_1", DType::Q5_1, false, 9},
      {"Q4_K", DType::Q4_K, false, 14}, {"Q5_K", DType::Q5_K, false, 16},
      {"Q6_K", DType::Q6_K, false, 18}, {"Q4_K_M", DType::Q4_K, true, 15},
      {"Q5_K_M", DType::Q5_K, true, 17},
      // llama.cpp's MXFP4_MOE (gpt-oss): 3-D expert tensors MXFP4, other matrices Q8_0.
      {"MXFP4_MOE", DType::MXFP4, false, 38},
  };
  return t;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::string file_type_names() {
  std::string out;
  for (const FileType& f : table()) {
    if (!out.empty()) out += ", ";
    std::string lower = f.name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out += lower;
  }
  return out;
}

FileType parse_file_type(std::string_view name) {
  std::string u = upper(name);
  if (u == "Q4_K_S") u = "Q4_K";
  if (u == "Q5_K_S") u = "Q5_K";
  for (const FileType& f : table())
    if (f.name == u) return f;
  fail(ErrorKind::InvalidArgument, "unknown type '{}' (expected one of: {})", name, file_type_names());
}

FileType file_type_of(DType type) {
  for (const FileType& f : table())
    if (f.base == type && !f.mix) return f;
  fail(ErrorKind::Unsupported, "no file type for tensor type {}", dtype_name(type));
}

}  // namespace ember::quantize
