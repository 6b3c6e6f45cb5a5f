// The chat template a model gets when its file names none (or one we do not recognise): chosen
// by the vocabulary's special tokens and general.architecture, for every vocabulary in
// ../shared/vocab and a synthetic Gemma 3 model; end-of-turn markers end the reply (as tokens
// in the tokenizer's eog_ids, or as stop strings when plain text); `ember chat` on the
// synthetic Gemma model prompts with gemma's control tokens.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "util/thread_pool.h"
#include "cli_test_util.h"
#include "engine/conversation.h"
#include "engine/sequence.h"
#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "synth/synth.h"
#include "test_tokenizer_util.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

using namespace ember;

namespace {

std::string arch_of(const gguf::File& f) {
  const auto a = f.find_string("general.architecture");
  return a ? std::string(*a) : std::string();
}

std::string fallback_for_file(const std::string& vocab_name) {
  const gguf::File f = gguf::File::open(test::vocab_path(vocab_name));
  const Vocab v = Vocab::from_gguf(f);
  const std::string arch = arch_of(f);
  return fallback_chat_template({&v, arch}).name;
}

// A vocabulary of the given texts and types (a few ordinary tokens first).
Vocab vocab_of(const std::vector<std::pair<std::string, TokenType>>& specials) {
  Vocab v;
  for (const char* t : {"<unk>", "a", "b"}) v.tokens.push_back({t, 0.0f, TokenType::Normal});
  for (const auto& [text, type] : specials) v.tokens.push_back({text, 0.0f, type});
  v.build_index();
  return v;
}
constexpr TokenType C = TokenType::Control;

// llama-spm's vocabulary plus <start_of_turn> and <end_of_turn> as control tokens, labelled
// gemma3: the shape of a Gemma 3 vocabulary (ids 32000 and 32001 here) without its 262k tokens.
void write_gemma_vocab(const std::string& path) {
  const gguf::File src = gguf::File::open(test::vocab_path("llama-spm"));
  const gguf::ArrayView& texts = src.get_array("tokenizer.ggml.tokens");
  const gguf::ArrayView& scores = src.get_array("tokenizer.ggml.scores");
  const gguf::ArrayView& types = src.get_array("tokenizer.ggml.token_type");
  std::vector<std::string> t;
  std::vector<float> s;
  std::vector<int32_t> ty;
  for (uint64_t i = 0; i < texts.size(); ++i) {
    t.emplace_back(texts.string_at(i));
    s.push_back(static_cast<float>(scores.float_at(i)));
    ty.push_back(static_cast<int32_t>(types.int_at(i)));
  }
  for (const char* marker : {"<start_of_turn>", "<end_of_turn>"}) {
    t.emplace_back(marker);
    s.push_back(0.0f);
    ty.push_back(static_cast<int32_t>(TokenType::Control));
  }
  gguf::Writer w;
  w.copy_metadata(src, [](std::string_view key) { return key == "general.architecture"; });
  w.set_string("general.architecture", "gemma3");
  w.set_array_string("tokenizer.ggml.tokens", t);
  w.set_array_f32("tokenizer.ggml.scores", s);
  w.set_array_i32("tokenizer.ggml.token_type", ty);
  w.write(path);
}

// A tiny synthetic Gemma 3 model with that vocabulary and no chat template, made once.
const std::string& gemma_model() {
  static test::TempDir dir("chat-gemma");
  static const std::string path = [] {
    const std::string vocab = dir.file("gemma-vocab.gguf"), out = dir.file("gemma3-synth.gguf");
    write_gemma_vocab(vocab);
    synth::SynthOptions o;
    o.shape = synth::default_shape(require_arch("gemma3"));
    o.shape.n_embd = 128, o.shape.n_layer = 1, o.shape.n_head = 2, o.shape.n_head_kv = 1, o.shape.head_dim = 64;
    o.shape.n_ff = 256, o.shape.n_ctx = 256, o.shape.sliding_window = 16, o.shape.tied_embeddings = true;
    o.vocab_path = vocab;
    o.type = quantize::parse_file_type("f16");
    ThreadPool pool(2);
    synth::synth_model(o, out, &pool);
    return out;
  }();
  return path;
}

}  // namespace

