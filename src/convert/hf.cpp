#include "convert/hf.h"

#include "util/error.h"

namespace ember::convert {

ConvertStats convert_hf(const std::string& dir, const std::string& out_path, DType type, ThreadPool* pool) {
  (void)out_path, (void)type, (void)pool;
  fail(ErrorKind::Unsupported, "{}: convert hf is not implemented yet", dir);
}

}  // namespace ember::convert
