#include "grammar/grammar_builder.h"

#include <algorithm>
#include <functional>

#include "grammar/grammar_checks.h"
#include "util/error.h"

namespace ember::grammar {

uint32_t GrammarBuilder::rule(std::string_view name) {
  if (auto it = ids_.find(name); it != ids_.end()) return it->second;
  const uint32_t id = static_cast<uint32_t>(names_.size());
  names_.emplace_back(name);
  alternatives_.emplace_back();
  defined_.push_back(false);
  ids_.emplace(std::string(name), id);
  return id;
}

uint32_t GrammarBuilder::fresh_rule(std::string_view base) {
  for (size_t n = names_.size();; ++n) {
    const std::string name = std::string(base) + "_" + std::to_string(n);
    if (ids_.find(name) == ids_.end()) return rule(name);
  }
}

void GrammarBuilder::define(uint32_t id, std::vector<Sequence> alternatives) {
  if (defined_[id]) fail(ErrorKind::InvalidArgument, "grammar: rule '{}' is defined twice", names_[id]);
  for (const Sequence& s : alternatives) n_elements_ += s.size() + 1;
  alternatives_[id] = std::move(alternatives);
  defined_[id] = true;
  check_size();
}

void GrammarBuilder::check_size() {
  if (n_elements_ > kMaxElements || names_.size() > kMaxElements)
    fail(ErrorKind::InvalidArgument, "grammar: more than {} elements (repetition counts or schema too large)",
         kMaxElements);
}

Element GrammarBuilder::bytes(const ByteSet& set) {
  auto it = std::find(sets_.begin(), sets_.end(), set);
  if (it == sets_.end()) {
    sets_.push_back(set);
    it = sets_.end() - 1;
  }
  return Element{ElementKind::Bytes, static_cast<uint32_t>(it - sets_.begin())};
}

Element GrammarBuilder::byte(uint8_t b) {
  ByteSet s;
  s.add(b, b);
  return bytes(s);
}

void GrammarBuilder::append_literal(Sequence& seq, std::string_view utf8) {
  for (char c : utf8) seq.push_back(byte(static_cast<uint8_t>(c)));
  n_elements_ += utf8.size();
  check_size();
}

// One byte set when the class is all ASCII; otherwise a rule (shared by equal classes)
// with one alternative per UTF-8 byte-range sequence, single bytes merged into one.
void GrammarBuilder::append_class(Sequence& seq, std::vector<CodePointRange> ranges, bool negate) {
  ranges = normalise_ranges(std::move(ranges), negate);
  if (ranges.empty()) fail(ErrorKind::InvalidArgument, "grammar: a character class that matches nothing");
  std::vector<ByteRangeSequence> seqs;
  for (const auto& [lo, hi] : ranges) utf8_sequences(lo, hi, seqs);
  ByteSet single;
  bool has_single = false;
  std::vector<Sequence> alts;
  for (const ByteRangeSequence& s : seqs) {
    if (s.size() == 1) {
      single.add(s[0].first, s[0].second);
      has_single = true;
      continue;
    }
    Sequence alt;
    for (const auto& [lo, hi] : s) {
      ByteSet b;
      b.add(lo, hi);
      alt.push_back(bytes(b));
    }
    alts.push_back(std::move(alt));
  }
  if (alts.empty()) {
    seq.push_back(bytes(single));
    ++n_elements_;
    return;
  }
  if (has_single) alts.insert(alts.begin(), Sequence{bytes(single)});
  auto [it, inserted] = class_rules_.try_emplace(ranges, 0);
  if (inserted) {
    it->second = fresh_rule("char");
    define(it->second, std::move(alts));
  }
  seq.push_back(Element{ElementKind::Rule, it->second});
  ++n_elements_;
}

// seq[from, end) as one element: itself, or a new rule holding it.
Element GrammarBuilder::as_single(Sequence& seq, size_t from) {
  if (seq.size() == from + 1) return seq.back();
  const uint32_t id = fresh_rule("group");
  define(id, {Sequence(seq.begin() + static_cast<ptrdiff_t>(from), seq.end())});
  return Element{ElementKind::Rule, id};
}

// S{m,n} -> S (m times) then O(n-m), where O(k) ::= S O(k-1) | "" ; S{m,} -> S (m times) R,
// where R ::= S R | "" (right recursion: the matcher's stacks stay flat).
void GrammarBuilder::repeat(Sequence& seq, size_t from, size_t min, size_t max) {
  if (from >= seq.size()) fail(ErrorKind::InvalidArgument, "grammar: a repetition with nothing before it");
  if (min > kMaxRepetition || (max != kUnbounded && max > kMaxRepetition))
    fail(ErrorKind::InvalidArgument, "grammar: repetition count over {}", kMaxRepetition);
  if (max != kUnbounded && max < min)
    fail(ErrorKind::InvalidArgument, "grammar: repetition {{{},{}}} has its maximum below its minimum", min, max);
  const Element s = as_single(seq, from);
  seq.resize(from);
  n_elements_ += min;
  check_size();
  for (size_t i = 0; i < min; ++i) seq.push_back(s);
  if (max == kUnbounded) {
    const uint32_t r = fresh_rule("star");
    define(r, {Sequence{s, Element{ElementKind::Rule, r}}, Sequence{}});
    seq.push_back(Element{ElementKind::Rule, r});
    return;
  }
  uint32_t prev = UINT32_MAX;
  for (size_t k = 0; k < max - min; ++k) {
    const uint32_t o = fresh_rule("opt");
    Sequence first{s};
    if (prev != UINT32_MAX) first.push_back(Element{ElementKind::Rule, prev});
    define(o, {std::move(first), Sequence{}});
    prev = o;
  }
  if (prev != UINT32_MAX) seq.push_back(Element{ElementKind::Rule, prev});
}

Grammar GrammarBuilder::finish(std::string_view root) {
  auto it = ids_.find(root);
  if (it == ids_.end() || !defined_[it->second]) fail(ErrorKind::InvalidArgument, "grammar: no rule '{}'", root);
  Grammar g;
  g.root = it->second;
  g.sets = std::move(sets_);
  for (uint32_t id = 0; id < names_.size(); ++id) {
    if (!defined_[id]) fail(ErrorKind::InvalidArgument, "grammar: rule '{}' is used but never defined", names_[id]);
    Rule r{names_[id], {}};
    for (const Sequence& alt : alternatives_[id]) {
      r.alternatives.push_back(static_cast<uint32_t>(g.elements.size()));
      g.elements.insert(g.elements.end(), alt.begin(), alt.end());
      g.elements.push_back(Element{ElementKind::End, 0});
    }
    g.rules.push_back(std::move(r));
  }
  check_left_recursion(g);
  return g;
}

}  // namespace ember::grammar
