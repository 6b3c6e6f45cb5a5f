#include "quantize/tensor_writer.h"

#include "gguf/gguf_writer.h"

namespace ember::quantize {

DType storage_type(DType wanted, const std::vector<int64_t>& shape) {
  if (shape.size() <= 1) return DType::F32;
  return fallback_type(wanted, shape[0]);
}

DType add_encoded_tensor(gguf::Writer& writer, std::string name, std::vector<int64_t> shape, DType type,
                         RowSource source, ThreadPool* pool) {
  const DType stored = storage_type(type, shape);
  int64_t rows = 1;
  for (size_t i = 1; i < shape.size(); ++i) rows *= shape[i];
  const int64_t row_len = shape.at(0);
  writer.add_tensor(std::move(name), stored, std::move(shape),
                    [stored, rows, row_len, source = std::move(source), pool](std::span<uint8_t> out) {
                      encode_rows(stored, rows, row_len, source, out, pool);
                    });
  return stored;
}

}  // namespace ember::quantize
