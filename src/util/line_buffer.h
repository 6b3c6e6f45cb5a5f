// The text being edited, its cursor, and the history: pure state, no terminal. The
// buffer may hold several lines ("\n"); the cursor is a byte index on a code point
// boundary.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace ember {

class LineBuffer {
 public:
  const std::string& text() const { return text_; }
  size_t cursor() const { return cursor_; }
  bool empty() const { return text_.empty(); }

  void insert(std::string_view s);
  void backspace();
  void erase_forward();  // Delete / Ctrl-D on a non-empty line
  void left();
  void right();
  void home();           // start of the current line
  void end();            // end of the current line
  void word_left();
  void word_right();
  void kill_to_end();    // to the end of the current line
  void kill_to_start();  // to the start of the current line
  void kill_word();      // the word before the cursor
  void set(std::string text);  // replaces all, cursor at the end
  void clear() { set({}); }

 private:
  size_t line_start() const;
  size_t line_end() const;
  std::string text_;
  size_t cursor_ = 0;
};

// Previous inputs for Up/Down. The entry being typed is kept while browsing and restored
// when coming back down past the newest entry.
class History {
 public:
  explicit History(size_t capacity = 1000) : capacity_(capacity) {}
  void add(const std::string& entry);  // skips empty entries and immediate repeats
  const std::vector<std::string>& entries() const { return entries_; }

  // Browsing: start() at the bottom, older()/newer() return the text to show, or nullptr
  // when there is nothing further in that direction.
  void start(const std::string& current);
  const std::string* older();
  const std::string* newer();

 private:
  size_t capacity_;
  std::vector<std::string> entries_;
  size_t position_ = 0;  // == entries_.size(): the line being typed
  std::string draft_;
};

}  // namespace ember