TEST_CASE("fallback: each shared vocabulary gets the family its own special tokens and architecture name") {
  const std::pair<const char*, const char*> expected[] = {
      {"llama-spm", "llama2"},           // llama + </s>: [INST] is plain text in Llama 2's vocabulary
      {"phi-3", "phi3"},                 // <|user|> <|assistant|> <|end|>
      {"deepseek-llm", "deepseek"},      // <｜begin▁of▁sentence｜> <｜end▁of▁sentence｜>
      {"deepseek-coder", "deepseek"},
      {"baichuan", "plain"},             // </s> alone does not name llama2 without the llama architecture
      {"gpt-2", "plain"}, {"falcon", "plain"}, {"refact", "plain"}, {"starcoder", "plain"},
      {"mpt", "plain"}, {"gpt-neox", "plain"},
  };
  CHECK(std::size(expected) == std::size(test::kAllVocabs));  // every shared vocabulary is listed
  for (const auto& [vocab, family] : expected) {
    CAPTURE(vocab);
    CHECK(fallback_for_file(vocab) == family);
  }
}

TEST_CASE("fallback: vocabulary evidence first, the architecture breaks ties and names weak families") {
  const Vocab gemma = vocab_of({{"<start_of_turn>", C}, {"<end_of_turn>", C}});
  CHECK(fallback_chat_template({&gemma, "gemma3"}).name == "gemma");
  CHECK(fallback_chat_template({&gemma, ""}).name == "gemma");
  CHECK(fallback_chat_template({&gemma, "qwen2"}).name == "gemma");  // qwen's markers are not there
  const Vocab user_defined = vocab_of({{"<start_of_turn>", TokenType::UserDefined}, {"<end_of_turn>", TokenType::UserDefined}});
  CHECK(fallback_chat_template({&user_defined, "gemma"}).name == "gemma");
  // Ordinary tokens are text: the model was never taught them as markers.
  const Vocab normal = vocab_of({{"<start_of_turn>", TokenType::Normal}, {"<end_of_turn>", TokenType::Normal}});
  CHECK(fallback_chat_template({&normal, "gemma3"}).name == "plain");
  const Vocab half = vocab_of({{"<start_of_turn>", C}});
  CHECK(fallback_chat_template({&half, "gemma3"}).name == "plain");

  const Vocab chatml = vocab_of({{"<|im_start|>", C}, {"<|im_end|>", C}, {"<|endoftext|>", C}});
  CHECK(fallback_chat_template({&chatml, ""}).name == "chatml");
  CHECK(fallback_chat_template({&chatml, "qwen2"}).name == "qwen");
  CHECK(fallback_chat_template({&chatml, "qwen3"}).name == "qwen");
  const Vocab llama3 = vocab_of({{"<|start_header_id|>", C}, {"<|end_header_id|>", C}, {"<|eot_id|>", C}});
  CHECK(fallback_chat_template({&llama3, "llama"}).name == "llama3");
  const Vocab mistral = vocab_of({{"</s>", C}, {"[INST]", C}, {"[/INST]", C}});
  CHECK(fallback_chat_template({&mistral, "llama"}).name == "mistral");  // distinctive beats llama2's </s>
  const Vocab spm = vocab_of({{"<s>", C}, {"</s>", C}});
  CHECK(fallback_chat_template({&spm, "llama"}).name == "llama2");
  CHECK(fallback_chat_template({&spm, "baichuan"}).name == "plain");
  const Vocab phi3 = vocab_of({{"<|user|>", C}, {"<|assistant|>", C}, {"<|end|>", C}});
  CHECK(fallback_chat_template({&phi3, ""}).name == "phi3");

  const TemplateChoice unknown = fallback_chat_template({});
  CHECK(unknown.name == "plain");
  CHECK(unknown.why.find("vocabulary is unknown") != std::string::npos);
  const TemplateChoice why = fallback_chat_template({&chatml, "qwen2"});
  CHECK(why.why == "the vocabulary has <|im_start|>, <|im_end|> as special tokens and general.architecture is qwen2");
}

