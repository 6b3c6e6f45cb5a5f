#include "template/reply_parser.h"

#include "template/reply_parsers.h"

namespace ember {

std::unique_ptr<ReplyParser> make_reply_parser(const ReplyParserOptions& options) {
  if (options.format.tools == ToolCallSyntax::Harmony) return make_harmony_reply_parser(options);
  return make_tagged_reply_parser(options);
}

void append_text(ReplyPieces& out, ReplyPiece::Kind kind, std::string_view text) {
  if (text.empty()) return;
  if (!out.empty() && out.back().kind == kind) out.back().text += text;
  else out.push_back(ReplyPiece{kind, std::string(text), {}});
}

size_t marker_prefix_tail(std::string_view text, const std::vector<std::string_view>& markers) {
  size_t longest = 0;
  for (std::string_view m : markers) {
    for (size_t n = std::min(text.size(), m.size() - 1); n > longest; --n) {
      if (text.substr(text.size() - n) == m.substr(0, n)) {
        longest = n;
        break;
      }
    }
  }
  return longest;
}

void ParsedReply::add(const ReplyPieces& pieces) {
  for (const ReplyPiece& p : pieces) {
    switch (p.kind) {
      case ReplyPiece::Kind::Content: content += p.text; break;
      case ReplyPiece::Kind::Reasoning: reasoning += p.text; break;
      case ReplyPiece::Kind::ToolCall: tool_calls.push_back(p.call); break;
    }
  }
}

ParsedReply parse_reply(const ReplyParserOptions& options, std::string_view text) {
  std::unique_ptr<ReplyParser> parser = make_reply_parser(options);
  ParsedReply out;
  out.add(parser->push(text));
  out.add(parser->finish());
  return out;
}

}  // namespace ember
