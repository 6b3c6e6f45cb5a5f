#include "grammar/pushdown.h"

#include <algorithm>

#include "util/error.h"

namespace ember::grammar {

uint32_t Pushdown::frame(uint32_t pos, uint32_t parent) {
  const auto [it, added] = index_.try_emplace((uint64_t{pos} << 32) | parent, static_cast<uint32_t>(frames_.size()));
  if (added) frames_.push_back(Frame{pos, parent});
  return it->second;
}

// The grammar has no left recursion (grammar_checks.h), so this terminates. A reference in
// last place returns straight to the caller's parent (tail call): right-recursive
// repetitions keep the stacks flat.
bool Pushdown::close(uint32_t pos, uint32_t parent, std::vector<uint32_t>& out, size_t first) {
  const Element e = g_->elements[pos];
  switch (e.kind) {
    case ElementKind::Bytes: {
      const uint32_t f = frame(pos, parent);
      for (size_t i = first; i < out.size(); ++i)  // the same stack reached twice
        if (out[i] == f) return false;
      if (out.size() - first >= kMaxStacks)
        fail(ErrorKind::InvalidArgument, "grammar: more than {} parses at once (too ambiguous)", kMaxStacks);
      out.push_back(f);
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
  std::vector<uint32_t> ids(stacks.begin(), stacks.end());
  std::sort(ids.begin(), ids.end());
  return std::string(reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof(uint32_t));
}

}  // namespace ember::grammar
