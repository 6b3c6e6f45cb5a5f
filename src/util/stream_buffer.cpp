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

std::shared_ptr<uint8_t> StreamArena::allocate(size_t bytes) {
  if (bytes >= kSlabBytes / 2) return allocate_stream_buffer(bytes);
  const size_t rounded = (bytes + 63) / 64 * 64;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!slab_ || used_ + rounded > kSlabBytes) {
    slab_ = allocate_stream_buffer(kSlabBytes);
    used_ = 0;
    if (!slab_) return nullptr;
  }
  std::shared_ptr<uint8_t> out(slab_, slab_.get() + used_);  // shares the slab's ownership
  used_ += rounded;
  return out;
}

}  // namespace ember
