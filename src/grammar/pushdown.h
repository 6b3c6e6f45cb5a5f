// The byte-level pushdown automaton under the matcher and the token mask. A parse in
// progress is a stack of frames, each a position in the grammar's elements; its top frame
// always points at a byte set (the next byte it needs). A state holds every stack the
// input so far allows (an ambiguous grammar gives several). Frames live in an arena and
// point to their parent, so stacks share their bottoms; they are hash-consed (one frame per
// (position, parent)), so equal stacks are the same frame id and a set of stacks is named
// by its sorted ids.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"

namespace ember::grammar {

inline constexpr uint32_t kNoFrame = UINT32_MAX;

struct Frame {
  uint32_t pos;     // next element of this frame
  uint32_t parent;  // the frame to return to, kNoFrame at the bottom
};

// More stacks than this at once means a grammar too ambiguous to follow: an error, not a
// slowdown without end.
inline constexpr size_t kMaxStacks = 512;

class Pushdown {
 public:
  explicit Pushdown(const Grammar& g) : g_(&g) {}

  // Appends the stacks at the start of the grammar to `out`; returns whether the empty
  // input is accepted.
  bool start(std::vector<uint32_t>& out);
  // Appends to `out` the stacks that follow in[begin, end) after `byte`; returns whether
  // the input is then complete (some stack emptied). `in` may be `out` (read by index, so
  // growing it is safe). Throws Error(InvalidArgument) past kMaxStacks.
  bool advance(const std::vector<uint32_t>& in, size_t begin, size_t end, uint8_t byte,
               std::vector<uint32_t>& out);

  size_t arena_size() const { return frames_.size(); }

  // A canonical name of a set of stacks (their sorted frame ids), equal for equal sets.
  std::string key(std::span<const uint32_t> stacks) const;
  const Grammar& grammar() const { return *g_; }
  bool needs(uint32_t stack, uint8_t byte) const {
    return g_->sets[g_->elements[frames_[stack].pos].value].has(byte);
  }

 private:
  uint32_t frame(uint32_t pos, uint32_t parent);
  // Expands a frame at `pos` until every stack's top is a byte set; true when one empties.
  bool close(uint32_t pos, uint32_t parent, std::vector<uint32_t>& out, size_t first);

  const Grammar* g_;
  std::vector<Frame> frames_;
  std::unordered_map<uint64_t, uint32_t> index_;  // (pos, parent) -> frame id
};

}  // namespace ember::grammar
