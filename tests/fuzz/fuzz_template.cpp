// libFuzzer target for the Jinja interpreter (`make fuzz`): any template text must either
// render or fail with one ember::Error(InvalidArgument) -- never crash, hang past its step
// limit, overflow the stack or hit UB. The template renders over a fixed conversation (with
// tools and tool calls), and what it renders must be within the output limit with data
// ranges that are sorted, disjoint and inside the output.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "template/jinja/error.h"
#include "template/jinja/template.h"
#include "util/error.h"
#include "util/json.h"

namespace {

const ember::jinja::Dict& variables() {
  static const ember::jinja::Dict vars = [] {
    const ember::json::Value conv = ember::json::parse(R"({
      "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi <|im_start|> ü"},
                   {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                    "function": {"name": "f", "arguments": {"x": 1, "y": [1.5, null, true]}}}]},
                   {"role": "tool", "tool_call_id": "c1", "content": "42"}],
      "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
      "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "enable_thinking": false})",
                                                       "fuzz vars");
    ember::jinja::Dict d;
    for (const auto& [k, v] : conv.items()) d.set(k, ember::jinja::Value::from_json(v));
    return d;
  }();
  return vars;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  try {
    const ember::jinja::Text out = ember::jinja::Template::parse(source).render(variables(), 0);
    if (out.bytes.size() > ember::jinja::kMaxOutputBytes) __builtin_trap();
    uint32_t last_end = 0;
    for (const ember::jinja::Span& s : out.data) {
      if (s.begin >= s.end || s.begin < last_end || s.end > out.bytes.size()) __builtin_trap();
      last_end = s.end;
    }
  } catch (const ember::Error& e) {
    if (e.kind() != ember::ErrorKind::InvalidArgument) __builtin_trap();  // template errors only
  }
  return 0;
}
