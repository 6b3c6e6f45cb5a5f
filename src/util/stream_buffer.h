// Memory for data that is streamed whole, over and over: the repacked weights a decode step
// reads every token, and the buffer the memory-bandwidth measurement reads. Both must sit
// on the same kind of pages, or the roofline would compare unlike reads: with 4 KiB pages a
// stream takes a TLB miss every 4 KiB (measured here: ~26 GB/s read on 4 KiB pages against
// ~30 GB/s on 2 MiB ones, same loop, 2 threads).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace ember {

// `bytes` of uninitialised memory, 64-byte aligned; from 2 MiB up, 2 MiB-aligned and marked
// for transparent huge pages (advice: the kernel may still give 4 KiB pages). nullptr when
// the allocation fails.
std::shared_ptr<uint8_t> allocate_stream_buffer(size_t bytes);

}  // namespace ember
