#include "util/terminal.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <sys/ioctl.h>
#include <unistd.h>

namespace ember {

bool is_terminal(int fd) { return ::isatty(fd) == 1; }

bool colours_wanted(int fd) {
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color && *no_color) return false;
  const char* term = std::getenv("TERM");
  if (term && std::strcmp(term, "dumb") == 0) return false;
  return is_terminal(fd);
}

int terminal_columns(int fd) {
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

Style::Style(bool enabled) {
  if (!enabled) return;
  reset = "\x1b[0m";
  dim = "\x1b[2m";
  bold = "\x1b[1m";
  user = "\x1b[1;32m";
  assistant = "\x1b[0m";
  info = "\x1b[36m";
  warning = "\x1b[33m";
  error = "\x1b[1;31m";
}

RawMode::RawMode(int fd) : fd_(fd) {
  if (!is_terminal(fd) || ::tcgetattr(fd, &saved_) != 0) return;
  termios raw = saved_;
  raw.c_iflag &= ~static_cast<tcflag_t>(BRKINT | ICRNL | INPCK | ISTRIP | IXON);
  raw.c_cflag |= CS8;
  raw.c_lflag &= ~static_cast<tcflag_t>(ECHO | ICANON | IEXTEN | ISIG);
  raw.c_cc[VMIN] = 1;
  raw.c_cc[VTIME] = 0;
  active_ = ::tcsetattr(fd, TCSADRAIN, &raw) == 0;
}

RawMode::~RawMode() {
  if (active_) ::tcsetattr(fd_, TCSADRAIN, &saved_);
}

void write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // the terminal went away: nothing useful to do
    }
    text.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace ember
