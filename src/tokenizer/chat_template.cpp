#include "tokenizer/chat_template.h"

#include <fmt/format.h>

#include <optional>

#include "gguf/gguf.h"
#include "template/jinja/template.h"
#include "tokenizer/vocab.h"
#include "util/error.h"

namespace ember {

namespace {

constexpr std::string_view kQwen25System = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";
constexpr std::string_view kQwenSystem = "You are a helpful assistant.";

// A family's evidence in a vocabulary and the text that ends its assistant turns. `special`:
// texts that must all be special (control / user-defined) tokens for the vocabulary to point
// at the family; `distinctive`: whether that alone is enough (chatml's <|im_start|>) or
// general.architecture must name the family too (llama2's </s> is the EOS of most
// SentencePiece vocabularies). The order breaks ties between equally supported families.
struct Family {
  std::string_view name;
  std::vector<std::string_view> special;
  std::string_view end_of_turn;
  bool distinctive;
};
const std::vector<Family> kFamilies = {
    {"gemma", {"<start_of_turn>", "<end_of_turn>"}, "<end_of_turn>", true},
    {"llama3", {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"}, "<|eot_id|>", true},
    {"chatml", {"<|im_start|>", "<|im_end|>"}, "<|im_end|>", true},
    {"qwen", {"<|im_start|>", "<|im_end|>"}, "<|im_end|>", true},  // after chatml: needs a qwen* architecture to win
    {"phi3", {"<|user|>", "<|assistant|>", "<|end|>"}, "<|end|>", true},
    {"mistral", {"[INST]", "[/INST]"}, "</s>", true},
    {"deepseek", {"<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"}, "<｜end▁of▁sentence｜>", true},
    {"llama2", {"</s>"}, "</s>", false},  // [INST] is plain text in Llama 2's own vocabulary
    {"zephyr", {}, "</s>", false},        // its <|user|> markers are plain text: only by name or template
    // The last resort: markers any model reads as text; a reply ends where it starts the next turn.
    {"plain", {}, "\nUser:", false},
};

// general.architecture prefixes and the families their models are trained on.
struct ArchHint {
  std::string_view prefix;
  std::string_view family;
};
constexpr ArchHint kArchHints[] = {
    {"gemma", "gemma"}, {"qwen", "qwen"}, {"llama", "llama3"}, {"llama", "llama2"}, {"phi3", "phi3"},
};

const Family& family_named(std::string_view name) {
  for (const Family& f : kFamilies)
    if (f.name == name) return f;
  fail(ErrorKind::Internal, "chat template '{}' has no family entry", name);
}

bool is_special_token(const Vocab& v, std::string_view text) {
  const int32_t id = v.find(text);
  return id >= 0 && (v.tokens[id].type == TokenType::Control || v.tokens[id].type == TokenType::UserDefined);
}

bool vocab_fits(const Family& f, const Vocab& v) {
  if (f.special.empty()) return false;
  for (std::string_view t : f.special)
    if (!is_special_token(v, t)) return false;
  return true;
}

bool arch_names(std::string_view arch, const Family& f) {
  for (const ArchHint& h : kArchHints)
    if (h.family == f.name && !arch.empty() && arch.starts_with(h.prefix)) return true;
  return false;
}

// 0: not a candidate; otherwise the vocabulary's evidence (2 when distinctive) plus 1 when the
// architecture names the family, so qwen beats chatml on a qwen2 model and llama2 needs llama.
int evidence(const Family& f, const ModelHints& h) {
  if (!h.vocab || !vocab_fits(f, *h.vocab)) return 0;
  const bool by_arch = arch_names(h.architecture, f);
  if (!f.distinctive && !by_arch) return 0;
  return (f.distinctive ? 2 : 0) + (by_arch ? 1 : 0);
}

std::string joined(const std::vector<std::string_view>& texts) {
  std::string s;
  for (std::string_view t : texts) s += fmt::format("{}{}", s.empty() ? "" : ", ", t);
  return s;
}

std::string reason_for(const Family& f, const ModelHints& h) {
  return fmt::format("the vocabulary has {} as special token{}{}", joined(f.special), f.special.size() > 1 ? "s" : "",
                     arch_names(h.architecture, f) ? fmt::format(" and general.architecture is {}", h.architecture) : "");
}

std::string no_evidence_reason(const ModelHints& h) {
  if (!h.vocab) return "the model's vocabulary is unknown, so no family's turn markers can be checked";
  return fmt::format("no chat format's turn markers are special tokens of the vocabulary (general.architecture {})",
                     h.architecture.empty() ? std::string_view("unknown") : h.architecture);
}

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

std::string trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(first, last - first + 1));
}

using Messages = std::span<const ChatMessage>;

// Families without a system role fold the system prompt into the first user turn.
struct Folded {
  std::string system;
  std::vector<ChatMessage> turns;
};
Folded split_system(Messages m) {
  Folded f;
  for (const ChatMessage& msg : m) {
    if (msg.role == "system") f.system += (f.system.empty() ? "" : "\n\n") + msg.content;
    else f.turns.push_back(msg);
  }
  return f;
}

// <|im_start|>role\ncontent<|im_end|>\n ... <|im_start|>assistant\n
std::string render_chatml(Messages m, bool gen, std::string_view default_system) {
  std::string out;
  if (!default_system.empty() && (m.empty() || m.front().role != "system"))
    out += fmt::format("<|im_start|>system\n{}<|im_end|>\n", default_system);
  for (const auto& msg : m) out += fmt::format("<|im_start|>{}\n{}<|im_end|>\n", msg.role, msg.content);
  if (gen) out += "<|im_start|>assistant\n";
  return out;
}

// Llama 2 chat: [INST] <<SYS>>\nsystem\n<</SYS>>\n\nuser [/INST] answer </s><s>[INST] user [/INST]
std::string render_llama2(Messages m, bool) {
  const Folded f = split_system(m);
  std::string out;
  bool first = true;
  for (const auto& msg : f.turns) {
    if (msg.role == "user") {
      std::string content = msg.content;
      if (first && !f.system.empty()) content = "<<SYS>>\n" + f.system + "\n<</SYS>>\n\n" + content;
      out += (first ? "" : "<s>") + std::string("[INST] ") + trim(content) + " [/INST]";
      first = false;
    } else {
      out += fmt::format(" {} </s>", trim(msg.content));
    }
  }
  return out;  // the prompt already ends where the answer begins
}

// Mistral instruct: [INST] user [/INST]answer</s>[INST] user [/INST]
std::string render_mistral(Messages m, bool) {
  const Folded f = split_system(m);
  std::string out;
  bool first = true;
  for (const auto& msg : f.turns) {
    if (msg.role == "user") {
      const std::string content = (first && !f.system.empty()) ? f.system + "\n\n" + msg.content : msg.content;
      out += "[INST] " + content + " [/INST]";
      first = false;
    } else {
      out += msg.content + "</s>";
    }
  }
  return out;
}

// Llama 3: <|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|>
std::string render_llama3(Messages m, bool gen) {
  std::string out;
  for (const auto& msg : m)
    out += fmt::format("<|start_header_id|>{}<|end_header_id|>\n\n{}<|eot_id|>", msg.role, trim(msg.content));
  if (gen) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

// Gemma: <start_of_turn>user\ncontent<end_of_turn>\n<start_of_turn>model\n ; no system role.
std::string render_gemma(Messages m, bool gen) {
  const Folded f = split_system(m);
  std::string out;
  bool first = true;
  for (const auto& msg : f.turns) {
    std::string content = trim(msg.content);
    if (first && !f.system.empty()) content = trim(f.system) + "\n\n" + content;
    first = false;
    out += fmt::format("<start_of_turn>{}\n{}<end_of_turn>\n", msg.role == "assistant" ? "model" : msg.role, content);
  }
  if (gen) out += "<start_of_turn>model\n";
  return out;
}

// Phi-3: <|role|>\ncontent<|end|>\n ... <|assistant|>\n
std::string render_phi3(Messages m, bool gen) {
  std::string out;
  for (const auto& msg : m) out += fmt::format("<|{}|>\n{}<|end|>\n", msg.role, msg.content);
  if (gen) out += "<|assistant|>\n";
  return out;
}

// Zephyr: <|role|>\ncontent</s>\n ... <|assistant|>\n
std::string render_zephyr(Messages m, bool gen) {
  std::string out;
  for (const auto& msg : m) out += fmt::format("<|{}|>\n{}</s>\n", msg.role, msg.content);
  if (gen) out += "<|assistant|>\n";
  return out;
}

// DeepSeek LLM chat and plain: system\n\nUser: user\n\nAssistant: answer{turn_end}User: ...
// DeepSeek ends an answer with its EOS token, plain with a blank line (its stop is "\nUser:").
std::string render_dialogue(Messages m, bool gen, std::string_view turn_end) {
  std::string out;
  for (const auto& msg : m) {
    if (msg.role == "system") out += msg.content + "\n\n";
    else if (msg.role == "user") out += "User: " + msg.content + "\n\n";
    else out += "Assistant: " + trim(msg.content) + std::string(turn_end);
  }
  if (gen) out += "Assistant:";
  return out;
}

std::string known_list() {
  std::string s;
  for (const auto& n : ChatTemplate::names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

std::string fallback_warning(std::string_view text, const TemplateChoice& c) {
  const std::string how = fmt::format("using template {} because {} (choose another with --chat-template: {})",
                                      c.name, c.why, known_list());
  if (!text.empty()) return "tokenizer.chat_template not recognised; " + how;
  return "the model has no tokenizer.chat_template, so it looks like a base model (not instruction-tuned) "
         "that may not follow a conversation; " + how;
}

}  // namespace

std::string detect_chat_template(std::string_view t) {
  if (contains(t, "<|im_start|>")) {
    return (contains(t, kQwenSystem) || contains(t, kQwen25System)) ? "qwen" : "chatml";
  }
  if (contains(t, "<|start_header_id|>") && contains(t, "<|eot_id|>")) return "llama3";
  if (contains(t, "<start_of_turn>")) return "gemma";
  if (contains(t, "[INST]")) return contains(t, "<<SYS>>") ? "llama2" : "mistral";
  if (contains(t, "<|assistant|>") && contains(t, "<|end|>")) return "phi3";
  if (contains(t, "<|user|>") && contains(t, "<|assistant|>")) return "zephyr";
  if (contains(t, "User: ") && contains(t, "Assistant:")) return "deepseek";
  return {};
}

TemplateChoice fallback_chat_template(const ModelHints& hints) {
  const Family* best = nullptr;
  int best_score = 0;
  for (const Family& f : kFamilies) {
    const int score = evidence(f, hints);
    if (score > best_score) best = &f, best_score = score;
  }
  if (!best) return {"plain", no_evidence_reason(hints)};
  return {std::string(best->name), reason_for(*best, hints)};
}

const std::vector<std::string>& ChatTemplate::names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Family& f : kFamilies) n.emplace_back(f.name);
    return n;
  }();
  return names;
}

ChatTemplate ChatTemplate::by_name(std::string_view name) {
  for (const auto& n : names()) {
    if (n == name) {
      ChatTemplate t;
      t.name_ = n;
      if (n == "qwen") t.default_system_ = std::string(kQwenSystem);
      return t;
    }
  }
  fail(ErrorKind::InvalidArgument, "unknown chat template '{}' (known: {})", name, known_list());
}

ChatTemplate ChatTemplate::from_text(std::string_view text, std::string_view override_name, std::string* warning,
                                     const ModelHints& hints) {
  if (!override_name.empty()) return by_name(override_name);
  std::string name = detect_chat_template(text);
  if (name.empty()) {
    const TemplateChoice choice = fallback_chat_template(hints);
    if (warning) *warning = fallback_warning(text, choice);
    name = choice.name;
  }
  ChatTemplate t = by_name(name);
  if (name == "qwen" && contains(text, kQwen25System)) t.default_system_ = std::string(kQwen25System);
  return t;
}

ChatTemplate ChatTemplate::from_gguf(const gguf::File& f, std::string_view override_name, std::string* warning,
                                     const Vocab* vocab, std::optional<std::string_view> template_text) {
  const auto found = f.find_string("tokenizer.chat_template");
  const std::string_view text = template_text ? *template_text : found ? *found : std::string_view{};
  if (!override_name.empty()) return by_name(override_name);
  // The family (for the fallback and the end-of-turn marker) needs the vocabulary: read it
  // here unless the caller has it loaded already.
  std::optional<Vocab> read;
  if (!vocab) vocab = &read.emplace(Vocab::from_gguf(f));
  const auto arch = f.find_string("general.architecture");
  std::shared_ptr<const jinja::Template> parsed;
  std::string parse_error;
  if (!text.empty()) {
    try {
      parsed = std::make_shared<const jinja::Template>(jinja::Template::parse(text));
    } catch (const Error& e) {
      if (template_text) throw;
      parse_error = e.what();
    }
  }
  std::string family_warning;
  ChatTemplate t = from_text(text, {}, &family_warning, {vocab, arch ? *arch : std::string_view{}});
  if (!parsed) {
    if (warning) *warning = parse_error.empty() ? family_warning : "the model's chat template cannot be used (" + parse_error + "); using the " + t.name_ + " format (choose another with --chat-template)";
    return t;
  }
  t.jinja_ = std::move(parsed);
  t.jinja_source_ = std::string(text);
  auto token_text = [&](int32_t id) { return id >= 0 && id < vocab->n_tokens() ? vocab->tokens[id].text : std::string(); };
  t.bos_token_ = token_text(vocab->special.bos);
  t.eos_token_ = token_text(vocab->special.eos);
  return t;
}

std::string_view ChatTemplate::end_of_turn() const { return family_named(name_).end_of_turn; }

std::vector<std::string> ChatTemplate::text_stops(const Vocab& vocab) const {
  const std::string_view end = end_of_turn();
  if (is_special_token(vocab, end)) return {};
  return {std::string(end)};
}

std::string ChatTemplate::render(std::span<const ChatMessage> m, bool gen) const {
  for (const auto& msg : m) {
    if (msg.role != "system" && msg.role != "user" && msg.role != "assistant")
      fail(ErrorKind::InvalidArgument, "chat message role '{}' is not one of system, user, assistant", msg.role);
  }
  if (name_ == "chatml") return render_chatml(m, gen, {});
  if (name_ == "qwen") return render_chatml(m, gen, default_system_);
  if (name_ == "llama2") return render_llama2(m, gen);
  if (name_ == "llama3") return render_llama3(m, gen);
  if (name_ == "mistral") return render_mistral(m, gen);
  if (name_ == "gemma") return render_gemma(m, gen);
  if (name_ == "phi3") return render_phi3(m, gen);
  if (name_ == "deepseek") return render_dialogue(m, gen, family_named(name_).end_of_turn);
  if (name_ == "plain") return render_dialogue(m, gen, "\n\n");
  if (name_ == "zephyr") return render_zephyr(m, gen);
  fail(ErrorKind::Internal, "chat template '{}' has no renderer", name_);
}

}  // namespace ember
