// Constrained decoding end to end, on a synth model (random weights) with GPT-2's 50257-token
// byte-level vocabulary: every sampled output (temperature 1, many seeds, batched) is in the
// schema's language and parses as JSON; a constrained request gives bitwise the same tokens
// alone and batched with others; greedy output is the same with n-gram drafting (drafts
// checked against the grammar, rejected ones rolled back); a grammar the vocabulary cannot
// follow ends the sequence with its finish reason instead of hanging.
#include <doctest/doctest.h>

#include <map>
#include <optional>

#include "convert_test_util.h"
#include "engine/scheduler.h"
#include "grammar/gbnf_parser.h"
#include "grammar/grammar_cache.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "models/model_support.h"
#include "synth/synth.h"
#include "tokenizer/tokenizer.h"
#include "util/json.h"

using namespace ember;
using namespace ember::test;

namespace {

struct SynthGpt2 {
  TempDir dir{"grammar-e2e"};
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tok;
  SynthGpt2() {
    ThreadPool pool(2);
    synth::SynthOptions o;
    o.shape = synth::default_shape(require_arch("llama"));
    o.shape.n_embd = 64;
    o.shape.n_layer = 2;
    o.shape.n_head = 4;
    o.shape.n_head_kv = 2;
    o.shape.head_dim = 16;
    o.shape.n_ff = 128;
    o.shape.n_ctx = 512;
    o.shape.tied_embeddings = true;
    o.vocab_path = shared_path("vocab/ggml-vocab-gpt-2.gguf");
    o.type = quantize::parse_file_type("f32");
    o.seed = 3;
    const std::string path = dir.file("gpt2-synth.gguf");
    synth::synth_model(o, path, &pool);
    model = Model::load(path, {.print_plan = false});
    tok = std::make_unique<Tokenizer>(Tokenizer::from_gguf(model->gguf()));
  }
};

SynthGpt2& synth_gpt2() {
  static SynthGpt2 m;
  return m;
}

// Bounded everywhere, so a random model ends well within max_tokens.
const char* kSchema = R"({"type":"object","properties":{
  "name":{"type":"string","maxLength":12},
  "kind":{"enum":["cat","dog",null]},
  "age":{"type":"integer"},
  "tags":{"type":"array","items":{"type":"string","pattern":"[a-z]{1,5}"},"maxItems":3},
  "owner":{"anyOf":[{"type":"null"},{"$ref":"#/$defs/person"}]}},
  "required":["name","kind"],
  "$defs":{"person":{"type":"object","properties":{"id":{"type":"string","format":"uuid"},"ok":{"type":"boolean"}},"required":["id"]}}})";

struct Outputs {
  std::map<int, std::vector<int32_t>> tokens;
  std::map<int, FinishReason> reasons;
  SchedulerStats stats;
};

// With draft.model, the model drafts for itself from a second context.
Outputs run(const std::vector<SequenceRequest>& reqs, int n_par, const SequenceDrafting& draft = {}) {
  SynthGpt2& m = synth_gpt2();
  ThreadPool pool(2);
  ContextOptions o = options(n_par);
  o.n_ctx = 512;
  Context ctx(*m.model, o, pool);
  std::optional<Context> draft_ctx;
  SchedulerOptions so{n_par, 0};
  if (draft.model) so.draft = &draft_ctx.emplace(*m.model, o, pool);
  Outputs out;
  Scheduler sched(ctx, so,
                  Scheduler::Events{[&](int id, int32_t t) { out.tokens[id].push_back(t); },
                                    [&](int id, const SequenceEnd& e) { out.reasons[id] = e.reason; }});
  for (SequenceRequest r : reqs) {
    r.draft = draft;
    sched.submit(std::move(r));
  }
  sched.run();
  out.stats = sched.stats();
  return out;
}

