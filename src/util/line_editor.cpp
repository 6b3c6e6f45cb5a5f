#include "util/line_editor.h"

#include <cerrno>
#include <poll.h>
#include <unistd.h>

#include <fmt/format.h>

#include "util/line_keys.h"
#include "util/terminal.h"
#include "util/text_width.h"

namespace ember {

namespace {

constexpr std::string_view kPasteOn = "\x1b[?2004h";
constexpr std::string_view kPasteOff = "\x1b[?2004l";

// How a buffer byte sequence is shown: tabs as four spaces, other control characters as
// ^X, everything else as itself.
struct Glyph {
  std::string shown;
  int columns;
  size_t end;  // index of the next glyph in the buffer
};

Glyph glyph_at(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c == '\t') return {"    ", 4, i + 1};
  if (c < 0x20 || c == 0x7F) return {fmt::format("^{}", static_cast<char>(c ^ 0x40)), 2, i + 1};
  const size_t end = next_boundary(s, i);
  return {std::string(s.substr(i, end - i)), codepoint_columns(decode_at(s, i)), end};
}

// Where things land on screen when `text` is drawn after the prompt at column 0, with
// `continuation` before every further line and wrapping at `columns`.
struct Layout {
  int cursor_row = 0, cursor_col = 0;
  int end_row = 0, end_col = 0;
};

Layout lay_out(std::string_view text, size_t cursor, int prompt_cols, int cont_cols, int columns) {
  Layout l;
  int row = 0, col = prompt_cols;
  auto wrap_if_full = [&] {
    if (col >= columns) {
      row += col / columns;
      col %= columns;
    }
  };
  wrap_if_full();
  for (size_t i = 0; i < text.size();) {
    if (i == cursor) l.cursor_row = row, l.cursor_col = col;
    if (text[i] == '\n') {
      ++row;
      col = cont_cols;
      wrap_if_full();
      ++i;
      continue;
    }
    const Glyph g = glyph_at(text, i);
    if (col + g.columns > columns) ++row, col = 0;  // a wide glyph does not split
    col += g.columns;
    wrap_if_full();
    i = g.end;
  }
  if (cursor >= text.size()) l.cursor_row = row, l.cursor_col = col;
  l.end_row = row, l.end_col = col;
  return l;
}

}  // namespace

LineEditor::LineEditor(int in_fd, int out_fd)
    : in_fd_(in_fd), out_fd_(out_fd), interactive_(is_terminal(in_fd) && is_terminal(out_fd)) {}

int LineEditor::read_byte(int timeout_ms) {
  for (;;) {
    if (timeout_ms >= 0) {
      pollfd p{in_fd_, POLLIN, 0};
      const int r = ::poll(&p, 1, timeout_ms);
      if (r == 0) return -1;
      if (r < 0 && errno != EINTR) return -2;
      if (r < 0) continue;
    }
    unsigned char c;
    const ssize_t n = ::read(in_fd_, &c, 1);
    if (n == 1) return c;
    if (n < 0 && errno == EINTR) continue;  // SIGWINCH and friends
    return -2;
  }
}

LineEditor::Result LineEditor::read(const std::string& prompt, int prompt_columns, const std::string& continuation,
                                    int continuation_columns) {
  prompt_ = prompt;
  continuation_ = continuation;
  prompt_columns_ = prompt_columns;
  continuation_columns_ = continuation_columns;
  return interactive_ ? read_interactive() : read_plain();
}

LineEditor::Result LineEditor::read_plain() {
  std::string message;
  bool any = false;
  for (;;) {
    size_t nl;
    while ((nl = pending_.find('\n')) == std::string::npos) {
      char chunk[4096];
      const ssize_t n = ::read(in_fd_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) return {Status::Cancelled, {}};
      if (n <= 0) {
        if (pending_.empty() && !any) return {Status::EndOfInput, {}};
        message += pending_;  // a last line without "\n"
        pending_.clear();
        return {Status::Line, message};
      }
      pending_.append(chunk, static_cast<size_t>(n));
    }
    std::string line = pending_.substr(0, nl);
    pending_.erase(0, nl + 1);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    any = true;
    if (!line.empty() && line.back() == '\\') {
      line.back() = '\n';
      message += line;
      continue;
    }
    return {Status::Line, message + line};
  }
}

