// ops::pack_weight: the load-time copy of a weight matrix in the layout of its packed CPU
// kernel (see PackedKernel in matmul_kernels.h). Packing is per group of rows and touches
// each source byte once, so it costs about one read of the file.
#include <algorithm>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/ops.h"
#include "tensor/quant.h"
#include "util/error.h"
#include "util/stream_buffer.h"

namespace ember::ops {

std::optional<PackedWeight> pack_weight(const MatView& w, StreamArena* arena) {
  if (w.layout != WeightLayout::Rows || w.rows == 0 || w.cols == 0) return std::nullopt;
  const cpu::PackedKernel* kernel = simd_level() >= SimdLevel::AVX2 ? cpu::packed_kernel_avx2(w.type) : nullptr;
  if (!kernel) return std::nullopt;
  if (w.cols % dtype_size(w.type).block_size != 0 || w.row_stride < dtype_row_bytes(w.type, w.cols))
    fail(ErrorKind::InvalidArgument, "pack_weight: {} rows of {} elements are not whole blocks", dtype_name(w.type),
         w.cols);

  const int64_t rows_per_group = kernel->group_rows;
  const int64_t n_groups = (w.rows + rows_per_group - 1) / rows_per_group;
  const size_t group_bytes = kernel->group_bytes(w.cols);
  const size_t bytes = group_bytes * static_cast<size_t>(n_groups);
  // Decode streams every packed matrix each token: huge pages spare a TLB miss every 4 KiB
  // (and a page fault each while packing).
  PackedWeight p;
  p.storage = arena ? arena->allocate(bytes) : allocate_stream_buffer(bytes);
  if (!p.storage)
    fail(ErrorKind::OutOfMemory, "pack_weight: cannot allocate {} bytes for a {}x{} {} matrix", bytes, w.rows, w.cols,
         dtype_name(w.type));
  p.bytes = bytes;
  for (int64_t g = 0; g < n_groups; ++g) {
    const int64_t r0 = g * rows_per_group;
    const int n = static_cast<int>(std::min(rows_per_group, w.rows - r0));
    kernel->pack_group(w.row(r0), w.row_stride, n, w.cols, p.storage.get() + g * group_bytes);
  }
  p.view = w;
  p.view.layout = WeightLayout::Interleaved;
  p.view.data = p.storage.get();
  p.view.row_stride = group_bytes;
  return p;
}

}  // namespace ember::ops
