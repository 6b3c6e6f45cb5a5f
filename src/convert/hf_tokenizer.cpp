#include "convert/hf_tokenizer.h"

#include <filesystem>
#include <unordered_map>

#include "convert/sentencepiece_model.h"
#include "util/error.h"
#include "util/mmap.h"

namespace ember::convert {

namespace fs = std::filesystem;

namespace {

// Split regexes of the pre-tokenizers llama.cpp knows, by its tokenizer.ggml.pre names.
const std::pair<const char*, const char*> kPreTokenizers[] = {
    {"qwen2",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
    {"llama-bpe",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
    {"gpt-2", R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)"},
};

// The first Split pattern (a "Regex" string) found anywhere in the pre_tokenizer tree.
std::string find_split_regex(const json::Value& v) {
  if (const json::Value* p = json::find(v, "pattern")) {
    if (const json::Value* r = json::find(*p, "Regex"); r && r->is_string()) return json::as_string(*r);
  }
  if (v.is_object())
    for (const auto& [k, child] : json::as_object(v))
      if (child.is_object() || child.is_array())
        if (std::string r = find_split_regex(child); !r.empty()) return r;
  if (v.is_array())
    for (const auto& child : json::as_array(v))
      if (std::string r = find_split_regex(child); !r.empty()) return r;
  return "";
}

bool has_type(const json::Value& v, std::string_view type) {
  if (const json::Value* t = json::find(v, "type"); t && t->is_string() && json::as_string(*t) == type) return true;
  if (v.is_object())
    for (const auto& [k, child] : json::as_object(v))
      if ((child.is_object() || child.is_array()) && has_type(child, type)) return true;
  if (v.is_array())
    for (const auto& child : json::as_array(v))
      if (has_type(child, type)) return true;
  return false;
}

json::Value read_json(const fs::path& p) { return json::parse(read_text_file(p.string()), p.string()); }

// A token given as "text" or {"content": "text"} in tokenizer_config.json.
std::string token_text(const json::Value* v) {
  if (!v) return "";
  if (v->is_string()) return json::as_string(*v);
  if (const json::Value* c = json::find(*v, "content"); c && c->is_string()) return json::as_string(*c);
  return "";
}

Vocab from_tokenizer_json(const fs::path& path, const json::Value& tj) {
  const std::string src = path.string();
  const json::Value& model = json::at(tj, "model");
  const std::string type = json::find(model, "type") ? json::as_string(json::at(model, "type"), src + ": model.type") : "BPE";
  if (type != "BPE") fail(ErrorKind::Unsupported, "{}: tokenizer model type {} (only BPE converts)", src, type);
  Vocab v;
  const bool byte_fallback = json::find(model, "byte_fallback") && json::at(model, "byte_fallback").is_boolean() &&
                             json::as_bool(json::at(model, "byte_fallback"));
  const json::Value& vocab = json::at(model, "vocab");
  std::vector<std::string> tokens;
  for (const auto& [text, id] : json::as_object(vocab, src + ": model.vocab")) {
    const int64_t i = json::as_int(id, src + ": vocab id of " + text);
    if (i < 0 || i > (int64_t{1} << 24)) fail(ErrorKind::Format, "{}: token id {} out of range", src, i);
    if (static_cast<size_t>(i) >= tokens.size()) tokens.resize(static_cast<size_t>(i) + 1);
    tokens[static_cast<size_t>(i)] = text;
  }
  v.tokens = std::move(tokens);
  v.types.assign(v.tokens.size(), TokenType::Normal);
  if (byte_fallback) {
    v.model = "llama";
    v.scores.resize(v.tokens.size());
    for (size_t i = 0; i < v.tokens.size(); ++i) {
      v.scores[i] = -static_cast<float>(i);  // SentencePiece BPE ids follow merge priority
      const std::string& t = v.tokens[i];
      if (t.size() == 6 && t.starts_with("<0x") && t.ends_with(">")) v.types[i] = TokenType::Byte;
    }
  } else {
    if (!has_type(json::at(tj, "pre_tokenizer"), "ByteLevel"))
      fail(ErrorKind::Unsupported, "{}: BPE without ByteLevel pre-tokenizer or byte fallback", src);
    v.model = "gpt2";
    const std::string regex = find_split_regex(json::at(tj, "pre_tokenizer"));
    v.pre = regex.empty() ? "gpt-2" : bpe_pre_name(regex);
    if (v.pre.empty())
      fail(ErrorKind::Unsupported, "{}: unknown pre-tokenizer split regex {}", src, regex.substr(0, 120));
    for (const json::Value& m : json::as_array(json::at(model, "merges"), src + ": model.merges")) {
      if (m.is_string()) {
        v.merges.push_back(json::as_string(m));
      } else {
        const auto& pair = json::as_array(m, src + ": merge");
        if (pair.size() != 2) fail(ErrorKind::Format, "{}: a merge needs two parts", src);
        v.merges.push_back(json::as_string(pair[0]) + " " + json::as_string(pair[1]));
      }
    }
  }
  if (const json::Value* added = json::find(tj, "added_tokens")) {
    for (const json::Value& a : json::as_array(*added, src + ": added_tokens")) {
      const int64_t id = json::as_int(json::at(a, "id"), src + ": added token id");
      if (id < 0 || id > (int64_t{1} << 24)) fail(ErrorKind::Format, "{}: added token id {} out of range", src, id);
      const size_t i = static_cast<size_t>(id);
      if (i >= v.tokens.size()) {
        v.tokens.resize(i + 1);
        v.types.resize(i + 1, TokenType::Unused);
        if (!v.scores.empty()) v.scores.resize(i + 1, 0.0f);
      }
      v.tokens[i] = json::as_string(json::at(a, "content"), src + ": added token content");
      const bool special = json::find(a, "special") && json::as_bool(json::at(a, "special"));
      v.types[i] = special ? TokenType::Control : TokenType::UserDefined;
    }
  }
  return v;
}

}  // namespace

std::string bpe_pre_name(const std::string& regex) {
  for (const auto& [name, pattern] : kPreTokenizers)
    if (regex == pattern) return name;
  return "";
}

Vocab read_hf_tokenizer(const std::string& dir, const json::Value& config, int64_t n_vocab) {
  const fs::path d(dir);
  Vocab v;
  const fs::path tj = d / "tokenizer.json", tm = d / "tokenizer.model";
  json::Value tokenizer_json;
  if (fs::exists(tm)) {
    MappedFile f(tm.string());
    v = vocab_from_sentencepiece(parse_sentencepiece_model(f.bytes(), tm.string()));
    // Tokens added on top of the SentencePiece model (chat markers) live in tokenizer.json.
    if (fs::exists(tj)) {
      tokenizer_json = read_json(tj);
      if (const json::Value* added = json::find(tokenizer_json, "added_tokens"))
        for (const json::Value& a : json::as_array(*added, tj.string() + ": added_tokens")) {
          const int64_t id = json::as_int(json::at(a, "id"), "added token id");
          if (id < 0 || id >= n_vocab) continue;
          const size_t i = static_cast<size_t>(id);
          if (i >= v.tokens.size()) {
            v.tokens.resize(i + 1);
            v.scores.resize(i + 1, 0.0f);
            v.types.resize(i + 1, TokenType::Unused);
          }
          v.tokens[i] = json::as_string(json::at(a, "content"), "added token content");
          const bool special = json::find(a, "special") && json::as_bool(json::at(a, "special"));
          if (v.types[i] == TokenType::Normal || v.types[i] == TokenType::Unused)
            v.types[i] = special ? TokenType::Control : TokenType::UserDefined;
        }
    }
  } else if (fs::exists(tj)) {
    tokenizer_json = read_json(tj);
    v = from_tokenizer_json(tj, tokenizer_json);
  } else {
    fail(ErrorKind::Io, "{}: neither tokenizer.model nor tokenizer.json", dir);
  }

  if (static_cast<int64_t>(v.tokens.size()) > n_vocab)
    fail(ErrorKind::Format, "{}: tokenizer has {} tokens but the embedding only {} rows", dir, v.tokens.size(),
         n_vocab);
  for (size_t i = 0; i < v.tokens.size(); ++i)
    if (v.tokens[i].empty()) {
      v.tokens[i] = "[PAD" + std::to_string(i) + "]";
      v.types[i] = TokenType::Unused;
    }
  while (static_cast<int64_t>(v.tokens.size()) < n_vocab) {
    v.tokens.push_back("[PAD" + std::to_string(v.tokens.size()) + "]");
    v.types.push_back(TokenType::Unused);
    if (!v.scores.empty()) v.scores.push_back(0.0f);
  }

  // Special ids: tokenizer_config.json names the tokens, config.json may give ids.
  std::unordered_map<std::string, uint32_t> index;
  for (size_t i = 0; i < v.tokens.size(); ++i) index.emplace(v.tokens[i], static_cast<uint32_t>(i));
  json::Value tc;
  if (fs::exists(d / "tokenizer_config.json")) tc = read_json(d / "tokenizer_config.json");
  auto special = [&](const char* tc_key, const char* config_key, std::optional<uint32_t>& out) {
    if (auto it = index.find(token_text(json::find(tc, tc_key))); it != index.end()) {
      out = it->second;
    } else if (const json::Value* id = json::find(config, config_key); id && id->is_number_integer()) {
      if (json::as_int(*id) >= 0 && json::as_int(*id) < n_vocab) out = static_cast<uint32_t>(json::as_int(*id));
    }
  };
  special("bos_token", "bos_token_id", v.bos_id);
  special("eos_token", "eos_token_id", v.eos_id);
  special("pad_token", "pad_token_id", v.pad_id);
  special("unk_token", "unk_token_id", v.unk_id);
  if (const json::Value* b = json::find(tc, "add_bos_token"); b && b->is_boolean()) v.add_bos = json::as_bool(*b);
  else v.add_bos = v.model == "llama";
  if (const json::Value* e = json::find(tc, "add_eos_token"); e && e->is_boolean()) v.add_eos = json::as_bool(*e);
  if (const json::Value* t = json::find(tc, "chat_template"); t && t->is_string()) v.chat_template = json::as_string(*t);
  return v;
}

}  // namespace ember::convert
