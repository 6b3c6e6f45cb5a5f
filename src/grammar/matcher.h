// Follows one output through a grammar, byte by byte, and can undo: each accepted piece of
// input (a token's bytes) is one step of history, and rollback(n) returns to the state n
// steps back (a rejected speculative draft, a trial of drafted tokens).
#pragma once
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/pushdown.h"

namespace ember::grammar {

class Matcher {
 public:
  explicit Matcher(std::shared_ptr<const Grammar> g);
  Matcher(const Matcher&) = delete;
  Matcher& operator=(const Matcher&) = delete;

  // Takes `bytes` if the grammar allows them from here (one history step) and returns true;
  // otherwise returns false and nothing changes.
  bool accept(std::string_view bytes);
  // Undoes the last n accepted steps (n <= steps()).
  void rollback(size_t n);
  size_t steps() const { return history_.size() - 1; }

  bool can_end() const { return history_.back().accepted; }  // the input so far is complete
  bool can_continue() const { return history_.back().end > history_.back().begin; }

  // The current stacks (in stacks()), for the token mask.
  const std::vector<uint32_t>& stack_buffer() const { return stacks_; }
  size_t stacks_begin() const { return history_.back().begin; }
  size_t stacks_end() const { return history_.back().end; }
  Pushdown& pushdown() { return pushdown_; }
  const Grammar& grammar() const { return *grammar_; }

 private:
  struct State {
    size_t begin, end;  // its stacks in stacks_
    size_t arena;       // the arena's size after it
    bool accepted;
  };
  std::shared_ptr<const Grammar> grammar_;
  Pushdown pushdown_;
  std::vector<uint32_t> stacks_;  // every state's stacks, in history order
  std::vector<State> history_;    // [0]: the start
};

}  // namespace ember::grammar
