// A model's reply split into what the APIs carry apart: the answer (content), its
// reasoning, and its tool calls. Text arrives in pieces as it is generated; push() returns
// what became final, holding back text that may be the start of a marker (a "<tool_c"
// at the end of a piece), so a stream never shows half a marker. A tool call is given
// whole once its end is seen; one that is not well formed comes back as content, markers
// included. Pushing a reply in any split gives the same pieces, merged, as pushing it whole.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "template/reply_format.h"
#include "template/tool_call.h"

namespace ember {

struct ReplyPiece {
  enum class Kind { Content, Reasoning, ToolCall };
  Kind kind = Kind::Content;
  std::string text;  // Content, Reasoning
  ToolCall call;     // ToolCall
};
using ReplyPieces = std::vector<ReplyPiece>;

struct ReplyParserOptions {
  ReplyFormat format;
  bool parse_tools = false;     // the request gave tools and tool_choice is not "none"
  bool reasoning_open = false;  // the prompt ends inside <think> (prompt_opens_reasoning)
  // Text the prompt already ends with that belongs to the reply (forced_call_opening): the
  // parser reads it first, as if the model had written it.
  std::string prefill;
};

class ReplyParser {
 public:
  virtual ~ReplyParser() = default;
  virtual ReplyPieces push(std::string_view text) = 0;
  virtual ReplyPieces finish() = 0;  // at the end of generation: everything still held
};

std::unique_ptr<ReplyParser> make_reply_parser(const ReplyParserOptions& options);

// A whole reply, its pieces merged.
struct ParsedReply {
  std::string content, reasoning;
  std::vector<ToolCall> tool_calls;
  void add(const ReplyPieces& pieces);
};
ParsedReply parse_reply(const ReplyParserOptions& options, std::string_view text);

// Appends `text` of `kind` to `out`, merged with the last piece when it is of the same kind.
void append_text(ReplyPieces& out, ReplyPiece::Kind kind, std::string_view text);

// The length of the longest tail of `text` that is a proper prefix of one of `markers`:
// what must wait for more text before it can be shown.
size_t marker_prefix_tail(std::string_view text, const std::vector<std::string_view>& markers);

}  // namespace ember
