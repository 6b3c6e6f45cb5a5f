// Chat templates: each family's rendering of one conversation against a string written by hand
// from the family's documented format, recognition of real template texts, and the fallbacks.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "test_tokenizer_util.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

using ember::ChatMessage;
using ember::ChatTemplate;

namespace {

const std::vector<ChatMessage> kChat = {
    {"system", "You are terse."},
    {"user", "Hi"},
    {"assistant", "Hello!"},
    {"user", "How are you?"},
};

std::string render(const char* name, const std::vector<ChatMessage>& m = kChat, bool gen = true) {
  return ChatTemplate::by_name(name).render(m, gen);
}

}  // namespace

TEST_CASE("renderings match each family's documented format") {
  CHECK(render("chatml") ==
        "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nHow are you?<|im_end|>\n"
        "<|im_start|>assistant\n");
  CHECK(render("qwen", {{"user", "Hi"}}) ==
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\n");
  CHECK(render("qwen", {{"system", "S"}, {"user", "Hi"}}) ==
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  CHECK(render("llama2") ==
        "[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\nHi [/INST] Hello! </s><s>[INST] How are you? [/INST]");
  CHECK(render("llama3") ==
        "<|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nHow are you?<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n");
  CHECK(render("mistral") == "[INST] You are terse.\n\nHi [/INST]Hello!</s>[INST] How are you? [/INST]");
  CHECK(render("gemma") ==
        "<start_of_turn>user\nYou are terse.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n"
        "<start_of_turn>user\nHow are you?<end_of_turn>\n<start_of_turn>model\n");
  CHECK(render("phi3") ==
        "<|system|>\nYou are terse.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\nHello!<|end|>\n"
        "<|user|>\nHow are you?<|end|>\n<|assistant|>\n");
  CHECK(render("zephyr") ==
        "<|system|>\nYou are terse.</s>\n<|user|>\nHi</s>\n<|assistant|>\nHello!</s>\n"
        "<|user|>\nHow are you?</s>\n<|assistant|>\n");
  CHECK(render("deepseek") ==
        "You are terse.\n\nUser: Hi\n\nAssistant: Hello!<｜end▁of▁sentence｜>User: How are you?\n\nAssistant:");
  // Without the generation prompt the conversation simply ends after the last turn.
  CHECK(render("chatml", {{"user", "Hi"}}, false) == "<|im_start|>user\nHi<|im_end|>\n");
  CHECK(render("gemma", {{"user", "Hi"}}, false) == "<start_of_turn>user\nHi<end_of_turn>\n");
}

TEST_CASE("real template texts are recognised") {
  struct Sample {
    const char* family;
    const char* text;
  };
  const Sample samples[] = {
      {"chatml", "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"},
      {"qwen", "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"},
      {"llama2", "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% endif %}{% for message in loop_messages %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}"},
      {"llama3", "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}"},
      {"mistral", "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% endif %}{% endfor %}"},
      {"gemma", "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\\n'}}{% endif %}"},
      {"zephyr", "{% for message in messages %}\\n{% if message['role'] == 'user' %}\\n{{ '<|user|>\\n' + message['content'] + eos_token }}\\n{% elif message['role'] == 'assistant' %}\\n{{ '<|assistant|>\\n'  + message['content'] + eos_token }}\\n{% endif %}{% endfor %}"},
      {"deepseek", "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ 'User: ' + message['content'] + '\\n\\n' }}{% elif message['role'] == 'assistant' %}{{ 'Assistant: ' + message['content'] + eos_token }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"},
  };
  for (const Sample& s : samples) {
    CAPTURE(s.family);
    CHECK(ember::detect_chat_template(s.text) == s.family);
    std::string warning;
    CHECK(ChatTemplate::from_text(s.text, "", &warning).name() == s.family);
    CHECK(warning.empty());
  }
}

TEST_CASE("the phi-3 vocabulary's own template is recognised and its markers tokenize as control tokens") {
  const auto file = ember::gguf::File::open(ember::test::vocab_path("phi-3"));
  std::string warning;
  const ChatTemplate t = ChatTemplate::from_gguf(file, "", &warning);
  CHECK(t.name() == "phi3");
  CHECK(warning.empty());
  const ember::Tokenizer tok = ember::Tokenizer::from_gguf(file);
  const auto ids = tok.encode(t.render(std::vector<ChatMessage>{{"user", "Hi"}}, true), true, true);
  REQUIRE(ids.size() >= 4);
  CHECK(ids.front() == tok.bos());
  CHECK(ids[1] == 32010);  // <|user|>
  CHECK(std::find(ids.begin(), ids.end(), 32007) != ids.end());  // <|end|>
  CHECK(std::find(ids.begin(), ids.end(), 32001) != ids.end());  // <|assistant|>
  CHECK(tok.is_eog(32007));
}

TEST_CASE("unrecognised or missing templates warn and name the fallback; overrides win") {
  // Without the model's vocabulary no family's markers can be checked: the plain-text fallback.
  std::string warning;
  CHECK(ChatTemplate::from_text("{{ messages | tojson }}", "", &warning).name() == "plain");
  CHECK(warning.find("not recognised") != std::string::npos);
  CHECK(warning.find("using template plain because") != std::string::npos);
  CHECK(warning.find("base model") == std::string::npos);  // it has a template, just not one we know
  warning.clear();
  CHECK(ChatTemplate::from_text("", "", &warning).name() == "plain");
  CHECK(warning.find("no tokenizer.chat_template") != std::string::npos);
  CHECK(warning.find("base model") != std::string::npos);
  warning.clear();
  CHECK(ChatTemplate::from_text("<|im_start|>", "gemma", &warning).name() == "gemma");
  CHECK(warning.empty());
  CHECK_THROWS_AS(ChatTemplate::from_text("", "nonsense", &warning), ember::Error);
  CHECK_THROWS_AS(render("chatml", {{"robot", "x"}}), ember::Error);
  const auto file = ember::gguf::File::open(ember::test::vocab_path("gpt-2"));  // has no template
  warning.clear();
  CHECK(ChatTemplate::from_gguf(file, "", &warning).name() == "plain");  // <|endoftext|> names no chat format
  CHECK(warning.find("no chat format's turn markers are special tokens of the vocabulary (general.architecture gpt2)") !=
        std::string::npos);
}

TEST_CASE("plain renders User:/Assistant: text that any vocabulary reads") {
  CHECK(render("plain") ==
        "You are terse.\n\nUser: Hi\n\nAssistant: Hello!\n\nUser: How are you?\n\nAssistant:");
  CHECK(render("plain", {{"user", "Hi"}, {"assistant", " Hello!\n"}}, false) == "User: Hi\n\nAssistant: Hello!\n\n");
}
