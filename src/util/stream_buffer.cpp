#include "util/stream_buffer.h"

#include <cstdlib>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace ember {

std::shared_ptr<uint8_t> allocate_stream_buffer(size_t bytes) {
  constexpr size_t kHugePage = size_t{2} << 20;
  const size_t align = bytes >= kHugePage ? kHugePage : 64;
  const size_t alloc_bytes = (bytes + align - 1) / align * align;
  void* raw = std::aligned_alloc(align, alloc_bytes);
  if (!raw) return nullptr;
#ifdef MADV_HUGEPAGE
  if (align == kHugePage) madvise(raw, alloc_bytes, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
  return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(raw), [](uint8_t* p) { std::free(p); });
}

}  // namespace ember
