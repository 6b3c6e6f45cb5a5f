// Small terminal facts and switches: is a stream a terminal, may we colour it, how wide is
// it, and raw mode for the line editor (RAII, restored on every exit path).
#pragma once
#include <string>
#include <string_view>
#include <termios.h>

namespace ember {

bool is_terminal(int fd);

// Colours only on a terminal, never with NO_COLOR set to anything non-empty
// (no-color.org) or TERM=dumb.
bool colours_wanted(int fd);

// Columns of the terminal on fd; 80 when unknown.
int terminal_columns(int fd);

// ANSI styles, empty strings when colours are off, so callers never branch.
struct Style {
  explicit Style(bool enabled);
  std::string reset, dim, bold, user, assistant, info, warning, error;
};

// Puts a terminal in raw mode (no echo, no line buffering, no signals from keys: Ctrl-C
// arrives as byte 3) for as long as the object lives. Output processing stays on, so "\n"
// still starts a new line.
class RawMode {
 public:
  explicit RawMode(int fd);
  ~RawMode();
  RawMode(const RawMode&) = delete;
  RawMode& operator=(const RawMode&) = delete;
  bool active() const { return active_; }

 private:
  int fd_;
  bool active_ = false;
  termios saved_{};
};

// Writes all of `text` to fd, retrying after signals and partial writes.
void write_all(int fd, std::string_view text);

}  // namespace ember
