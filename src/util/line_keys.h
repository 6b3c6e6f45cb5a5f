// Turns the bytes a terminal sends into editing keys: UTF-8 characters, control keys,
// CSI/SS3 escape sequences (arrows, Home/End, Delete, Ctrl-arrows) and bracketed paste
// (ESC[200~ ... ESC[201~, delivered as one Paste key so a pasted newline never submits).
#pragma once
#include <functional>
#include <string>

namespace ember {

enum class KeyKind {
  Text,         // a character to insert (UTF-8 in Key::text)
  Paste,        // pasted text, line ends normalised to "\n"
  Enter,
  NewLine,      // Alt-Enter: insert a line break without submitting
  Backspace,
  Delete,
  Left, Right, Up, Down, Home, End,
  WordLeft, WordRight,
  KillToEnd,    // Ctrl-K
  KillToStart,  // Ctrl-U
  KillWord,     // Ctrl-W
  ClearScreen,  // Ctrl-L
  Interrupt,    // Ctrl-C
  EndOfFile,    // Ctrl-D
  Closed,       // the input ended or failed
  Ignored,      // an unknown sequence, consumed whole
};

struct Key {
  KeyKind kind = KeyKind::Ignored;
  std::string text;
};

// Reads one byte; timeout_ms < 0 waits forever. Returns the byte, -1 on timeout, -2 when
// the input is closed.
using ByteSource = std::function<int(int timeout_ms)>;

// Reads bytes until one whole key is known. A lone ESC (nothing follows within 50 ms) is
// Ignored.
Key read_key(const ByteSource& next_byte);

}  // namespace ember
