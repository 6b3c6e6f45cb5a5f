#include "grammar/matcher.h"

#include <algorithm>

#include "util/error.h"

namespace ember::grammar {

Matcher::Matcher(std::shared_ptr<const Grammar> g) : grammar_(std::move(g)), pushdown_(*grammar_) {
  const bool accepted = pushdown_.start(stacks_);
  history_.push_back(State{0, stacks_.size(), pushdown_.arena_size(), accepted});
}

bool Matcher::accept(std::string_view bytes) {
  const State from = history_.back();
  size_t begin = from.begin, end = from.end;
  bool accepted = from.accepted;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const size_t next = stacks_.size();
    accepted = pushdown_.advance(stacks_, begin, end, static_cast<uint8_t>(bytes[i]), stacks_);
    // Only the last state is kept: the new stacks move down over the intermediate ones.
    if (next != from.end) {
      std::copy(stacks_.begin() + static_cast<ptrdiff_t>(next), stacks_.end(),
                stacks_.begin() + static_cast<ptrdiff_t>(from.end));
      stacks_.resize(from.end + (stacks_.size() - next));
    }
    begin = from.end;
    end = stacks_.size();
    // No stack left: rejected, unless the input just completed with this last byte.
    if (begin == end && (!accepted || i + 1 < bytes.size())) {
      stacks_.resize(from.end);
      pushdown_.cut_arena(from.arena);
      return false;
    }
  }
  history_.push_back(State{begin, end, pushdown_.arena_size(), accepted});
  return true;
}

void Matcher::rollback(size_t n) {
  if (n > steps()) fail(ErrorKind::Internal, "grammar rollback of {} steps, {} taken", n, steps());
  history_.resize(history_.size() - n);
  const State& s = history_.back();
  stacks_.resize(s.end);
  pushdown_.cut_arena(s.arena);
}

}  // namespace ember::grammar
