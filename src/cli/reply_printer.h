// `ember chat`'s reply on the terminal as it streams: the model's reasoning (<think>…</think>,
// Harmony's analysis channel; template/reply_parser.h) dimmed, or left out with
// --hide-thinking, and the answer in the assistant's style.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "template/reply_parser.h"
#include "util/terminal.h"

namespace ember::cli {

class ReplyPrinter {
 public:
  ReplyPrinter(const ReplyFormat& format, const Style& style, bool show_thinking, std::function<void(std::string_view)> out);
  void push(std::string_view text);
  void finish();  // what was held back, and the style reset

 private:
  void print(const ReplyPieces& pieces);

  std::unique_ptr<ReplyParser> parser_;
  const Style& style_;
  bool show_thinking_;
  std::function<void(std::string_view)> out_;
  bool in_thinking_ = false;
  bool answered_ = false;  // some answer text was printed
};

}  // namespace ember::cli
