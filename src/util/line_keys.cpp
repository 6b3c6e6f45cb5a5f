#include "util/line_keys.h"

#include <string_view>

#include "util/text_width.h"

namespace ember {

namespace {

constexpr int kEscapeTimeoutMs = 50;

Key key(KeyKind kind) { return Key{kind, {}}; }

// Bracketed paste: everything up to ESC[201~ is text.
Key read_paste(const ByteSource& next_byte) {
  static constexpr std::string_view kEnd = "\x1b[201~";
  std::string text;
  for (;;) {
    const int b = next_byte(-1);
    if (b < 0) break;
    text += static_cast<char>(b);
    if (text.size() >= kEnd.size() && std::string_view(text).substr(text.size() - kEnd.size()) == kEnd) {
      text.resize(text.size() - kEnd.size());
      break;
    }
  }
  std::string normalised;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r') {
      normalised += '\n';
      if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
    } else {
      normalised += text[i];
    }
  }
  return Key{KeyKind::Paste, std::move(normalised)};
}

// CSI: ESC [ parameters intermediates final.
Key read_csi(const ByteSource& next_byte) {
  std::string params;
  int final_byte = -1;
  for (;;) {
    const int b = next_byte(kEscapeTimeoutMs);
    if (b < 0) return key(KeyKind::Ignored);
    if (b >= 0x40 && b <= 0x7E) {
      final_byte = b;
      break;
    }
    params += static_cast<char>(b);
  }
  const bool ctrl = params == "1;5" || params == "1;3";  // Ctrl- or Alt-modified arrows
  switch (final_byte) {
    case 'A': return key(KeyKind::Up);
    case 'B': return key(KeyKind::Down);
    case 'C': return key(ctrl ? KeyKind::WordRight : KeyKind::Right);
    case 'D': return key(ctrl ? KeyKind::WordLeft : KeyKind::Left);
    case 'H': return key(KeyKind::Home);
    case 'F': return key(KeyKind::End);
    case '~':
      if (params == "200") return read_paste(next_byte);
      if (params == "1" || params == "7") return key(KeyKind::Home);
      if (params == "4" || params == "8") return key(KeyKind::End);
      if (params == "3") return key(KeyKind::Delete);
      return key(KeyKind::Ignored);
    default: return key(KeyKind::Ignored);
  }
}

Key read_escape(const ByteSource& next_byte) {
  const int b = next_byte(kEscapeTimeoutMs);
  if (b < 0) return key(KeyKind::Ignored);  // a lone ESC
  switch (b) {
    case '[': return read_csi(next_byte);
    case 'O': {  // SS3: application-mode arrows and Home/End
      const int c = next_byte(kEscapeTimeoutMs);
      switch (c) {
        case 'A': return key(KeyKind::Up);
        case 'B': return key(KeyKind::Down);
        case 'C': return key(KeyKind::Right);
        case 'D': return key(KeyKind::Left);
        case 'H': return key(KeyKind::Home);
        case 'F': return key(KeyKind::End);
        default: return key(KeyKind::Ignored);
      }
    }
    case '\r':
    case '\n': return key(KeyKind::NewLine);
    case 'b': return key(KeyKind::WordLeft);
    case 'f': return key(KeyKind::WordRight);
    case 0x7F: return key(KeyKind::KillWord);  // Alt-Backspace
    default: return key(KeyKind::Ignored);
  }
}

}  // namespace

Key read_key(const ByteSource& next_byte) {
  const int b = next_byte(-1);
  if (b < 0) return key(KeyKind::Closed);
  switch (b) {
    case 0x01: return key(KeyKind::Home);
    case 0x02: return key(KeyKind::Left);
    case 0x03: return key(KeyKind::Interrupt);
    case 0x04: return key(KeyKind::EndOfFile);
    case 0x05: return key(KeyKind::End);
    case 0x06: return key(KeyKind::Right);
    case 0x08:
    case 0x7F: return key(KeyKind::Backspace);
    case 0x09: return Key{KeyKind::Text, "    "};  // a typed Tab indents; terminals' tab stops would break the layout
    case '\n':
    case '\r': return key(KeyKind::Enter);
    case 0x0B: return key(KeyKind::KillToEnd);
    case 0x0C: return key(KeyKind::ClearScreen);
    case 0x0E: return key(KeyKind::Down);
    case 0x10: return key(KeyKind::Up);
    case 0x15: return key(KeyKind::KillToStart);
    case 0x17: return key(KeyKind::KillWord);
    case 0x1B: return read_escape(next_byte);
    default: break;
  }
  if (b < 0x20) return key(KeyKind::Ignored);
  std::string text(1, static_cast<char>(b));
  const size_t n = utf8_sequence_length(static_cast<unsigned char>(b));
  for (size_t k = 1; k < n; ++k) {
    const int c = next_byte(kEscapeTimeoutMs);
    if (c < 0) break;
    text += static_cast<char>(c);
  }
  return Key{KeyKind::Text, std::move(text)};
}

}  // namespace ember
