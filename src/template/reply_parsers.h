// The two kinds of ReplyParser behind make_reply_parser (reply_parser.h): text with marker
// tags (<think>, <tool_call>, [TOOL_CALLS], Llama 3's JSON), and gpt-oss's Harmony channels.
#pragma once
#include <memory>

#include "template/reply_parser.h"

namespace ember {

std::unique_ptr<ReplyParser> make_tagged_reply_parser(const ReplyParserOptions& options);
std::unique_ptr<ReplyParser> make_harmony_reply_parser(const ReplyParserOptions& options);

}  // namespace ember
