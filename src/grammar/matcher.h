// Follows one output through a grammar, byte by byte, and can undo: each accepted piece of
// input (a token's bytes) is one step of history, and rollback(n) returns to the state n
// steps back (a rejected speculative draft, a trial of drafted tokens). The states and
// their transitions live in a StateGraph, shared by every matcher of the grammar.
#pragma once
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/state_graph.h"

namespace ember::grammar {

class Matcher {
 public:
  explicit Matcher(std::shared_ptr<const Grammar> g);  // with a graph of its own
  explicit Matcher(std::shared_ptr<StateGraph> graph);

  // Takes `bytes` if the grammar allows them from here (one history step) and returns true;
  // otherwise returns false and nothing changes. Throws Error(InvalidArgument) when the
  // grammar is too ambiguous or nests too deep to follow (pushdown.h, state_graph.h).
  bool accept(std::string_view bytes);
  // Undoes the last n accepted steps (n <= steps()).
  void rollback(size_t n);
  size_t steps() const { return history_.size() - 1; }

  bool can_end() const;       // the input so far is complete
  bool can_continue() const;  // some byte may follow
  int32_t state() const { return history_.back(); }
  StateGraph& graph() { return *graph_; }

 private:
  std::shared_ptr<StateGraph> graph_;
  std::vector<int32_t> history_;  // [0]: the start
};

}  // namespace ember::grammar
