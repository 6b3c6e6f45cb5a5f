#include "grammar/utf8_ranges.h"

#include <algorithm>

#include "util/utf8.h"

namespace ember::grammar {
namespace {

int utf8_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

// [lo, hi] with both ends of the same encoded length, split until every byte position
// ranges independently: the range must cover whole blocks of continuation bytes below the
// first byte where lo and hi differ.
void split_same_length(uint32_t lo, uint32_t hi, std::vector<ByteRangeSequence>& out) {
  const int n = utf8_length(lo);
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (uint32_t{1} << (6 * i)) - 1;  // the low i continuation bytes
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split_same_length(lo, lo | m, out);
        split_same_length((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split_same_length(lo, (hi & ~m) - 1, out);
        split_same_length(hi & ~m, hi, out);
        return;
      }
    }
  }
  const std::string a = encode_utf8(lo), b = encode_utf8(hi);
  ByteRangeSequence seq;
  for (size_t i = 0; i < a.size(); ++i) seq.emplace_back(static_cast<uint8_t>(a[i]), static_cast<uint8_t>(b[i]));
  out.push_back(std::move(seq));
}

}  // namespace

std::string encode_utf8(uint32_t cp) {
  std::string s;
  append_utf8(s, cp);
  return s;
}

void utf8_sequences(uint32_t lo, uint32_t hi, std::vector<ByteRangeSequence>& out) {
  // Surrogates have no UTF-8 encoding: cut them out first.
  if (lo <= 0xDFFF && hi >= 0xD800) {
    if (lo < 0xD800) utf8_sequences(lo, 0xD7FF, out);
    if (hi > 0xDFFF) utf8_sequences(0xE000, hi, out);
    return;
  }
  for (uint32_t limit : {0x7Fu, 0x7FFu, 0xFFFFu}) {
    if (lo <= limit && hi > limit) {
      utf8_sequences(lo, limit, out);
      utf8_sequences(limit + 1, hi, out);
      return;
    }
  }
  split_same_length(lo, hi, out);
}

std::vector<CodePointRange> normalise_ranges(std::vector<CodePointRange> ranges, bool negate) {
  std::sort(ranges.begin(), ranges.end());
  std::vector<CodePointRange> merged;
  for (const auto& r : ranges) {
    if (r.first > r.second) continue;
    if (!merged.empty() && r.first <= merged.back().second + 1) merged.back().second = std::max(merged.back().second, r.second);
    else merged.push_back(r);
  }
  if (!negate) return merged;
  std::vector<CodePointRange> out;
  uint32_t next = 0;
  for (const auto& r : merged) {
    if (r.first > next) out.emplace_back(next, r.first - 1);
    next = r.second + 1;
  }
  if (next <= kMaxCodePoint) out.emplace_back(next, kMaxCodePoint);
  return out;
}

}  // namespace ember::grammar
