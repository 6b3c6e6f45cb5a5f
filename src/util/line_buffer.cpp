#include "util/line_buffer.h"

#include "util/text_width.h"

namespace ember {

namespace {
bool is_word_byte(char c) { return c != ' ' && c != '\n' && c != '\t'; }
}  // namespace

void LineBuffer::insert(std::string_view s) {
  text_.insert(cursor_, s);
  cursor_ += s.size();
}

void LineBuffer::backspace() {
  if (cursor_ == 0) return;
  const size_t start = prev_boundary(text_, cursor_);
  text_.erase(start, cursor_ - start);
  cursor_ = start;
}

void LineBuffer::erase_forward() {
  if (cursor_ >= text_.size()) return;
  text_.erase(cursor_, next_boundary(text_, cursor_) - cursor_);
}

void LineBuffer::left() { cursor_ = prev_boundary(text_, cursor_); }
void LineBuffer::right() { cursor_ = next_boundary(text_, cursor_); }

size_t LineBuffer::line_start() const {
  const size_t nl = cursor_ == 0 ? std::string::npos : text_.rfind('\n', cursor_ - 1);
  return nl == std::string::npos ? 0 : nl + 1;
}

size_t LineBuffer::line_end() const {
  const size_t nl = text_.find('\n', cursor_);
  return nl == std::string::npos ? text_.size() : nl;
}

void LineBuffer::home() { cursor_ = line_start(); }
void LineBuffer::end() { cursor_ = line_end(); }

void LineBuffer::word_left() {
  while (cursor_ > 0 && !is_word_byte(text_[cursor_ - 1])) --cursor_;
  while (cursor_ > 0 && is_word_byte(text_[cursor_ - 1])) --cursor_;
}

void LineBuffer::word_right() {
  while (cursor_ < text_.size() && !is_word_byte(text_[cursor_])) ++cursor_;
  while (cursor_ < text_.size() && is_word_byte(text_[cursor_])) ++cursor_;
}

void LineBuffer::kill_to_end() { text_.erase(cursor_, line_end() - cursor_); }

void LineBuffer::kill_to_start() {
  const size_t start = line_start();
  text_.erase(start, cursor_ - start);
  cursor_ = start;
}

void LineBuffer::kill_word() {
  const size_t end = cursor_;
  while (cursor_ > 0 && !is_word_byte(text_[cursor_ - 1])) --cursor_;
  while (cursor_ > 0 && is_word_byte(text_[cursor_ - 1])) --cursor_;
  text_.erase(cursor_, end - cursor_);
}

void LineBuffer::set(std::string text) {
  text_ = std::move(text);
  cursor_ = text_.size();
}

void History::add(const std::string& entry) {
  if (entry.empty() || (!entries_.empty() && entries_.back() == entry)) return;
  entries_.push_back(entry);
  if (entries_.size() > capacity_) entries_.erase(entries_.begin());
}

void History::start(const std::string& current) {
  position_ = entries_.size();
  draft_ = current;
}

const std::string* History::older() {
  if (position_ == 0) return nullptr;
  return &entries_[--position_];
}

const std::string* History::newer() {
  if (position_ >= entries_.size()) return nullptr;
  ++position_;
  return position_ == entries_.size() ? &draft_ : &entries_[position_];
}

}  // namespace ember
