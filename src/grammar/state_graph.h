// The pushdown automaton's states, interned and linked as they are met: a state is a set
// of stacks (pushdown.h) named by its canonical key, and its transition on a byte is
// computed once and then read from a table. Following a token's bytes, or walking the
// whole token trie for a mask, becomes table lookups wherever the output has been before
// (inside a JSON string every character leads back to the same state). Shared by every
// matcher of one grammar; callers hold lock() around next().
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/pushdown.h"

namespace ember::grammar {

class StateGraph {
 public:
  static constexpr int32_t kDead = -1;
  // States at most (each holds a 256-entry transition row): an output nested deeper than
  // this allows is refused with Error(InvalidArgument).
  static constexpr size_t kMaxStates = size_t{1} << 15;

  explicit StateGraph(std::shared_ptr<const Grammar> grammar);

  std::unique_lock<std::mutex> lock() const { return std::unique_lock(mutex_); }
  static constexpr int32_t start() { return 0; }
  // The state after `byte` (kDead when the grammar refuses it). Needs lock().
  int32_t next(int32_t state, uint8_t byte) {
    const int32_t known = next_[static_cast<size_t>(state) * 256 + byte];
    return known != kUnknown ? known : compute(state, byte);
  }
  bool accepted(int32_t state) const { return states_[static_cast<size_t>(state)].accepted; }  // complete input
  bool alive(int32_t state) const {  // some byte may still follow
    const State& s = states_[static_cast<size_t>(state)];
    return s.end > s.begin;
  }
  size_t size() const { return states_.size(); }
  const Grammar& grammar() const { return *grammar_; }

 private:
  static constexpr int32_t kUnknown = -2;
  struct State {
    uint32_t begin, end;  // its stacks in stacks_
    bool accepted;
  };
  int32_t compute(int32_t state, uint8_t byte);
  int32_t intern(size_t begin, bool accepted);  // the stacks at stacks_[begin, end)

  std::shared_ptr<const Grammar> grammar_;
  Pushdown pushdown_;
  std::vector<uint32_t> stacks_;
  std::vector<State> states_;
  std::vector<int32_t> next_;  // states_.size() * 256
  std::unordered_map<std::string, int32_t> ids_;
  mutable std::mutex mutex_;
};

}  // namespace ember::grammar
