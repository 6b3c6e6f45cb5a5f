// UTF-8 stepping and terminal display width for the line editor, which must know where
// the cursor lands after CJK (2 columns) or combining marks (0 columns).
#pragma once
#include <cstddef>
#include <string_view>

namespace ember {

// Byte length of the UTF-8 sequence a lead byte starts (1 for invalid leads, so malformed
// input still advances).
size_t utf8_sequence_length(unsigned char lead);

// Index of the next / previous code point boundary (clamped to [0, size]).
size_t next_boundary(std::string_view s, size_t i);
size_t prev_boundary(std::string_view s, size_t i);

// The code point starting at s[i] (U+FFFD when malformed).
char32_t decode_at(std::string_view s, size_t i);

// Columns a code point occupies: 0 for combining marks and zero-width characters, 2 for
// East Asian wide/fullwidth and most emoji, 1 otherwise. Control characters are not
// handled here (the editor shows them as ^X).
int codepoint_columns(char32_t cp);

}  // namespace ember
