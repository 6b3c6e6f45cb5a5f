#include "grammar/pushdown.h"

#include <algorithm>

#include "util/error.h"

namespace ember::grammar {

uint32_t Pushdown::frame(uint32_t pos, uint32_t parent) {
  frames_.push_back(Frame{pos, parent});
  return static_cast<uint32_t>(frames_.size() - 1);
}

// The grammar has no left recursion (grammar_checks.h), so this terminates. A reference in
// last place returns straight to the caller's parent (tail call): right-recursive
// repetitions keep the stacks flat.
bool Pushdown::close(uint32_t pos, uint32_t parent, std::vector<uint32_t>& out, size_t first) {
  const Element e = g_->elements[pos];
  switch (e.kind) {
    case ElementKind::Bytes: {
      for (size_t i = first; i < out.size(); ++i)  // the same stack reached twice
        if (frames_[out[i]].pos == pos && frames_[out[i]].parent == parent) return false;
      if (out.size() - first >= kMaxStacks)
        fail(ErrorKind::InvalidArgument, "grammar: more than {} parses at once (too ambiguous)", kMaxStacks);
      out.push_back(frame(pos, parent));
      return false;
    }
    case ElementKind::Rule: {
      uint32_t ret = parent;
      if (g_->elements[pos + 1].kind != ElementKind::End) ret = frame(pos + 1, parent);
      bool accepted = false;
      for (uint32_t alt : g_->rules[e.value].alternatives) accepted |= close(alt, ret, out, first);
      return accepted;
    }
    case ElementKind::End: {
      if (parent == kNoFrame) return true;
      const Frame f = frames_[parent];
      return close(f.pos, f.parent, out, first);
    }
  }
  return false;
}

bool Pushdown::start(std::vector<uint32_t>& out) {
  bool accepted = false;
  const size_t first = out.size();
  for (uint32_t alt : g_->rules[g_->root].alternatives) accepted |= close(alt, kNoFrame, out, first);
  return accepted;
}

bool Pushdown::advance(const std::vector<uint32_t>& in, size_t begin, size_t end, uint8_t byte,
                       std::vector<uint32_t>& out) {
  bool accepted = false;
  const size_t first = out.size();
  for (size_t i = begin; i < end; ++i) {
    const Frame f = frames_[in[i]];
    if (!g_->sets[g_->elements[f.pos].value].has(byte)) continue;
    accepted |= close(f.pos + 1, f.parent, out, first);
  }
  return accepted;
}

std::string Pushdown::key(std::span<const uint32_t> stacks) const {
  std::vector<std::string> parts;
  for (uint32_t s : stacks) {
    std::string part;
    for (uint32_t f = s; f != kNoFrame; f = frames_[f].parent)
      part.append(reinterpret_cast<const char*>(&frames_[f].pos), sizeof(uint32_t));
    parts.push_back(std::move(part));
  }
  std::sort(parts.begin(), parts.end());
  std::string k;
  for (const std::string& p : parts) {
    k += p;
    k.append(4, '\xff');
  }
  return k;
}

}  // namespace ember::grammar
