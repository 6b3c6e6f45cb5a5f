// libFuzzer target for the reply parsers (template/reply_parser.h, `make fuzz`): any model
// text, in every syntax, with and without <think> and an open reasoning, must parse without
// crashing, and pushing it in pieces (cut where the input's first bytes say) must give the
// same content, reasoning and calls as pushing it whole.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "template/reply_parser.h"

namespace {

std::string flat(const ember::ParsedReply& r) {
  std::string s = r.content + '\x01' + r.reasoning;
  for (const ember::ToolCall& c : r.tool_calls) s += '\x02' + c.name + '\x03' + c.arguments;
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  ember::ReplyParserOptions o;
  o.format.tools = static_cast<ember::ToolCallSyntax>(data[0] % 5);
  o.format.think_tags = data[0] & 8;
  o.reasoning_open = data[0] & 16;
  o.parse_tools = data[0] & 32;
  const size_t step = 1 + data[1] % 16;  // piece length
  const std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
  const std::string whole = flat(ember::parse_reply(o, text));
  std::unique_ptr<ember::ReplyParser> p = ember::make_reply_parser(o);
  ember::ParsedReply pieces;
  for (size_t at = 0; at < text.size(); at += step) pieces.add(p->push(text.substr(at, step)));
  pieces.add(p->finish());
  if (flat(pieces) != whole) __builtin_trap();
  return 0;
}
