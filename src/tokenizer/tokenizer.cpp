#include "tokenizer/tokenizer.h"

#include <fmt/format.h>

#include <algorithm>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer_tables.h"
#include "tokenizer/unicode.h"
#include "util/error.h"

namespace ember {

namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

std::string escape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  for (char c : text) {
    if (c == ' ') out += kSpmSpace;
    else out += c;
  }
  return out;
}

// "<0x0A>" -> 10, or -1.
int parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  int value = 0;
  for (char c : text.substr(3, 2)) {
    value <<= 4;
    if (c >= '0' && c <= '9') value |= c - '0';
    else if (c >= 'A' && c <= 'F') value |= c - 'A' + 10;
    else if (c >= 'a' && c <= 'f') value |= c - 'a' + 10;
    else return -1;
  }
  return value;
}

std::string spm_piece(const TokenEntry& t) {
  if (t.type == TokenType::Byte) {
    const int b = parse_byte_token(t.text);
    if (b >= 0) return std::string(1, static_cast<char>(b));
  }
  if (t.type == TokenType::Control || t.type == TokenType::Unknown || t.type == TokenType::UserDefined)
    return t.text;
  std::string out;
  for (size_t i = 0; i < t.text.size();) {
    if (t.text.compare(i, kSpmSpace.size(), kSpmSpace) == 0) {
      out += ' ';
      i += kSpmSpace.size();
    } else {
      out += t.text[i++];
    }
  }
  return out;
}

std::string bpe_piece(const TokenEntry& t) {
  if (t.type == TokenType::Control || t.type == TokenType::Unknown || t.type == TokenType::UserDefined)
    return t.text;
  std::string out;
  for (size_t i = 0; i < t.text.size();) {
    const auto d = unicode::decode_utf8(t.text, i);
    const int b = d.cp < unicode::kInvalidByte ? unicode::bpe_char_to_byte(d.cp) : -1;
    if (b >= 0) out += static_cast<char>(b);
    else out.append(t.text, i, d.len);  // not a stand-in: keep the character itself
    i += d.len;
  }
  return out;
}

}  // namespace

TokenizerTables::TokenizerTables(const Vocab& v) {
  const bool spm = v.model == VocabModel::SentencePiece;
  if (!spm) pre = pretokenizer_from_name(v.pre);
  const int n = v.n_tokens();
  pieces.reserve(n);
  mergeable.resize(n);
  byte_token.fill(-1);
  for (int32_t id = 0; id < n; ++id) {
    const TokenEntry& t = v.tokens[id];
    pieces.push_back(spm ? spm_piece(t) : bpe_piece(t));
    mergeable[id] = t.type == TokenType::Normal || t.type == TokenType::UserDefined || t.type == TokenType::Undefined;
    switch (t.type) {
      case TokenType::Control:
      case TokenType::Unknown:
        specials.add(t.text, id);
        break;
      case TokenType::UserDefined:
        specials.add(t.text, id);
        user_defined.add(t.text, id);
        break;
      default:
        break;
    }
  }
  if (spm) {
    for (int32_t id = 0; id < n; ++id) {
      if (!mergeable[id]) continue;
      const std::string& text = v.tokens[id].text;
      char32_t prev = 0;
      for (size_t i = 0; i < text.size();) {
        const auto d = unicode::decode_utf8(text, i);
        if (i > 0) joinable_pairs.insert((static_cast<uint64_t>(prev) << 21) | d.cp);
        prev = d.cp;
        i += d.len;
      }
    }
  }
  for (int b = 0; b < 256; ++b) {
    if (spm) {
      const int32_t id = v.find(fmt::format("<0x{:02X}>", b));
      byte_token[b] = (id >= 0 && v.tokens[id].type == TokenType::Byte) ? id : -1;
    } else {
      byte_token[b] = v.find(unicode::byte_to_bpe_char(static_cast<uint8_t>(b)));
    }
  }
  merges.reserve(v.merges.size());
  std::string joined;
  for (size_t rank = 0; rank < v.merges.size(); ++rank) {
    const std::string& m = v.merges[rank];
    const size_t sp = m.find(' ', 1);  // "left right"; byte-level parts never contain a space
    if (sp == std::string::npos) continue;
    const std::string_view left(m.data(), sp);
    const std::string_view right(m.data() + sp + 1, m.size() - sp - 1);
    const int32_t l = v.find(left);
    const int32_t r = v.find(right);
    joined.assign(left);
    joined.append(right);
    const int32_t result = v.find(joined);
    if (l < 0 || r < 0 || result < 0) continue;  // cannot apply: parts not in the vocabulary
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r);
    merges.emplace(key, BpeMerge{static_cast<int32_t>(rank), result});  // first (lowest rank) wins
  }
}

namespace {
Vocab indexed(Vocab v) {
  v.build_index();  // a hand-made Vocab may not have one yet
  return v;
}
}  // namespace