void LineEditor::refresh() {
  const int columns = terminal_columns(out_fd_);
  const Layout l = lay_out(buffer_.text(), buffer_.cursor(), prompt_columns_, continuation_columns_, columns);
  std::string out;
  if (cursor_row_ > 0) out += fmt::format("\x1b[{}A", cursor_row_);
  out += "\r\x1b[J";
  out += prompt_;
  const std::string& text = buffer_.text();
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '\n') {
      out += "\n" + continuation_;  // output processing stays on in raw mode: "\n" is CR LF
      ++i;
      continue;
    }
    const Glyph g = glyph_at(text, i);
    out += g.shown;
    i = g.end;
  }
  // A line that exactly fills the width leaves the terminal's cursor in the last column;
  // make it really go to the next row, where the layout puts it.
  if (l.end_col == 0 && l.end_row > 0 && (text.empty() || text.back() != '\n')) out += "\n";
  if (l.end_row != l.cursor_row || l.end_col != l.cursor_col) {  // cursor inside the text
    if (l.end_row > l.cursor_row) out += fmt::format("\x1b[{}A", l.end_row - l.cursor_row);
    out += "\r";
    if (l.cursor_col > 0) out += fmt::format("\x1b[{}C", l.cursor_col);
  }
  write_all(out_fd_, out);
  cursor_row_ = l.cursor_row;
}

void LineEditor::move_to_end_and_newline() {
  buffer_.set(buffer_.text());  // cursor to the end
  refresh();
  write_all(out_fd_, "\n");
  cursor_row_ = 0;
}

LineEditor::Result LineEditor::read_interactive() {
  RawMode raw(in_fd_);
  write_all(out_fd_, kPasteOn);
  struct PasteOff {
    int fd;
    ~PasteOff() { write_all(fd, kPasteOff); }
  } paste_off{out_fd_};

  buffer_.clear();
  cursor_row_ = 0;
  history_.start({});
  refresh();
  auto byte_source = [this](int timeout_ms) { return read_byte(timeout_ms); };
  for (;;) {
    const Key k = read_key(byte_source);
    switch (k.kind) {
      case KeyKind::Text:
      case KeyKind::Paste: buffer_.insert(k.text); break;
      case KeyKind::NewLine: buffer_.insert("\n"); break;
      case KeyKind::Enter: {
        const std::string& t = buffer_.text();
        if (buffer_.cursor() == t.size() && !t.empty() && t.back() == '\\') {
          buffer_.backspace();
          buffer_.insert("\n");
          break;
        }
        std::string line = t;
        move_to_end_and_newline();
        history_.add(line);
        return {Status::Line, std::move(line)};
      }
      case KeyKind::Backspace: buffer_.backspace(); break;
      case KeyKind::Delete: buffer_.erase_forward(); break;
      case KeyKind::Left: buffer_.left(); break;
      case KeyKind::Right: buffer_.right(); break;
      case KeyKind::Home: buffer_.home(); break;
      case KeyKind::End: buffer_.end(); break;
      case KeyKind::WordLeft: buffer_.word_left(); break;
      case KeyKind::WordRight: buffer_.word_right(); break;
      case KeyKind::KillToEnd: buffer_.kill_to_end(); break;
      case KeyKind::KillToStart: buffer_.kill_to_start(); break;
      case KeyKind::KillWord: buffer_.kill_word(); break;
      case KeyKind::Up:
        if (const std::string* s = history_.older()) buffer_.set(*s);
        break;
      case KeyKind::Down:
        if (const std::string* s = history_.newer()) buffer_.set(*s);
        break;
      case KeyKind::ClearScreen:
        write_all(out_fd_, "\x1b[H\x1b[2J");
        cursor_row_ = 0;
        break;
      case KeyKind::Interrupt:
        move_to_end_and_newline();
        return {Status::Cancelled, {}};
      case KeyKind::EndOfFile:
        if (buffer_.empty()) {
          write_all(out_fd_, "\n");
          return {Status::EndOfInput, {}};
        }
        buffer_.erase_forward();
        break;
      case KeyKind::Closed: return {Status::EndOfInput, {}};
      case KeyKind::Ignored: continue;
    }
    refresh();
  }
}

}  // namespace ember
