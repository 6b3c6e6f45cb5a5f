#include "cli/grammar_flags.h"

#include "engine/output_constraint.h"
#include "grammar/grammar_cache.h"
#include "util/error.h"
#include "util/json.h"
#include "util/mmap.h"

namespace ember::cli {

void add_grammar_flags(CLI::App* cmd, GrammarFlags& flags) {
  cmd->add_option("--grammar", flags.grammar_file, "constrain the output to a GBNF grammar (llama.cpp's dialect) in FILE");
  cmd->add_option("--json-schema", flags.json_schema,
                  "constrain the output to JSON matching a schema: a FILE, or the schema itself ({...})");
}

std::shared_ptr<const grammar::Grammar> grammar_from_flags(const GrammarFlags& flags) {
  if (!flags.grammar_file.empty() && !flags.json_schema.empty())
    fail(ErrorKind::InvalidArgument, "give at most one of --grammar and --json-schema");
  std::shared_ptr<const grammar::Grammar> g;
  if (!flags.grammar_file.empty()) {
    try {
      g = grammar::compiled_grammar(read_text_file(flags.grammar_file));
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::InvalidArgument) throw;
      fail(ErrorKind::InvalidArgument, "{}: {}", flags.grammar_file, e.what());
    }
  } else if (!flags.json_schema.empty()) {
    const size_t first = flags.json_schema.find_first_not_of(" \t\r\n");
    const bool inline_json = first != std::string::npos && flags.json_schema[first] == '{';
    const std::string source = inline_json ? "--json-schema" : flags.json_schema;
    const std::string text = inline_json ? flags.json_schema : read_text_file(flags.json_schema);
    try {
      g = json_schema_constraint(json::parse(text, source));
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::Io) throw;
      fail(ErrorKind::InvalidArgument, "{}: {}", source, e.what());
    }
  }
  return g;
}

std::shared_ptr<const grammar::TokenGrammar> bind_grammar(const std::shared_ptr<const grammar::Grammar>& g,
                                                          const Tokenizer& tok) {
  return g ? grammar::token_grammar(g, tok) : nullptr;
}

std::shared_ptr<const grammar::TokenGrammar> grammar_constraint(const GrammarFlags& flags, const Tokenizer& tok) {
  return bind_grammar(grammar_from_flags(flags), tok);
}

}  // namespace ember::cli
