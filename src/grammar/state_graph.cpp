#include "grammar/state_graph.h"

#include <span>

#include "util/error.h"

namespace ember::grammar {

StateGraph::StateGraph(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)), pushdown_(*grammar_) {
  const bool accepted = pushdown_.start(stacks_);
  intern(0, accepted);
}

// A new state's stacks were appended to stacks_ from `begin`: the existing state with the
// same key takes their place (they are dropped), or they become a new state.
int32_t StateGraph::intern(size_t begin, bool accepted) {
  std::string key = pushdown_.key(std::span<const uint32_t>(stacks_).subspan(begin));
  key += accepted ? 'A' : 'a';
  if (auto it = ids_.find(key); it != ids_.end()) {
    stacks_.resize(begin);
    return it->second;
  }
  if (states_.size() >= kMaxStates)
    fail(ErrorKind::InvalidArgument, "grammar: more than {} parser states (the output nests too deep)", kMaxStates);
  const auto id = static_cast<int32_t>(states_.size());
  states_.push_back(State{static_cast<uint32_t>(begin), static_cast<uint32_t>(stacks_.size()), accepted});
  next_.resize(next_.size() + 256, kUnknown);
  ids_.emplace(std::move(key), id);
  return id;
}

int32_t StateGraph::compute(int32_t state, uint8_t byte) {
  const State s = states_[static_cast<size_t>(state)];
  const size_t begin = stacks_.size();
  const bool accepted = pushdown_.advance(stacks_, s.begin, s.end, byte, stacks_);
  int32_t to = kDead;
  if (stacks_.size() > begin || accepted) to = intern(begin, accepted);
  else stacks_.resize(begin);
  next_[static_cast<size_t>(state) * 256 + byte] = to;
  return to;
}

}  // namespace ember::grammar
