// --grammar FILE and --json-schema FILE|JSON for `run` and `chat`: the output constrained to
// a GBNF grammar or to a JSON schema (engine/output_constraint.h, grammar/).
#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

namespace ember {
class Tokenizer;
namespace grammar {
class TokenGrammar;
struct Grammar;
}  // namespace grammar
}  // namespace ember

namespace ember::cli {

struct GrammarFlags {
  std::string grammar_file;
  std::string json_schema;  // a file, or the schema itself when it starts with '{'
};

void add_grammar_flags(CLI::App* cmd, GrammarFlags& flags);

// The grammar the flags ask for, compiled (before the model loads, so a bad one costs
// nothing); null for none. Throws Error(InvalidArgument) with the one line the CLI prints
// (file, line and column, keyword).
std::shared_ptr<const grammar::Grammar> grammar_from_flags(const GrammarFlags& flags);
// The grammar bound to the vocabulary (null stays null).
std::shared_ptr<const grammar::TokenGrammar> bind_grammar(const std::shared_ptr<const grammar::Grammar>& g,
                                                          const Tokenizer& tok);
// Both at once.
std::shared_ptr<const grammar::TokenGrammar> grammar_constraint(const GrammarFlags& flags, const Tokenizer& tok);

}  // namespace ember::cli