Tokenizer::Tokenizer(Vocab vocab)
    : vocab_(std::make_shared<const Vocab>(indexed(std::move(vocab)))),
      tables_(std::make_shared<const TokenizerTables>(*vocab_)),
      add_bos_(vocab_->add_bos),
      add_eos_(vocab_->add_eos) {}

Tokenizer Tokenizer::from_gguf(const gguf::File& f) { return Tokenizer(Vocab::from_gguf(f)); }

int32_t Tokenizer::check(int32_t id) const {
  if (id < 0 || id >= n_vocab())
    fail(ErrorKind::InvalidArgument, "token id {} is outside the vocabulary of {} tokens", id, n_vocab());
  return id;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  return encode_impl(text, add_special, parse_special, [](size_t, const SpecialMatcher::Match&) { return true; });
}

std::vector<int32_t> Tokenizer::encode_marked(std::string_view text,
                                              std::span<const std::pair<size_t, size_t>> data) const {
  size_t next = 0;  // matches come in increasing position: walk the ranges once
  auto accept = [&](size_t pos, const SpecialMatcher::Match& m) {
    while (next < data.size() && data[next].second <= pos) ++next;
    const bool in_data = next < data.size() && data[next].first < pos + m.len;
    return !in_data || vocab_->tokens[m.id].type == TokenType::UserDefined;
  };
  const bool bos = add_bos_;
  std::vector<int32_t> out = encode_impl(text, false, true, accept);
  if (bos && (out.empty() || out[0] != vocab_->special.bos)) {
    if (vocab_->special.bos < 0) fail(ErrorKind::InvalidArgument, "BOS requested but the vocabulary has none");
    out.insert(out.begin(), vocab_->special.bos);
  }
  if (add_eos_) {
    if (vocab_->special.eos < 0) fail(ErrorKind::InvalidArgument, "EOS requested but the vocabulary has none");
    out.push_back(vocab_->special.eos);
  }
  return out;
}

template <class Accept>
std::vector<int32_t> Tokenizer::encode_impl(std::string_view text, bool add_special, bool parse_special,
                                            Accept&& accept) const {
  const Vocab& v = *vocab_;
  const TokenizerTables& t = *tables_;
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (add_special && add_bos_) {
    if (v.special.bos < 0) fail(ErrorKind::InvalidArgument, "BOS requested but the vocabulary has none");
    out.push_back(v.special.bos);
  }
  bool after_special = true;  // SentencePiece adds its space prefix at the start and after specials
  std::vector<std::string_view> pieces;
  RepeatCache cache;  // pre-tokens repeat
  auto on_text = [&](std::string_view seg) {
    if (v.model == VocabModel::SentencePiece) {
      std::string escaped = (v.add_space_prefix && after_special) ? std::string(kSpmSpace) : std::string();
      escaped += escape_spaces(seg);
      spm_encode(v, t, escaped, out);
    } else {
      pieces.clear();
      pretokenize(t.pre, seg, pieces);
      for (std::string_view p : pieces)
        cache.encode(p, out, [&](std::string_view piece) { bpe_encode_piece(v, t, piece, out); });
    }
    after_special = false;
  };
  auto on_token = [&](int32_t id) {
    out.push_back(id);
    after_special = true;
  };
  (parse_special ? t.specials : t.user_defined).split(text, on_text, on_token, accept);
  if (add_special && add_eos_) {
    if (v.special.eos < 0) fail(ErrorKind::InvalidArgument, "EOS requested but the vocabulary has none");
    out.push_back(v.special.eos);
  }
  return out;
}

std::string_view Tokenizer::piece(int32_t id) const { return tables_->pieces[check(id)]; }

bool Tokenizer::is_control(int32_t id) const {
  const TokenType ty = vocab_->tokens[check(id)].type;
  return ty == TokenType::Control || ty == TokenType::Unknown;
}

bool Tokenizer::is_eog(int32_t id) const {
  const auto& e = vocab_->eog_ids;
  return std::find(e.begin(), e.end(), id) != e.end();
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
  StreamingDecoder d(*this, StreamingDecoder::LeadingSpace::StripFirst, render_special);
  std::string out;
  for (int32_t id : ids) out += d.push(id);
  out += d.flush();
  return out;
}

StreamingDecoder::StreamingDecoder(const Tokenizer& tok, LeadingSpace mode, bool render_special)
    : tok_(&tok),
      strip_pending_(mode == LeadingSpace::StripFirst && tok.vocab().add_space_prefix),
      render_special_(render_special) {}

std::string StreamingDecoder::push(int32_t id) {
  std::string_view p = tok_->piece(id);
  if (!render_special_ && tok_->is_control(id)) return {};
  if (p.empty()) return {};
  if (strip_pending_) {
    if (p.front() == ' ') p.remove_prefix(1);
    strip_pending_ = false;
  }
  held_ += p;
  const size_t n = unicode::complete_utf8_prefix(held_);
  std::string out = held_.substr(0, n);
  held_.erase(0, n);
  return out;
}

std::string StreamingDecoder::flush() {
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace ember
