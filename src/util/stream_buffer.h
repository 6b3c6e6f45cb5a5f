// Memory for data that is streamed whole, over and over: the repacked weights a decode step
// reads every token, and the buffer the memory-bandwidth measurement reads. Both must sit
// on the same kind of pages, or the roofline would compare unlike reads: with 4 KiB pages a
// stream takes a TLB miss every 4 KiB (measured here: ~26 GB/s read on 4 KiB pages against
// ~30 GB/s on 2 MiB ones, same loop, 2 threads).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

namespace ember {

// `bytes` of uninitialised memory, 64-byte aligned; from 2 MiB up, 2 MiB-aligned and marked
// for transparent huge pages (advice: the kernel may still give 4 KiB pages). nullptr when
// the allocation fails.
std::shared_ptr<uint8_t> allocate_stream_buffer(size_t bytes);

// Stream buffers for many matrices below 2 MiB (a MoE model's experts: 1.2-1.7 MB each),
// cut from shared 2 MiB-aligned slabs so that they too sit on huge pages; each buffer keeps
// its slab alive. Alone, each expert got 4 KiB pages: qwen3moe of OLMoE's shape, Q4_K_M,
// ember bench tg128, 3 alternated rounds on the issue 29 VM: 39.9/39.6/39.2 -> 41.5/41.6/
// 41.2 t/s, 75.9/75.6/76.8 -> 79.0/80.5/81.4% of the roofline. A buffer of half a slab or
// more gets a stream buffer of its own. At most the tail of each slab is left unused (under
// half a slab, about 2.5% of what the experts take). Thread-safe.
class StreamArena {
 public:
  std::shared_ptr<uint8_t> allocate(size_t bytes);

 private:
  static constexpr size_t kSlabBytes = size_t{64} << 20;
  std::mutex mutex_;
  std::shared_ptr<uint8_t> slab_;
  size_t used_ = 0;
};

}  // namespace ember
