#include "grammar/grammar_checks.h"

#include <utility>

#include "util/error.h"

namespace ember::grammar {

std::vector<bool> nullable_rules(const Grammar& g) {
  std::vector<bool> nullable(g.rules.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < g.rules.size(); ++r) {
      if (nullable[r]) continue;
      for (uint32_t at : g.rules[r].alternatives) {
        size_t i = at;
        while (g.elements[i].kind == ElementKind::Rule && nullable[g.elements[i].value]) ++i;
        if (g.elements[i].kind == ElementKind::End) {
          nullable[r] = changed = true;
          break;
        }
      }
    }
  }
  return nullable;
}

namespace {

// Rules each rule can start with: those referenced before its first byte.
std::vector<std::vector<uint32_t>> leftmost_rules(const Grammar& g, const std::vector<bool>& nullable) {
  std::vector<std::vector<uint32_t>> edges(g.rules.size());
  for (size_t r = 0; r < g.rules.size(); ++r)
    for (uint32_t at : g.rules[r].alternatives)
      for (size_t i = at; g.elements[i].kind == ElementKind::Rule; ++i) {
        edges[r].push_back(g.elements[i].value);
        if (!nullable[g.elements[i].value]) break;
      }
  return edges;
}

}  // namespace

// Depth-first search for a cycle over the leftmost edges, with an explicit stack (grammars
// may have very many rules).
void check_left_recursion(const Grammar& g) {
  const auto edges = leftmost_rules(g, nullable_rules(g));
  enum : uint8_t { Unseen, Open, Done };
  std::vector<uint8_t> state(g.rules.size(), Unseen);
  std::vector<std::pair<uint32_t, size_t>> stack;
  for (uint32_t start = 0; start < g.rules.size(); ++start) {
    if (state[start] != Unseen) continue;
    stack.emplace_back(start, 0);
    state[start] = Open;
    while (!stack.empty()) {
      auto& [r, next] = stack.back();
      if (next == edges[r].size()) {
        state[r] = Done;
        stack.pop_back();
        continue;
      }
      const uint32_t to = edges[r][next++];
      if (state[to] == Open) fail(ErrorKind::InvalidArgument, "grammar: rule '{}' is left-recursive", g.rules[to].name);
      if (state[to] == Unseen) {
        state[to] = Open;
        stack.emplace_back(to, 0);
      }
    }
  }
}

}  // namespace ember::grammar
