// `ember bench-grammar`: what constrained decoding costs on the CPU per token, apart from
// the model: the grammar's compile, the first mask for a new grammar, and the mask + accept
// of each token of a document in the language, first with an empty mask cache (every state
// walked over the token trie) and again with the cache the first pass filled (what later
// requests with the same schema pay). Compare the per-token cost with a decode step's time.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "cli/commands.h"
#include "cli/grammar_flags.h"
#include "gguf/gguf.h"
#include "grammar/token_matcher.h"
#include "grammar/token_trie.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/mmap.h"

namespace ember::cli {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

struct BenchGrammarFlags {
  std::string model;
  GrammarFlags grammar;
  std::string text;  // a document in the language, or @FILE
};

struct PassTimes {
  double median_us = 0, mean_us = 0, max_us = 0;
};

// mask() then accept() for each token, as the scheduler does per generated token.
PassTimes pass(const std::shared_ptr<const grammar::TokenGrammar>& g, const std::vector<int32_t>& ids, int n_vocab) {
  grammar::TokenMatcher m(g);
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  PassTimes t;
  std::vector<double> all;
  for (int32_t id : ids) {
    std::fill(logits.begin(), logits.end(), 0.0f);
    const Clock::time_point start = Clock::now();
    m.mask(logits, {});
    if (!m.accept(id)) fail(ErrorKind::InvalidArgument, "--text leaves the language at token {}", id);
    const double us = ms_since(start) * 1000.0;
    t.mean_us += us / static_cast<double>(ids.size());
    t.max_us = std::max(t.max_us, us);
    all.push_back(us);
  }
  if (!all.empty()) {
    std::nth_element(all.begin(), all.begin() + static_cast<ptrdiff_t>(all.size() / 2), all.end());
    t.median_us = all[all.size() / 2];
  }
  return t;
}

int run_bench_grammar(const BenchGrammarFlags& f) {
  const gguf::File file = gguf::File::open(f.model);
  const Tokenizer tok = Tokenizer::from_gguf(file);
  Clock::time_point t = Clock::now();
  const auto trie = grammar::TokenTrie::of(tok);
  const double trie_ms = ms_since(t);
  t = Clock::now();
  const auto g = grammar_constraint(f.grammar, tok);
  const double compile_ms = ms_since(t);
  if (!g) fail(ErrorKind::InvalidArgument, "give --grammar or --json-schema");
  t = Clock::now();
  {
    grammar::TokenMatcher m(g);
    std::vector<float> logits(static_cast<size_t>(tok.n_vocab()));
    m.mask(logits, {});
  }
  const double first_mask_ms = ms_since(t);
  const std::string text = f.text.starts_with("@") ? read_text_file(f.text.substr(1)) : f.text;
  const std::vector<int32_t> ids = tok.encode(text, false, false);
  const PassTimes cold = pass(g, ids, tok.n_vocab());
  const PassTimes warm = pass(g, ids, tok.n_vocab());
  fmt::print("vocabulary {} tokens, trie {} nodes built in {:.1f} ms (once per vocabulary)\n", tok.n_vocab(),
             trie->nodes().size(), trie_ms);
  fmt::print("compile {:.2f} ms, first mask {:.2f} ms, compile + first mask {:.2f} ms\n", compile_ms, first_mask_ms,
             compile_ms + first_mask_ms);
  fmt::print("{} tokens, mask+accept per token (median / mean / max us): empty cache {:.1f} / {:.1f} / {:.1f}; "
             "filled cache {:.1f} / {:.1f} / {:.1f}; {} masks cached\n",
             ids.size(), cold.median_us, cold.mean_us, cold.max_us, warm.median_us, warm.mean_us, warm.max_us,
             g->cached_masks());
  return 0;
}

}  // namespace

void add_bench_grammar(CLI::App& app) {
  auto flags = std::make_shared<BenchGrammarFlags>();
  CLI::App* cmd = app.add_subcommand("bench-grammar", "Time constrained decoding's masks on a model's vocabulary");
  cmd->add_option("-m,--model", flags->model, "GGUF whose vocabulary is used")->required();
  add_grammar_flags(cmd, flags->grammar);
  cmd->add_option("--text", flags->text, "a document in the language (or @FILE), fed token by token")->required();
  cmd->callback([flags] { set_exit_code(guarded("bench-grammar", [&] { return run_bench_grammar(*flags); })); });
}

}  // namespace ember::cli
