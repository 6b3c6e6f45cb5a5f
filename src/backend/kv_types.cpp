#include "backend/kv_types.h"

#include <cctype>

#include "util/error.h"

namespace ember {

std::string kv_type_names() {
  std::string s;
  for (const KVType& k : kKVTypes) s += (s.empty() ? "" : ", ") + std::string(k.name);
  return s;
}

const char* kv_type_name(DType t) {
  for (const KVType& k : kKVTypes)
    if (k.type == t) return k.name;
  return dtype_name(t);
}

DType parse_kv_type(const std::string& name, const char* flag) {
  std::string lower = name;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const KVType& k : kKVTypes)
    if (lower == k.name) return k.type;
  fail(ErrorKind::InvalidArgument, "{} '{}': expected one of {}", flag, name, kv_type_names());
}

}  // namespace ember
