// A small line editor for the chat REPL (our own rather than readline/libedit: we need
// bracketed paste as one message, Ctrl-C that cancels a line instead of killing the
// process, and no extra build dependency).
//
// Keys: Left/Right, Home/End (Ctrl-A/E), Ctrl/Alt-arrows by word, Backspace, Delete,
// Ctrl-K/U/W kill, Ctrl-L clear screen, Up/Down history, Enter submits, a trailing
// backslash or Alt-Enter continues on a new line, pasted text (bracketed paste) is
// inserted whole, Ctrl-C cancels the line, Ctrl-D on an empty line ends the input.
//
// When the input is not a terminal it reads plain lines (with the same trailing-backslash
// continuation) and echoes nothing, so scripts can pipe questions in.
#pragma once
#include <string>

#include "util/line_buffer.h"

namespace ember {

class LineEditor {
 public:
  LineEditor(int in_fd, int out_fd);

  enum class Status { Line, Cancelled, EndOfInput };
  struct Result {
    Status status;
    std::string text;
  };

  // prompt: shown before the first line; continuation: before each further line. Both may
  // carry colour escapes; visible_* give their widths in columns.
  Result read(const std::string& prompt, int prompt_columns, const std::string& continuation,
              int continuation_columns);

  History& history() { return history_; }
  bool interactive() const { return interactive_; }

 private:
  Result read_plain();
  Result read_interactive();
  void refresh();
  void move_to_end_and_newline();
  int read_byte(int timeout_ms);

  int in_fd_, out_fd_;
  bool interactive_;
  History history_;
  LineBuffer buffer_;
  std::string prompt_, continuation_;
  int prompt_columns_ = 0, continuation_columns_ = 0;
  int cursor_row_ = 0;  // rows between the prompt's first row and the cursor, as last drawn
  std::string pending_;  // bytes read past a line in plain mode
};

}  // namespace ember
