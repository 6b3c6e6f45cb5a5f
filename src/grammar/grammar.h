// A grammar over bytes, the form the matcher runs: rules made of alternatives, each a
// sequence of elements, an element being a set of bytes or a reference to a rule. GBNF's
// characters are Unicode code points; gbnf_parser.h lowers each character class to the
// UTF-8 byte sequences it stands for (utf8_ranges.h), so a token that ends inside a
// character is just a matcher part way through its bytes.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace ember::grammar {

// 256 bits, one per byte value.
struct ByteSet {
  std::array<uint64_t, 4> bits{};
  bool has(uint8_t b) const { return (bits[b >> 6] >> (b & 63)) & 1; }
  void add(uint8_t lo, uint8_t hi) {
    for (int b = lo; b <= hi; ++b) bits[b >> 6] |= uint64_t{1} << (b & 63);
  }
  bool operator==(const ByteSet&) const = default;
};

enum class ElementKind : uint8_t {
  Bytes,  // value: index into Grammar::sets
  Rule,   // value: rule id
  End,    // closes an alternative
};

struct Element {
  ElementKind kind;
  uint32_t value;
};

struct Rule {
  std::string name;
  std::vector<uint32_t> alternatives;  // index of each alternative's first element
};

struct Grammar {
  std::vector<Element> elements;  // every rule's alternatives, each closed by End
  std::vector<Rule> rules;
  std::vector<ByteSet> sets;
  uint32_t root = 0;
};

// Bounds on what a grammar may grow to (text, rules, elements, repetition counts): a
// grammar beyond them is refused with an error rather than exhausting memory.
inline constexpr size_t kMaxGrammarBytes = 1 << 20;
inline constexpr size_t kMaxElements = 1 << 20;
inline constexpr size_t kMaxRepetition = 10000;

}  // namespace ember::grammar
