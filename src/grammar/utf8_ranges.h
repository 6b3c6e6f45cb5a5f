// Code point ranges as UTF-8 byte sequences: [lo, hi] becomes a few sequences of byte
// ranges (every byte of a sequence ranging independently), whose union is exactly the
// UTF-8 encodings of the code points in [lo, hi] (surrogates excluded). This is how a GBNF
// character class becomes a byte-level rule.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ember::grammar {

using ByteRange = std::pair<uint8_t, uint8_t>;
using ByteRangeSequence = std::vector<ByteRange>;
using CodePointRange = std::pair<uint32_t, uint32_t>;

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// Appends the sequences for [lo, hi] (lo <= hi <= kMaxCodePoint) to `out`.
void utf8_sequences(uint32_t lo, uint32_t hi, std::vector<ByteRangeSequence>& out);

// Sorted, merged ranges; with `negate`, their complement in [0, kMaxCodePoint].
std::vector<CodePointRange> normalise_ranges(std::vector<CodePointRange> ranges, bool negate);

// The UTF-8 encoding of one code point.
std::string encode_utf8(uint32_t cp);

}  // namespace ember::grammar
