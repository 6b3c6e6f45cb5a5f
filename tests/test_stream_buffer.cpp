// util/stream_buffer: StreamArena's buffers are 64-byte aligned, never overlap, sit in 2 MiB-
// aligned slabs (so the kernel may back them with huge pages), outlive the arena, and a buffer
// of half a slab or more gets a buffer of its own.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "util/stream_buffer.h"

using ember::StreamArena;

TEST_CASE("stream arena: aligned, disjoint buffers from 2 MiB-aligned slabs, kept alive by their users") {
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  std::vector<std::pair<std::shared_ptr<uint8_t>, size_t>> bufs;
  {
    StreamArena arena;
    // MoE experts' sizes (Q4_K 1024x2048, Q6_K 2048x1024) and odd small ones, past one slab.
    const size_t sizes[] = {1179648, 1720320, 100, 64, 1, 1179648, 4097};
    for (int round = 0; round < 30; ++round)
      for (size_t n : sizes) {
        std::shared_ptr<uint8_t> p = arena.allocate(n);
        REQUIRE(p);
        CHECK(reinterpret_cast<uintptr_t>(p.get()) % 64 == 0);
        std::memset(p.get(), round & 0xff, n);
        bufs.emplace_back(std::move(p), n);
      }
    std::shared_ptr<uint8_t> big = arena.allocate(size_t{40} << 20);  // its own buffer
    REQUIRE(big);
    CHECK(reinterpret_cast<uintptr_t>(big.get()) % kHugePage == 0);
    bufs.emplace_back(std::move(big), size_t{40} << 20);
  }  // the arena is gone; the buffers must still be usable
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  for (const auto& [p, n] : bufs) {
    std::memset(p.get(), 0x5a, n);
    ranges.emplace_back(reinterpret_cast<uintptr_t>(p.get()), reinterpret_cast<uintptr_t>(p.get()) + n);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) CHECK(ranges[i - 1].second <= ranges[i].first);
  // The first buffer opens a slab: its start is the slab's, 2 MiB-aligned.
  CHECK(reinterpret_cast<uintptr_t>(bufs.front().first.get()) % kHugePage == 0);
}
