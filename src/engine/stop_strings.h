// A generation's text as pieces arrive, cut at the first stop string (which is not kept).
// What push() returns may be shown at once: text that could still become the start of a
// stop string is held back until the next pieces decide, so a stream never shows a stop
// string's first half.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

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

// A generation's text token by token: bytes held until they form whole UTF-8 characters
// (StreamingDecoder), then through the stop strings. What push() and finish() return may be
// shown at once; together they are the whole text.
class GeneratedText {
 public:
  // render_special: control tokens' text is part of it (a reply parser reads markers such as
  // [TOOL_CALLS] or Harmony's <|channel|> that are control tokens of their vocabularies).
  GeneratedText(const Tokenizer& tok, std::vector<std::string> stops, bool render_special = false)
      : decoder_(tok, StreamingDecoder::LeadingSpace::Keep, render_special), filter_(std::move(stops)) {}
  std::string push(int32_t token) { return filter_.push(decoder_.push(token)); }
  std::string finish();  // at the end of generation: what is still held back
  bool stopped() const { return filter_.stopped(); }

 private:
  StreamingDecoder decoder_;
  StopStringFilter filter_;
};

}  // namespace ember