TEST_CASE("fallback: a synthetic gemma3 model without a template gets gemma, named a base model in one line") {
  const gguf::File f = gguf::File::open(gemma_model());
  REQUIRE_FALSE(f.find_string("tokenizer.chat_template"));
  std::string warning;
  const ChatTemplate t = ChatTemplate::from_gguf(f, "", &warning);
  CHECK(t.name() == "gemma");
  CHECK(warning.find("base model (not instruction-tuned)") != std::string::npos);
  CHECK(warning.find("using template gemma because the vocabulary has <start_of_turn>, <end_of_turn> as special "
                     "tokens and general.architecture is gemma3") != std::string::npos);
  CHECK(warning.find("--chat-template") != std::string::npos);
  CHECK(warning.find('\n') == std::string::npos);
  CHECK(warning.find("chatml (") == std::string::npos);  // chatml is only listed as a choice

  // The rendered prompt holds gemma's markers as control tokens, and its turn end stops a reply.
  const Tokenizer tok = Tokenizer::from_gguf(f);
  const auto ids = tok.encode(t.render(std::vector<ChatMessage>{{"user", "Hi"}}, true), true, true);
  REQUIRE(ids.size() >= 3);
  CHECK(ids[0] == tok.bos());
  CHECK(ids[1] == 32000);  // <start_of_turn>
  CHECK(std::count(ids.begin(), ids.end(), 32000) == 2);
  CHECK(std::count(ids.begin(), ids.end(), 32001) == 1);  // <end_of_turn>
  CHECK(tok.is_eog(32001));
  CHECK(t.text_stops(tok.vocab()).empty());
  // The same vocabulary read by the caller gives the same choice.
  warning.clear();
  CHECK(ChatTemplate::from_gguf(f, "", &warning, &tok.vocab()).name() == "gemma");
}

TEST_CASE("end of turn: a special-token marker is an eog id, a plain-text marker a stop string") {
  std::vector<std::pair<std::string, Tokenizer>> vocabs;
  for (const char* name : test::kAllVocabs) vocabs.emplace_back(name, test::load_vocab(name));
  vocabs.emplace_back("gemma3-synth", Tokenizer::from_gguf(gguf::File::open(gemma_model())));
  int special_ends = 0;
  for (const auto& [vocab_name, tok] : vocabs) {
    for (const std::string& family : ChatTemplate::names()) {
      CAPTURE(vocab_name);
      CAPTURE(family);
      const ChatTemplate t = ChatTemplate::by_name(family);
      const std::string end(t.end_of_turn());
      const int32_t id = tok.vocab().find(end);
      const bool special = id >= 0 && (tok.vocab().tokens[id].type == TokenType::Control ||
                                       tok.vocab().tokens[id].type == TokenType::UserDefined);
      if (special) {
        ++special_ends;
        CHECK(tok.is_eog(id));
        const auto ids = tok.encode(end, false, true);  // the tokenizer reads the marker as that token
        CHECK(std::find(ids.begin(), ids.end(), id) != ids.end());
        CHECK(t.text_stops(tok.vocab()).empty());
      } else {
        CHECK(t.text_stops(tok.vocab()) == std::vector<std::string>{end});
      }
    }
  }
  CHECK(special_ends >= 5);  // </s> in the SentencePiece vocabularies, <|end|>, <end_of_turn>, deepseek's EOS
  CHECK(ChatTemplate::by_name("gemma").end_of_turn() == "<end_of_turn>");
  CHECK(ChatTemplate::by_name("plain").end_of_turn() == "\nUser:");
}

