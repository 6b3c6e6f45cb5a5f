// A generation's text as pieces arrive, cut at the first stop string (which is not kept).
// What push() returns may be shown at once: text that could still become the start of a
// stop string is held back until the next pieces decide, so a stream never shows a stop
// string's first half.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace ember {

class StopStringFilter {
 public:
  explicit StopStringFilter(std::vector<std::string> stops);

  // The text that became final with this piece; nothing once a stop string was seen.
  std::string push(std::string_view piece);
  // At the end of generation: the text still held back (none after a stop string).
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  size_t held_back() const;  // longest tail of pending_ that starts some stop string

  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
};

}  // namespace ember
