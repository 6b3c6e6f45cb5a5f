#include "grammar/grammar_cache.h"

#include <algorithm>
#include <list>
#include <mutex>

#include "grammar/gbnf_parser.h"
#include "tokenizer/tokenizer.h"

namespace ember::grammar {
namespace {

constexpr size_t kKept = 16;  // each may hold up to 32 MiB of states and 32 MiB of masks

struct Entry {
  std::string text;
  std::shared_ptr<const Grammar> grammar;
  const Vocab* vocab = nullptr;
  std::shared_ptr<const TokenGrammar> bound;
};

std::mutex mutex;
std::list<Entry> entries;  // most recently used first

}  // namespace

std::shared_ptr<const Grammar> compiled_grammar(const std::string& gbnf) {
  {
    std::lock_guard lock(mutex);
    for (auto it = entries.begin(); it != entries.end(); ++it)
      if (it->text == gbnf) {
        entries.splice(entries.begin(), entries, it);
        return it->grammar;
      }
  }
  auto g = std::make_shared<const Grammar>(parse_gbnf(gbnf));  // outside the lock: may take a while
  std::lock_guard lock(mutex);
  entries.push_front(Entry{gbnf, g, nullptr, nullptr});
  if (entries.size() > kKept) entries.pop_back();
  return g;
}

std::shared_ptr<const TokenGrammar> token_grammar(const std::shared_ptr<const Grammar>& grammar, const Tokenizer& tok) {
  std::lock_guard lock(mutex);
  auto it = std::find_if(entries.begin(), entries.end(), [&](const Entry& e) { return e.grammar == grammar; });
  // A graph near its state bound is left to the requests using it; new ones start afresh.
  auto roomy = [](const TokenGrammar& g) {
    const auto graph_lock = g.graph()->lock();
    return g.graph()->size() < StateGraph::kMaxStates / 2;
  };
  if (it != entries.end() && it->vocab == &tok.vocab() && it->bound && roomy(*it->bound)) return it->bound;
  auto bound = std::make_shared<const TokenGrammar>(grammar, TokenTrie::of(tok));
  if (it != entries.end()) {
    it->vocab = &tok.vocab();
    it->bound = bound;
  }
  return bound;
}

}  // namespace ember::grammar
