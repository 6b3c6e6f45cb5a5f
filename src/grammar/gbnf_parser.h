// GBNF, llama.cpp's grammar dialect, to a byte-level Grammar:
//   name ::= alternatives          one rule per line; `root` is the start
//   "literal" [a-z0-9] [^"\\] .    characters are Unicode code points (\x \u \U \t \n \r escapes)
//   name ( ... ) | * + ? {m} {m,} {m,n}
//   # comment
// Token references (<...>, !<...>) are refused: ember's grammars work over bytes.
#pragma once
#include <string_view>

#include "grammar/grammar.h"

namespace ember::grammar {

// Throws Error(InvalidArgument) "grammar line L column C: what" for a syntax error, and
// naming the rule for an undefined or left-recursive one.
Grammar parse_gbnf(std::string_view text, std::string_view root = "root");

}  // namespace ember::grammar
