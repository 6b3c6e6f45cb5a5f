// Builds a Grammar rule by rule (the GBNF parser and generated grammars both go through
// it): names to ids, byte sets shared, character classes lowered to UTF-8 byte rules,
// repetition rewritten into recursive rules, and at the end the checks that keep the
// matcher finite: every rule defined, none left-recursive, the size bounded.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/utf8_ranges.h"

namespace ember::grammar {

using Sequence = std::vector<Element>;

class GrammarBuilder {
 public:
  // The id of the rule called `name`, declared on first use.
  uint32_t rule(std::string_view name);
  // A fresh rule named after `base` (base_1, base_2 ...).
  uint32_t fresh_rule(std::string_view base);
  bool defined(uint32_t id) const { return defined_[id]; }
  // Throws when the rule already has a definition.
  void define(uint32_t id, std::vector<Sequence> alternatives);

  Element bytes(const ByteSet& set);
  Element byte(uint8_t b);
  // Appends the elements that match one code point in `ranges` (or outside them).
  void append_class(Sequence& seq, std::vector<CodePointRange> ranges, bool negate);
  // Appends the bytes of a literal.
  void append_literal(Sequence& seq, std::string_view utf8);
  // Replaces seq[from, end) (one symbol) with its repetition min..max times
  // (max == kUnbounded: no limit).
  static constexpr size_t kUnbounded = SIZE_MAX;
  void repeat(Sequence& seq, size_t from, size_t min, size_t max);

  // The grammar with `root` as its start. Throws Error(InvalidArgument) naming an undefined
  // or left-recursive rule, or a grammar over the size bounds.
  Grammar finish(std::string_view root);

 private:
  Element as_single(Sequence& seq, size_t from);
  void check_size();

  std::vector<std::string> names_;
  std::vector<std::vector<Sequence>> alternatives_;
  std::vector<bool> defined_;
  std::map<std::string, uint32_t, std::less<>> ids_;
  std::vector<ByteSet> sets_;
  std::map<std::vector<CodePointRange>, uint32_t> class_rules_;
  size_t n_elements_ = 0;
};

}  // namespace ember::grammar
