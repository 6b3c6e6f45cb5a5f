// Compiled grammars shared by the requests that use the same one: the compile is done once
// per grammar text, and the token masks (token_grammar.h) are cached once per grammar and
// vocabulary, so the second request with a schema starts with every mask the first one
// computed. A few recent grammars are kept (least recently used goes first).
#pragma once
#include <memory>
#include <string>

#include "grammar/grammar.h"
#include "grammar/token_grammar.h"

namespace ember {
class Tokenizer;
}

namespace ember::grammar {

// parse_gbnf(gbnf), or the same text's earlier result. Throws what parse_gbnf throws.
std::shared_ptr<const Grammar> compiled_grammar(const std::string& gbnf);

// The grammar bound to the tokenizer's vocabulary (its token trie and mask cache).
std::shared_ptr<const TokenGrammar> token_grammar(const std::shared_ptr<const Grammar>& grammar, const Tokenizer& tok);

}  // namespace ember::grammar
