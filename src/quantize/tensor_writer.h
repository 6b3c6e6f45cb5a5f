// Declares a tensor on a GGUF writer whose rows come from a RowSource and are encoded at
// write time (streamed: nothing is materialised before gguf::Writer::write runs).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "quantize/encode.h"
#include "tensor/dtype.h"

namespace ember::gguf {
class Writer;
}

namespace ember::quantize {

// Stores `name` (shape ne0 first) as `type`, except: 1-D tensors stay F32 (norms and biases
// are tiny and precision-critical, as in llama.cpp), and rows that `type`'s block does not
// divide use fallback_type(). Returns the type chosen. `source` and `pool` must outlive
// the writer's write().
DType add_encoded_tensor(gguf::Writer& writer, std::string name, std::vector<int64_t> shape, DType type,
                         RowSource source, ThreadPool* pool);

// The storage type add_encoded_tensor picks for a tensor of this shape.
DType storage_type(DType wanted, const std::vector<int64_t>& shape);

}  // namespace ember::quantize
