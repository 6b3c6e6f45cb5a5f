// Checks that keep the matcher finite. A left-recursive rule (one that can reach itself
// without consuming a byte) would expand forever; GBNF grammars write repetition with
// * + ? {m,n} instead, as llama.cpp also requires.
#pragma once
#include <vector>

#include "grammar/grammar.h"

namespace ember::grammar {

// Per rule: whether it matches the empty string.
std::vector<bool> nullable_rules(const Grammar& g);

// Throws Error(InvalidArgument) naming a left-recursive rule.
void check_left_recursion(const Grammar& g);

}  // namespace ember::grammar
