#include "cli/reply_printer.h"

namespace ember::cli {

ReplyPrinter::ReplyPrinter(const ReplyFormat& format, const Style& style, bool show_thinking,
                           std::function<void(std::string_view)> out)
    : parser_(make_reply_parser(ReplyParserOptions{format, false, false, ""})),
      style_(style),
      show_thinking_(show_thinking),
      out_(std::move(out)) {}

void ReplyPrinter::push(std::string_view text) { print(parser_->push(text)); }

void ReplyPrinter::finish() {
  print(parser_->finish());
  out_(style_.reset);
}

void ReplyPrinter::print(const ReplyPieces& pieces) {
  for (const ReplyPiece& p : pieces) {
    if (p.kind == ReplyPiece::Kind::Reasoning) {
      if (!show_thinking_) continue;
      if (!in_thinking_) out_(style_.reset + style_.dim);
      in_thinking_ = true;
      out_(p.text);
      continue;
    }
    if (in_thinking_) {
      out_(style_.reset + (answered_ ? "" : "\n") + style_.assistant);  // the answer starts on its own line
      in_thinking_ = false;
    }
    answered_ = true;
    out_(p.text);
  }
}

}  // namespace ember::cli