std::vector<SequenceRequest> requests(const std::string& gbnf, int n, float temperature) {
  SynthGpt2& m = synth_gpt2();
  auto tg = grammar::token_grammar(grammar::compiled_grammar(gbnf), *m.tok);
  std::vector<SequenceRequest> out;
  for (int i = 0; i < n; ++i) {
    SequenceRequest r;
    r.prompt = m.tok->encode("Reply in JSON " + std::to_string(i) + ":", false, false);
    r.max_tokens = 300;
    r.sampling.temperature = temperature;
    r.sampling.top_k = 0;
    r.sampling.top_p = 1.0f;
    r.sampling.min_p = 0.0f;
    r.sampling.seed = 100 + static_cast<uint64_t>(i);
    r.stop_tokens = m.tok->eog_ids();
    r.grammar = tg;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

TEST_CASE("every sampled constrained output is in the schema's language and parses") {
  SynthGpt2& m = synth_gpt2();
  const std::string gbnf = grammar::json_schema_to_gbnf(json::parse(kSchema, "schema"));
  auto g = grammar::compiled_grammar(gbnf);
  const Outputs out = run(requests(gbnf, 24, 1.0f), 4);
  REQUIRE(out.tokens.size() == 24);
  for (const auto& [id, tokens] : out.tokens) {
    const std::string text = m.tok->decode(tokens);
    CAPTURE(text);
    CHECK(out.reasons.at(id) == FinishReason::Stop);
    grammar::Matcher matcher(g);
    CHECK(matcher.accept(text));
    CHECK(matcher.can_end());
    json::Value v;
    CHECK_NOTHROW(v = json::parse(text, "output"));
    CHECK(v.is_object());
    CHECK(json::find(v, "name"));
    CHECK(json::find(v, "kind"));
  }
}

TEST_CASE("a constrained request gives bitwise the same tokens alone and batched") {
  const std::string gbnf = grammar::json_schema_to_gbnf(json::parse(kSchema, "schema"));
  std::vector<SequenceRequest> reqs = requests(gbnf, 6, 1.0f);
  // Unconstrained neighbours in the batch too.
  std::vector<SequenceRequest> mixed = reqs;
  for (SequenceRequest r : requests(gbnf, 3, 0.8f)) {
    r.grammar.reset();
    r.max_tokens = 40;
    mixed.push_back(std::move(r));
  }
  const Outputs batched = run(mixed, 4);
  for (size_t i = 0; i < reqs.size(); ++i) {
    const Outputs single = run({reqs[i]}, 1);
    CAPTURE(i);
    CHECK(single.tokens.at(0) == batched.tokens.at(static_cast<int>(i)));
  }
}

TEST_CASE("greedy constrained output is the same with n-gram drafting") {
  // A grammar with long forced stretches, so drafts from the output's own n-grams happen.
  const std::string gbnf = "root ::= (\"{\\\"key\\\": \\\"value\\\", \" [a-z] \"}\\n\"){4,6}\n";
  std::vector<SequenceRequest> reqs = requests(gbnf, 3, 0.0f);
  const Outputs plain = run(reqs, 3);
  SequenceDrafting d;
  d.ngram = 3;
  d.max = 4;
  d.fixed = true;
  const Outputs drafted = run(reqs, 3, d);
  for (int i = 0; i < 3; ++i) CHECK(plain.tokens.at(i) == drafted.tokens.at(i));
  CHECK(drafted.stats.accepted_tokens > 0);
}

TEST_CASE("with a draft model: greedy output unchanged, sampled output in the language") {
  SynthGpt2& m = synth_gpt2();
  const std::string gbnf = grammar::json_schema_to_gbnf(json::parse(kSchema, "schema"));
  SequenceDrafting d;
  d.model = true;
  d.max = 3;
  d.fixed = true;
  const std::vector<SequenceRequest> greedy = requests(gbnf, 2, 0.0f);
  const Outputs plain = run(greedy, 2), drafted = run(greedy, 2, d);
  for (int i = 0; i < 2; ++i) CHECK(plain.tokens.at(i) == drafted.tokens.at(i));
  CHECK(drafted.stats.accepted_tokens > 0);
  const Outputs sampled = run(requests(gbnf, 6, 1.0f), 3, d);
  auto g = grammar::compiled_grammar(gbnf);
  for (const auto& [id, tokens] : sampled.tokens) {
    const std::string text = m.tok->decode(tokens);
    CAPTURE(text);
    grammar::Matcher matcher(g);
    CHECK(matcher.accept(text));
    CHECK(matcher.can_end());
  }
}

TEST_CASE("a grammar the vocabulary cannot follow ends with its finish reason") {
  SynthGpt2& m = synth_gpt2();
  // Bytes no GPT-2 token holds on its own at a token's start: a lone UTF-8 continuation
  // byte is in the vocabulary, so ask for a control character GPT-2 never produces (\x00
  // is not a token piece either).
  std::vector<SequenceRequest> reqs = requests("root ::= \"a\" [\\x00] \"b\"\n", 1, 1.0f);
  bool has_nul = false;
  for (int32_t t = 0; t < m.tok->n_vocab(); ++t)
    if (!m.tok->is_control(t) && m.tok->piece(t).find('\0') != std::string_view::npos) has_nul = true;
  const Outputs out = run(reqs, 1);
  if (has_nul) {
    CHECK(out.reasons.at(0) == FinishReason::Stop);
  } else {
    CHECK(out.reasons.at(0) == FinishReason::GrammarDeadEnd);
    CHECK(out.tokens.at(0).size() == 1);  // "a", then nothing
  }
}
