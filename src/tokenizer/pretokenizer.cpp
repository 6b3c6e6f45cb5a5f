#include "tokenizer/pretokenizer.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "tokenizer/unicode.h"
#include "util/error.h"

namespace ember {

namespace {

using unicode::CharClass;

// kUpper / kLower: o200k's letter classes (unicode::LetterCase; Both sets the two).
enum : uint8_t { kLetter = 1, kNumber = 2, kPunct = 4, kSpace = 8, kUpper = 16, kLower = 32 };

// The text as code points with their byte offsets and the classes the patterns test.
struct CodepointText {
  std::vector<char32_t> cp;
  std::vector<uint32_t> offset;  // cp.size() + 1 entries
  std::vector<uint8_t> flags;

  explicit CodepointText(std::string_view s) {
    cp.reserve(s.size());
    offset.reserve(s.size() + 1);
    flags.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
      const auto d = unicode::decode_utf8(s, i);
      uint8_t f = 0;
      if (d.cp < unicode::kInvalidByte) {
        switch (unicode::char_class(d.cp)) {
          case CharClass::Letter: f = kLetter; break;
          case CharClass::Number: f = kNumber; break;
          case CharClass::Punctuation: f = kPunct; break;
          default: break;
        }
        if (unicode::is_whitespace(d.cp)) f |= kSpace;
        switch (unicode::letter_case(d.cp)) {
          case unicode::LetterCase::Upper: f |= kUpper; break;
          case unicode::LetterCase::Lower: f |= kLower; break;
          case unicode::LetterCase::Both: f |= kUpper | kLower; break;
          default: break;
        }
      }
      cp.push_back(d.cp);
      offset.push_back(static_cast<uint32_t>(i));
      flags.push_back(f);
      i += d.len;
    }
    offset.push_back(static_cast<uint32_t>(s.size()));
  }
};

struct Range {
  uint32_t begin, end;  // code point indices
};

// A pattern: the length in code points of its match at position p of the fragment [.., end),
// or 0 when it does not match there.
struct Scanner {
  const CodepointText& t;
  uint32_t end = 0;
  // Whitespace run cache, so scanning every position of a long run stays linear.
  uint32_t ws_from = 1, ws_to = 0;

  bool has(uint32_t p, uint8_t f) const { return p < end && (t.flags[p] & f); }
  bool letter(uint32_t p) const { return has(p, kLetter); }
  bool number(uint32_t p) const { return has(p, kNumber); }
  bool space(uint32_t p) const { return has(p, kSpace); }
  bool upper(uint32_t p) const { return has(p, kUpper); }
  bool lower(uint32_t p) const { return has(p, kLower); }
  // [^\s\p{L}\p{N}]
  bool other(uint32_t p) const { return p < end && !(t.flags[p] & (kLetter | kNumber | kSpace)); }
  char32_t at(uint32_t p) const { return p < end ? t.cp[p] : 0; }