namespace {

// Tokens of `text` fed one by one to a sequence with `stops` as stop strings (a chat reply
// whose end-of-turn marker is plain text): what it shows, and how it ends.
struct Taken {
  std::string shown;
  size_t taken = 0;  // tokens taken before it ended (all of them if it did not)
  std::optional<FinishReason> end;
};

Taken take_all(const Tokenizer& tok, const std::string& text, std::vector<std::string> stops, int max_tokens = -1) {
  SequenceRequest r;
  r.prompt = {tok.bos()};
  r.max_tokens = max_tokens;
  r.stop_strings = std::move(stops);
  Sequence seq(0, std::move(r), 4096, &tok);
  Taken out;
  for (int32_t token : tok.encode(text, /*add_special=*/false, /*parse_special=*/false)) {
    const TakenToken t = seq.take(token);
    out.shown += t.text;
    ++out.taken;
    if (t.end) {
      out.end = t.end;
      break;
    }
  }
  out.shown += seq.flush_text();  // as the scheduler does when a sequence ends
  return out;
}

// The text of the first n tokens of `text` (all when n < 0), piece after piece.
std::string pieces(const Tokenizer& tok, const std::string& text, int n = -1) {
  const std::vector<int32_t> tokens = tok.encode(text, /*add_special=*/false, /*parse_special=*/false);
  std::string out;
  for (size_t i = 0; i < tokens.size() && (n < 0 || i < static_cast<size_t>(n)); ++i) out += tok.piece(tokens[i]);
  return out;
}

}  // namespace

TEST_CASE("end of turn: a plain-text marker ends the reply, across split pieces, and is not shown") {
  const Tokenizer tok = test::load_vocab("llama-spm");  // <|im_end|> and "\nUser:" are plain text here
  const std::vector<std::string> chatml = ChatTemplate::by_name("chatml").text_stops(tok.vocab());
  REQUIRE(chatml == std::vector<std::string>{"<|im_end|>"});
  const std::string reply = "One two three";
  const Taken r = take_all(tok, reply + "<|im_end|><|im_start|>user junk junk", chatml);
  CHECK(r.shown == pieces(tok, reply));
  CHECK(r.end == FinishReason::Stop);
  // It ended on the token that completed the marker: nothing after it was taken.
  CHECK(r.taken == tok.encode(reply + "<|im_end|>", false, false).size());
  CHECK(tok.encode("<|im_end|>", false, false).size() > 1);  // the marker spans several tokens

  // A partial marker that does not complete is shown after all; the token limit still applies.
  const Taken partial = take_all(tok, "a<|imxb c d e", chatml, 4);
  CHECK(partial.end == FinishReason::Length);
  CHECK(partial.taken == 4);
  CHECK(partial.shown == pieces(tok, "a<|imxb c d e", 4));
  // "plain" stops where the model starts the user's next turn.
  const Taken plain = take_all(tok, " Fine.\nUser: and you", ChatTemplate::by_name("plain").text_stops(tok.vocab()));
  CHECK(plain.shown == pieces(tok, " Fine."));
  CHECK(plain.end == FinishReason::Stop);
  // A marker that is a special token is an end-of-generation id instead: no stop string.
  const Tokenizer gemma = Tokenizer::from_gguf(gguf::File::open(gemma_model()));
  CHECK(ChatTemplate::by_name("gemma").text_stops(gemma.vocab()).empty());
}

TEST_CASE("ember chat on a synthetic gemma3 base model prompts with gemma's control tokens") {
  const std::string& model = gemma_model();
  const test::ProcessResult r =
      test::run_ember({"chat", "-m", model, "-c", "256", "-n", "3", "--temp", "0", "-t", "2"}, "Hi\n/stats\n");
  CAPTURE(r.err);
  CAPTURE(r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("warning: the model has no tokenizer.chat_template, so it looks like a base model") !=
        std::string::npos);
  CHECK(r.err.find("using template gemma because the vocabulary has <start_of_turn>") != std::string::npos);
  // The prompt's token count is gemma's with its markers as single control tokens.
  const Tokenizer tok = Tokenizer::from_gguf(gguf::File::open(model));
  const std::vector<ChatMessage> hi = {{"user", "Hi"}};
  const size_t gemma_tokens = tok.encode(ChatTemplate::by_name("gemma").render(hi, true), true, true).size();
  const size_t chatml_tokens = tok.encode(ChatTemplate::by_name("chatml").render(hi, true), true, true).size();
  REQUIRE(gemma_tokens != chatml_tokens);
  CHECK(r.out.find(fmt::format("/ {:5d} tokens", gemma_tokens)) != std::string::npos);
  CHECK(r.out.find(fmt::format("/ {:5d} tokens", chatml_tokens)) == std::string::npos);
}
