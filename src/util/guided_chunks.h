// The split of an op's work into chunks that threads take in order from a shared counter
// (guided scheduling): each chunk is 1/(2 nth) of the work left, at least one unit, so the
// first chunks are long streams and the threads finish within a short chunk of each other,
// and a thread that is descheduled or slower leaves its chunks to the others. Used by the
// matmul driver (backend/cpu/matmul.cpp) and by the read that imitates it (util/membw.cpp).
#pragma once
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace ember {

// Guided chunks over several parts laid end to end (the matrices of one dispatch), so that
// the chunks run through the parts instead of restarting in each: a dispatch of many small
// matrices (a MoE layer's experts) then has a few long chunks and one short tail, where
// guided chunks per part would give each part its own tail of short chunks, each a stream
// the prefetchers must pick up again. Part p has units[p] units of unit_work[p] work each (a
// unit is never split; work weighs the units of parts with more tokens): every chunk is
// about 1/(2 nth) of the work left, at least one unit.
struct ChunkPiece {
  int part;
  int64_t begin, end;  // units of the part
};
struct GuidedPieces {
  std::vector<ChunkPiece> pieces;  // in order: the parts' units end to end
  std::vector<int> chunk_first;    // chunk c is pieces [chunk_first[c], chunk_first[c + 1])
  int chunks() const { return static_cast<int>(chunk_first.size()) - 1; }
};

// Fills `out` (its vectors reused); parts with no unit are left out.
inline void guided_pieces(std::span<const int64_t> units, std::span<const int64_t> unit_work, int nth,
                          GuidedPieces& out) {
  out.pieces.clear();
  out.chunk_first.assign(1, 0);
  int64_t left = 0;  // work
  for (size_t p = 0; p < units.size(); ++p) left += units[p] * unit_work[p];
  size_t p = 0;
  int64_t u = 0;  // the next unit of part p
  while (left > 0) {
    int64_t want = std::max<int64_t>(1, left / (2 * nth));
    while (want > 0 && left > 0) {
      while (u == units[p]) ++p, u = 0;
      const int64_t take = std::min(units[p] - u, (want + unit_work[p] - 1) / unit_work[p]);
      out.pieces.push_back({static_cast<int>(p), u, u + take});
      u += take;
      want -= take * unit_work[p];
      left -= take * unit_work[p];
    }
    out.chunk_first.push_back(static_cast<int>(out.pieces.size()));
  }
}

}  // namespace ember
