// util/guided_chunks: guided_pieces covers every unit of every part exactly once, in order;
// its chunks shrink as the work left shrinks (a long first stream, a short tail), run through
// part boundaries instead of restarting in each part, and weigh units by their work.
#include <doctest/doctest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "util/guided_chunks.h"

using ember::ChunkPiece;
using ember::GuidedPieces;
using ember::guided_pieces;

namespace {

// Checks that the pieces list every unit of every part once, in order, with no empty piece,
// and that the chunks partition the pieces; returns each chunk's work.
std::vector<int64_t> check_cover(const GuidedPieces& g, const std::vector<int64_t>& units,
                                 const std::vector<int64_t>& work) {
  int part = 0;
  int64_t next = 0;
  for (const ChunkPiece& p : g.pieces) {
    while (part < static_cast<int>(units.size()) && next == units[part]) ++part, next = 0;
    REQUIRE(p.part == part);
    REQUIRE(p.begin == next);
    REQUIRE(p.end > p.begin);
    REQUIRE(p.end <= units[part]);
    next = p.end;
  }
  while (part < static_cast<int>(units.size()) && next == units[part]) ++part, next = 0;
  CHECK(part == static_cast<int>(units.size()));
  REQUIRE(g.chunk_first.front() == 0);
  REQUIRE(g.chunk_first.back() == static_cast<int>(g.pieces.size()));
  std::vector<int64_t> chunk_work;
  for (int c = 0; c < g.chunks(); ++c) {
    REQUIRE(g.chunk_first[c + 1] > g.chunk_first[c]);  // no empty chunk
    int64_t w = 0;
    for (int i = g.chunk_first[c]; i < g.chunk_first[c + 1]; ++i)
      w += (g.pieces[i].end - g.pieces[i].begin) * work[g.pieces[i].part];
    chunk_work.push_back(w);
  }
  return chunk_work;
}

}  // namespace

TEST_CASE("guided_pieces: one part is guided chunks of a quarter of the work left (2 threads)") {
  GuidedPieces g;
  const std::vector<int64_t> units{64}, work{1};
  guided_pieces(units, work, 2, g);
  const std::vector<int64_t> sizes = check_cover(g, units, work);
  // 64 units: 16 (64/4), 12 (48/4), 9 (36/4), 6 (27/4), 5, 4, 3, 2, then one unit at a time.
  const std::vector<int64_t> expect{16, 12, 9, 6, 5, 4, 3, 2, 1, 1, 1, 1, 1, 1, 1};
  CHECK(sizes == expect);
}

TEST_CASE("guided_pieces: chunks run through the parts, so small parts do not each get a tail") {
  // 16 parts of 64 units (a MoE layer's gate and up experts): chunks as for 1024 units.
  GuidedPieces g;
  const std::vector<int64_t> units(16, 64), work(16, 1);
  guided_pieces(units, work, 2, g);
  const std::vector<int64_t> sizes = check_cover(g, units, work);
  CHECK(sizes.front() == 256);  // four whole parts
  CHECK(g.chunk_first[1] == 4);
  CHECK(sizes.size() < 32);     // per part: 16 x 15 chunks
  for (size_t c = 1; c < sizes.size(); ++c) CHECK(sizes[c] <= sizes[c - 1]);
  CHECK(std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) == 1024);
}

TEST_CASE("guided_pieces: units are weighed by their work, and empty parts are skipped") {
  // Part 1's units are 10 times the work of part 0's (an expert with 10 tokens, one with 1).
  GuidedPieces g;
  const std::vector<int64_t> units{40, 0, 40, 3}, work{1, 7, 10, 5};
  guided_pieces(units, work, 2, g);
  const std::vector<int64_t> sizes = check_cover(g, units, work);
  const int64_t total = 40 + 400 + 15;
  CHECK(std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) == total);
  // The first chunk asks for a quarter of the work (113): all of part 0 and 8 units of part 2
  // (the first that reach it), not a quarter of the units.
  REQUIRE(g.chunk_first[1] == 2);
  CHECK(g.pieces[0].part == 0);
  CHECK(g.pieces[1].part == 2);
  CHECK(g.pieces[1].end == 8);
  CHECK(sizes[0] == 120);
  // No chunk asks for more than a quarter of the work left: it overshoots by less than a unit.
  int64_t left = total;
  for (int64_t s : sizes) {
    CHECK(s < std::max<int64_t>(1, left / 4) + 10);
    left -= s;
  }
}

TEST_CASE("guided_pieces: more threads, smaller chunks; one thread, still guided") {
  for (int nth : {1, 3, 8}) {
    GuidedPieces g;
    const std::vector<int64_t> units{5, 100, 1, 37}, work{3, 3, 3, 3};
    guided_pieces(units, work, nth, g);
    const std::vector<int64_t> sizes = check_cover(g, units, work);
    CHECK(sizes.front() <= std::max<int64_t>(3, 143 * 3 / (2 * nth)) + 3);
    CHECK(sizes.back() == 3);  // the tail ends one unit at a time
  }
}
