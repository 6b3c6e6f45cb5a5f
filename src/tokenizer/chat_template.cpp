#include "tokenizer/chat_template.h"

#include <fmt/format.h>

#include "gguf/gguf.h"
#include "util/error.h"

namespace ember {

namespace {

constexpr std::string_view kFallback = "chatml";
constexpr std::string_view kQwen25System = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";
constexpr std::string_view kQwenSystem = "You are a helpful assistant.";

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
      out += " " + trim(msg.content) + " </s>";
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

// DeepSeek LLM chat: system\n\nUser: user\n\nAssistant: answer<｜end▁of▁sentence｜>User: ...
std::string render_deepseek(Messages m, bool gen) {
  std::string out;
  for (const auto& msg : m) {
    if (msg.role == "system") out += msg.content + "\n\n";
    else if (msg.role == "user") out += "User: " + msg.content + "\n\n";
    else out += "Assistant: " + msg.content + "<｜end▁of▁sentence｜>";
  }
  if (gen) out += "Assistant:";
  return out;
}

const std::vector<std::string> kNames = {"chatml", "qwen", "llama2", "llama3", "mistral", "gemma", "phi3", "deepseek", "zephyr"};

std::string known_list() {
  std::string s;
  for (const auto& n : kNames) s += (s.empty() ? "" : ", ") + n;
  return s;
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

const std::vector<std::string>& ChatTemplate::names() { return kNames; }

ChatTemplate ChatTemplate::by_name(std::string_view name) {
  for (const auto& n : kNames) {
    if (n == name) {
      ChatTemplate t;
      t.name_ = n;
      if (n == "qwen") t.default_system_ = std::string(kQwenSystem);
      return t;
    }
  }
  fail(ErrorKind::InvalidArgument, "unknown chat template '{}' (known: {})", name, known_list());
}

ChatTemplate ChatTemplate::from_text(std::string_view text, std::string_view override_name, std::string* warning) {
  if (!override_name.empty()) return by_name(override_name);
  std::string name = detect_chat_template(text);
  if (name.empty()) {
    if (warning) {
      *warning = text.empty()
                     ? fmt::format("the model has no tokenizer.chat_template; using {} (choose with --chat-template: {})", kFallback, known_list())
                     : fmt::format("tokenizer.chat_template not recognised; falling back to {} (choose with --chat-template: {})", kFallback, known_list());
    }
    name = kFallback;
  }
  ChatTemplate t = by_name(name);
  if (name == "qwen" && contains(text, kQwen25System)) t.default_system_ = std::string(kQwen25System);
  return t;
}

ChatTemplate ChatTemplate::from_gguf(const gguf::File& f, std::string_view override_name, std::string* warning) {
  const auto text = f.find_string("tokenizer.chat_template");
  return from_text(text ? *text : std::string_view{}, override_name, warning);
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
  if (name_ == "deepseek") return render_deepseek(m, gen);
  if (name_ == "zephyr") return render_zephyr(m, gen);
  fail(ErrorKind::Internal, "chat template '{}' has no renderer", name_);
}

}  // namespace ember
