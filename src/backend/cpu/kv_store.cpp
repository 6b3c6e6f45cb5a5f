// Writing one f32 K or V row into a KV ring slot in the cache's type. The encoders are the
// reference quantizers of tensor/quant.h, so what attention reads back is exactly what
// dequantize_row of that type gives.
#include "backend/kv_types.h"
#include "backend/ops.h"
#include "tensor/quant.h"
#include "util/error.h"

namespace ember::ops {

void store_row(const float* src, int64_t n, DType type, void* dst) {
  if (!kv_type_known(type))
    fail(ErrorKind::InvalidArgument, "store_row: KV cache type {} is not one of {}", dtype_name(type),
         kv_type_names());
  const int block = dtype_size(type).block_size;
  if (n < 0 || n % block != 0)
    fail(ErrorKind::InvalidArgument, "store_row: row of {} elements is not a multiple of the {} block size {}", n,
         dtype_name(type), block);
  if (n > 0 && (src == nullptr || dst == nullptr)) fail(ErrorKind::InvalidArgument, "store_row: null row pointer");
  quantize_row_reference(type, src, dst, n);
}

}  // namespace ember::ops
