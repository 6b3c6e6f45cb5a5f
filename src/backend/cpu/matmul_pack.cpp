// ops::pack_weight: the load-time copy of a weight matrix in the layout of its packed CPU
// kernel (see PackedKernel in matmul_kernels.h). Packing is per group of rows and touches
// each source byte once, so it costs about one read of the file.
#include <algorithm>
#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/ops.h"
#include "tensor/quant.h"
#include "util/error.h"

namespace ember::ops {

std::optional<PackedWeight> pack_weight(const MatView& w) {
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
  // Large matrices get 2 MiB-aligned memory marked for transparent huge pages: decode
  // streams all of them every token, and 4 KiB pages would add a TLB miss every 4 KiB
  // (and a page fault each while packing).
  constexpr size_t kHugePage = size_t{2} << 20;
  const size_t align = bytes >= kHugePage ? kHugePage : 64;
  const size_t alloc_bytes = (bytes + align - 1) / align * align;
  void* raw = std::aligned_alloc(align, alloc_bytes);
  if (!raw) fail(ErrorKind::OutOfMemory, "pack_weight: cannot allocate {} bytes for a {}x{} {} matrix", bytes, w.rows,
                 w.cols, dtype_name(w.type));
#ifdef MADV_HUGEPAGE
  if (align == kHugePage) madvise(raw, alloc_bytes, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
  PackedWeight p;
  p.storage = std::shared_ptr<uint8_t>(static_cast<uint8_t*>(raw), [](uint8_t* q) { std::free(q); });
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