  template <class Pred>
  uint32_t run(uint32_t p, Pred pred) const {
    while (p < end && pred(p)) ++p;
    return p;
  }
  uint32_t space_run_end(uint32_t p) {
    if (p >= ws_from && p < ws_to) return ws_to;
    ws_from = p;
    ws_to = run(p, [&](uint32_t q) { return space(q); });
    return ws_to;
  }
};

bool is_ascii_lower(char32_t c, char lower) { return c == static_cast<char32_t>(lower) || c == static_cast<char32_t>(lower - 32); }

// 's|'t|'re|'ve|'m|'ll|'d  (case-insensitive for the llama3 family)
uint32_t contraction(const Scanner& s, uint32_t p, bool any_case) {
  if (s.at(p) != '\'') return 0;
  auto is = [&](uint32_t q, char c) { return any_case ? is_ascii_lower(s.at(q), c) : s.at(q) == static_cast<char32_t>(c); };
  if (is(p + 1, 's') || is(p + 1, 't') || is(p + 1, 'm') || is(p + 1, 'd')) return 2;
  if ((is(p + 1, 'r') && is(p + 2, 'e')) || (is(p + 1, 'v') && is(p + 2, 'e')) ||
      (is(p + 1, 'l') && is(p + 2, 'l')))
    return 3;
  return 0;
}

// GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
uint32_t gpt2_pattern(Scanner& s, uint32_t p) {
  if (uint32_t n = contraction(s, p, false)) return n;
  // One optional space joins the run of letters, digits or other symbols that follows it.
  const uint32_t q = (s.at(p) == ' ' && p + 1 < s.end && !s.space(p + 1)) ? p + 1 : p;
  if (s.letter(q)) return s.run(q, [&](uint32_t r) { return s.letter(r); }) - p;
  if (s.number(q)) return s.run(q, [&](uint32_t r) { return s.number(r); }) - p;
  if (s.other(q)) return s.run(q, [&](uint32_t r) { return s.other(r); }) - p;
  // \s+(?!\S): a whitespace run, less its last character when a non-space follows.
  const uint32_t k = s.space_run_end(p);
  if (k == s.end) return k - p;
  return k - p >= 2 ? k - p - 1 : 0;
}

// ' ?[^\s\p{L}\p{N}]+[\r\n]*' (llama3) or with [\r\n/]* (o200k): the length, or 0.
uint32_t symbol_run(const Scanner& s, uint32_t p, bool with_slash) {
  const uint32_t q = (s.at(p) == ' ' && s.other(p + 1)) ? p + 1 : p;
  if (!s.other(q)) return 0;
  const uint32_t k = s.run(q, [&](uint32_t r) { return s.other(r); });
  return s.run(k, [&](uint32_t r) {
    const char32_t c = s.at(r);
    return c == '\r' || c == '\n' || (with_slash && c == '/');
  }) - p;
}

// '\s*[\r\n]+|\s+(?!\S)|\s+', the whitespace end of llama3's and o200k's patterns.
uint32_t space_tail(Scanner& s, uint32_t p) {
  if (!s.space(p)) return 0;
  const uint32_t k = s.space_run_end(p);
  // \s*[\r\n]+ : backtracking ends the match just after the run's last line break.
  for (uint32_t j = k; j > p; --j) {
    if (s.at(j - 1) == '\r' || s.at(j - 1) == '\n') return j - p;
  }
  if (k == s.end) return k - p;     // \s+(?!\S)
  if (k - p >= 2) return k - p - 1;
  return k - p;                     // \s+
}

// llama3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//         ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// qwen2 is the same with \p{N} (one digit at a time): max_digits = 1.
uint32_t llama3_pattern(Scanner& s, uint32_t p, uint32_t max_digits) {
  if (uint32_t n = contraction(s, p, true)) return n;
  auto letters = [&](uint32_t q) { return s.run(q, [&](uint32_t r) { return s.letter(r); }); };
  if (s.letter(p)) return letters(p) - p;
  const char32_t c = s.at(p);
  if (c != '\r' && c != '\n' && !s.number(p) && s.letter(p + 1)) return letters(p + 1) - p;
  if (s.number(p)) {
    const uint32_t k = s.run(p, [&](uint32_t r) { return s.number(r); });
    return std::min(k - p, max_digits);
  }
  if (uint32_t n = symbol_run(s, p, false)) return n;
  return space_tail(s, p);
}

// [Upper]*[Lower]+ from q as a backtracking regex matches it: the end, or 0 for no match.
// When the upper run is not followed by a lower letter, the match ends just after the run's
// last letter that is also lower (Both), if any.
uint32_t upper_then_lower(const Scanner& s, uint32_t q) {
  const uint32_t u = s.run(q, [&](uint32_t r) { return s.upper(r); });
  if (s.lower(u)) return s.run(u, [&](uint32_t r) { return s.lower(r); });
  for (uint32_t j = u; j > q; --j)
    if (s.lower(j - 1)) return j;
  return 0;
}
// [Upper]+[Lower]*: the end, or 0.
uint32_t upper_run_then_lower(const Scanner& s, uint32_t q) {
  const uint32_t u = s.run(q, [&](uint32_t r) { return s.upper(r); });
  return u == q ? 0 : s.run(u, [&](uint32_t r) { return s.lower(r); });
}

// gpt-4o (o200k_base, gpt-oss), tiktoken's pattern:
//   [^\r\n\p{L}\p{N}]?[Upper]*[Lower]+C?|[^\r\n\p{L}\p{N}]?[Upper]+[Lower]*C?|\p{N}{1,3}|
//    ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
// with Upper = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], Lower = [\p{Ll}\p{Lm}\p{Lo}\p{M}] and
// C = (?i:'s|'t|'re|'ve|'m|'ll|'d). llama.cpp runs an ASCII-cased approximation without \p{M},
// which splits words at combining marks; this follows tiktoken (what the model was trained on).
uint32_t o200k_pattern(Scanner& s, uint32_t p) {
  const char32_t c = s.at(p);
  // The optional first character (no letter, number or line break; a mark is one, and is in
  // both letter classes too, so the alternatives are tried with it and then without).
  const bool prefix = !s.has(p, kLetter | kNumber) && c != '\r' && c != '\n';
  for (auto word : {upper_then_lower, upper_run_then_lower})
    for (uint32_t q : {prefix ? p + 1 : p, p})
      if (uint32_t e = word(s, q)) return e + contraction(s, e, true) - p;
  if (s.number(p)) return std::min<uint32_t>(s.run(p, [&](uint32_t r) { return s.number(r); }) - p, 3);
  if (uint32_t n = symbol_run(s, p, true)) return n;
  return space_tail(s, p);
}

// [\r\n]
uint32_t line_break(Scanner& s, uint32_t p) { return (s.at(p) == '\r' || s.at(p) == '\n') ? 1 : 0; }

// \s?[class]+
template <class InClass>
uint32_t optional_space_then_run(Scanner& s, uint32_t p, InClass in_class) {
  const uint32_t q = (s.space(p) && p + 1 < s.end && in_class(s.at(p + 1), p + 1)) ? p + 1 : p;
  if (q >= s.end || !in_class(s.at(q), q)) return 0;
  return s.run(q, [&](uint32_t r) { return in_class(s.at(r), r); }) - p;
}

struct CpRange {
  char32_t lo, hi;
};
template <size_t N>
bool in_ranges(const CpRange (&ranges)[N], char32_t c) {
  for (const auto& r : ranges) {
    if (c >= r.lo && c <= r.hi) return true;
  }
  return false;
}

// The cased-letter class of DeepSeek's tokenizer.json, range by range.
constexpr CpRange kDeepseekLetters[] = {
    {0x41, 0x5A}, {0x61, 0x7A}, {0xB5, 0xB5}, {0xC0, 0xD6}, {0xD8, 0xF6}, {0xF8, 0x1BA},
    {0x1BC, 0x1BF}, {0x1C4, 0x293}, {0x295, 0x2AF}, {0x370, 0x373}, {0x376, 0x377},
    {0x37B, 0x37D}, {0x37F, 0x37F}, {0x386, 0x386}, {0x388, 0x38A}, {0x38C, 0x38C},
    {0x38E, 0x3A1}, {0x3A3, 0x3F5}, {0x3F7, 0x481}, {0x48A, 0x52F}, {0x531, 0x556},
    {0x10A0, 0x10C5}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD}, {0x1C90, 0x1CBA}, {0x1CBD, 0x1CBF},
    {0x1D00, 0x1D2B}, {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A}, {0x1E00, 0x1F15}, {0x1F18, 0x1F1D},
    {0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57}, {0x1F59, 0x1F59}, {0x1F5B, 0x1F5B},
    {0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4}, {0x1FB6, 0x1FBC}, {0x1FBE, 0x1FBE},
    {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3}, {0x1FD6, 0x1FDB}, {0x1FE0, 0x1FEC},
    {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC}, {0x2102, 0x2102}, {0x2107, 0x2107}, {0x210A, 0x2113},
    {0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124}, {0x2126, 0x2126}, {0x2128, 0x2128},
    {0x212A, 0x212D}, {0x212F, 0x2134}, {0x2139, 0x2139}, {0x213C, 0x213F}, {0x2145, 0x2149},
    {0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2C7B}, {0x2C7E, 0x2CE4}, {0x2CEB, 0x2CEE},
    {0x2CF2, 0x2CF3}, {0xA640, 0xA66D}, {0xA680, 0xA69B}, {0xA722, 0xA76F}, {0xA771, 0xA787},
    {0xA78B, 0xA78E}, {0xAB70, 0xABBF}, {0xFB00, 0xFB06}, {0xFB13, 0xFB17}, {0xFF21, 0xFF3A},
    {0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};
// [!-/:-~！-／：-～‘-‟　-。]
constexpr CpRange kDeepseekPunct[] = {{0x21, 0x2F}, {0x3A, 0x7E}, {0xFF01, 0xFF0F},
                                      {0xFF1A, 0xFF5E}, {0x2018, 0x201F}, {0x3000, 0x3002}};
// [一-龥ࠀ-一가-퟿]
constexpr CpRange kDeepseekCjk[] = {{0x4E00, 0x9FA5}, {0x800, 0x4E00}, {0xAC00, 0xD7FF}};

bool deepseek_letter(char32_t c) {
  if (c < 0x80) return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
  return in_ranges(kDeepseekLetters, c);
}

// \s+$
uint32_t trailing_space(Scanner& s, uint32_t p) {
  if (!s.space(p)) return 0;
  const uint32_t k = s.space_run_end(p);
  return k == s.end ? k - p : 0;
}

uint32_t cjk_run(Scanner& s, uint32_t p) {
  return s.run(p, [&](uint32_t r) { return in_ranges(kDeepseekCjk, s.at(r)); }) - p;
}
uint32_t number_run(Scanner& s, uint32_t p) { return s.run(p, [&](uint32_t r) { return s.number(r); }) - p; }
uint32_t one_number(Scanner& s, uint32_t p) { return s.number(p) ? 1 : 0; }
// [0-9][0-9][0-9]
uint32_t three_ascii_digits(Scanner& s, uint32_t p) {
  for (uint32_t k = 0; k < 3; ++k) {
    if (p + k >= s.end || s.at(p + k) < '0' || s.at(p + k) > '9') return 0;
  }
  return 3;
}
// [\p{P}\$\+<=>\^~\|]+ (falcon adds the backtick)
uint32_t punct_symbol_run(Scanner& s, uint32_t p, bool with_backtick) {
  auto in = [&](uint32_t r) {
    const char32_t c = s.at(r);
    return s.has(r, kPunct) || c == '$' || c == '+' || c == '<' || c == '=' || c == '>' ||
           c == '^' || c == '~' || c == '|' || (with_backtick && c == '`');
  };
  return s.run(p, in) - p;
}

using Pattern = uint32_t (*)(Scanner&, uint32_t);

// Splits every fragment into the pattern's matches and the gaps between them.
void split_step(const CodepointText& t, Pattern pattern, const std::vector<Range>& in,
                std::vector<Range>& out) {
  out.clear();
  for (const Range& frag : in) {
    Scanner s{t, frag.end};
    uint32_t gap = frag.begin;
    uint32_t p = frag.begin;
    while (p < frag.end) {
      const uint32_t n = pattern(s, p);
      if (n == 0) {
        ++p;
        continue;
      }
      if (gap < p) out.push_back({gap, p});
      out.push_back({p, p + n});
      p += n;
      gap = p;
    }
    if (gap < frag.end) out.push_back({gap, frag.end});
  }
}

std::vector<Pattern> patterns_of(PreTokenizer kind) {
  static constexpr Pattern gpt2 = gpt2_pattern;
  switch (kind) {
    case PreTokenizer::Gpt2:
      return {gpt2};
    case PreTokenizer::Llama3:
      return {[](Scanner& s, uint32_t p) { return llama3_pattern(s, p, 3); }};
    case PreTokenizer::Qwen2:
      return {[](Scanner& s, uint32_t p) { return llama3_pattern(s, p, 1); }};
    case PreTokenizer::DeepseekLlm:
      return {
          line_break,
          [](Scanner& s, uint32_t p) {
            return optional_space_then_run(s, p, [](char32_t c, uint32_t) { return deepseek_letter(c); });
          },
          [](Scanner& s, uint32_t p) {
            return optional_space_then_run(s, p, [](char32_t c, uint32_t) { return in_ranges(kDeepseekPunct, c); });
          },
          trailing_space, cjk_run, number_run};
    case PreTokenizer::DeepseekCoder:
      return {
          line_break,
          [](Scanner& s, uint32_t p) {
            return optional_space_then_run(s, p, [&s](char32_t, uint32_t r) { return s.letter(r); });
          },
          [](Scanner& s, uint32_t p) {
            return optional_space_then_run(s, p, [&s](char32_t, uint32_t r) { return s.has(r, kPunct); });
          },
          cjk_run, one_number};
    case PreTokenizer::Falcon:
      return {[](Scanner& s, uint32_t p) { return punct_symbol_run(s, p, true); }, gpt2,
              three_ascii_digits};
    case PreTokenizer::Starcoder:
      return {one_number, gpt2};
    case PreTokenizer::Default:
      return {[](Scanner& s, uint32_t p) { return punct_symbol_run(s, p, false); }, gpt2,
              number_run, three_ascii_digits};
    case PreTokenizer::Gpt4o:
      return {o200k_pattern};
  }
  return {gpt2};
}

struct NamedPre {
  const char* name;
  PreTokenizer kind;
};
// tokenizer.ggml.pre values as llama.cpp's converter writes them.
constexpr NamedPre kNames[] = {
    {"default", PreTokenizer::Default},       {"gpt-2", PreTokenizer::Gpt2},
    {"gpt2", PreTokenizer::Gpt2},             {"mpt", PreTokenizer::Gpt2},
    {"gpt-neox", PreTokenizer::Gpt2},         {"olmo", PreTokenizer::Gpt2},
    {"phi-2", PreTokenizer::Gpt2},            {"jais", PreTokenizer::Gpt2},
    {"roberta-bpe", PreTokenizer::Gpt2},      {"llama3", PreTokenizer::Llama3},
    {"llama-v3", PreTokenizer::Llama3},       {"llama-bpe", PreTokenizer::Llama3},
    {"falcon3", PreTokenizer::Llama3},        {"dbrx", PreTokenizer::Llama3},
    {"smaug-bpe", PreTokenizer::Llama3},      {"qwen2", PreTokenizer::Qwen2},
    {"qwen2.5", PreTokenizer::Qwen2},         {"stablelm2", PreTokenizer::Qwen2},
    {"deepseek-r1-qwen", PreTokenizer::Qwen2}, {"megrez", PreTokenizer::Qwen2},
    {"deepseek-llm", PreTokenizer::DeepseekLlm}, {"deepseek-coder", PreTokenizer::DeepseekCoder},
    {"falcon", PreTokenizer::Falcon},         {"starcoder", PreTokenizer::Starcoder},
    {"refact", PreTokenizer::Starcoder},      {"command-r", PreTokenizer::Starcoder},
    {"smollm", PreTokenizer::Starcoder},      {"codeshell", PreTokenizer::Starcoder},
    {"exaone", PreTokenizer::Starcoder},      {"minerva-7b", PreTokenizer::Starcoder},
    {"gpt-4o", PreTokenizer::Gpt4o},
};

}  // namespace

PreTokenizer pretokenizer_from_name(std::string_view name) {
  if (name.empty()) return PreTokenizer::Default;
  for (const auto& n : kNames) {
    if (name == n.name) return n.kind;
  }
  std::string known;
  for (const auto& n : kNames) known += std::string(known.empty() ? "" : ", ") + n.name;
  fail(ErrorKind::Unsupported, "tokenizer.ggml.pre '{}' is not a known pre-tokenizer (known: {})",
       name, known);
}

const char* pretokenizer_name(PreTokenizer p) {
  switch (p) {
    case PreTokenizer::Default: return "default";
    case PreTokenizer::Gpt2: return "gpt-2";
    case PreTokenizer::Llama3: return "llama3";
    case PreTokenizer::Qwen2: return "qwen2";
    case PreTokenizer::DeepseekLlm: return "deepseek-llm";
    case PreTokenizer::DeepseekCoder: return "deepseek-coder";
    case PreTokenizer::Falcon: return "falcon";
    case PreTokenizer::Starcoder: return "starcoder";
    case PreTokenizer::Gpt4o: return "gpt-4o";
  }
  return "?";
}

void pretokenize(PreTokenizer kind, std::string_view text, std::vector<std::string_view>& out) {
  if (text.empty()) return;
  const CodepointText t(text);
  std::vector<Range> current{{0, static_cast<uint32_t>(t.cp.size())}};
  std::vector<Range> next;
  for (Pattern pattern : patterns_of(kind)) {
    split_step(t, pattern, current, next);
    std::swap(current, next);
  }
  for (const Range& r : current) {
    out.push_back(text.substr(t.offset[r.begin], t.offset[r.end] - t.offset[r.begin]));
  }
}

}  // namespace ember
