#include "convert/sentencepiece_model.h"

#include <cstring>

#include "util/error.h"

namespace ember::convert {

namespace {

// Protobuf wire format: each field is a varint key (number << 3 | wire type) then a value:
// 0 varint, 1 fixed 64-bit, 2 length-delimited bytes, 5 fixed 32-bit.
class Reader {
 public:
  Reader(std::span<const uint8_t> b, const std::string& src) : b_(b), src_(src) {}
  bool done() const { return p_ >= b_.size(); }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= b_.size()) fail(ErrorKind::Format, "{}: truncated protobuf varint at byte {}", src_, p_);
      const uint8_t c = b_[p_++];
      v |= static_cast<uint64_t>(c & 0x7f) << shift;
      if (!(c & 0x80)) return v;
    }
    fail(ErrorKind::Format, "{}: protobuf varint too long at byte {}", src_, p_);
  }
  std::span<const uint8_t> bytes() {
    const uint64_t n = varint();
    if (n > b_.size() - p_) fail(ErrorKind::Format, "{}: protobuf field of {} bytes overruns at byte {}", src_, n, p_);
    auto s = b_.subspan(p_, static_cast<size_t>(n));
    p_ += static_cast<size_t>(n);
    return s;
  }
  uint32_t fixed32() {
    if (b_.size() - p_ < 4) fail(ErrorKind::Format, "{}: truncated protobuf fixed32", src_);
    uint32_t v;
    std::memcpy(&v, b_.data() + p_, 4);
    p_ += 4;
    return v;
  }
  void skip(uint32_t wire) {
    switch (wire) {
      case 0: varint(); break;
      case 1:
        if (b_.size() - p_ < 8) fail(ErrorKind::Format, "{}: truncated protobuf fixed64", src_);
        p_ += 8;
        break;
      case 2: bytes(); break;
      case 5: fixed32(); break;
      default: fail(ErrorKind::Format, "{}: protobuf wire type {} at byte {}", src_, wire, p_);
    }
  }

 private:
  std::span<const uint8_t> b_;
  const std::string& src_;
  size_t p_ = 0;
};

}  // namespace

SentencePieceModel parse_sentencepiece_model(std::span<const uint8_t> bytes, const std::string& source) {
  SentencePieceModel m;
  Reader r(bytes, source);
  while (!r.done()) {
    const uint64_t key = r.varint();
    const uint32_t field = static_cast<uint32_t>(key >> 3), wire = static_cast<uint32_t>(key & 7);
    if (field == 1 && wire == 2) {  // SentencePiece pieces
      Reader pr(r.bytes(), source);
      SentencePieceModel::Piece piece;
      while (!pr.done()) {
        const uint64_t k = pr.varint();
        const uint32_t f = static_cast<uint32_t>(k >> 3), w = static_cast<uint32_t>(k & 7);
        if (f == 1 && w == 2) {
          auto s = pr.bytes();
          piece.text.assign(reinterpret_cast<const char*>(s.data()), s.size());
        } else if (f == 2 && w == 5) {
          const uint32_t bits = pr.fixed32();
          std::memcpy(&piece.score, &bits, 4);
        } else if (f == 3 && w == 0) {
          const uint64_t t = pr.varint();
          if (t < 1 || t > 6) fail(ErrorKind::Format, "{}: piece {} has type {}", source, m.pieces.size(), t);
          piece.type = static_cast<TokenType>(t);
        } else {
          pr.skip(w);
        }
      }
      m.pieces.push_back(std::move(piece));
    } else if (field == 2 && wire == 2) {  // TrainerSpec: unk/bos/eos/pad ids are fields 40..43
      Reader tr(r.bytes(), source);
      while (!tr.done()) {
        const uint64_t k = tr.varint();
        const uint32_t f = static_cast<uint32_t>(k >> 3), w = static_cast<uint32_t>(k & 7);
        if (f >= 40 && f <= 43 && w == 0) {
          const int32_t v = static_cast<int32_t>(tr.varint());  // int32: negative ids are 10-byte varints
          (f == 40 ? m.unk_id : f == 41 ? m.bos_id : f == 42 ? m.eos_id : m.pad_id) = v;
        } else {
          tr.skip(w);
        }
      }
    } else if (field == 3 && wire == 2) {  // NormalizerSpec: add_dummy_prefix is field 3
      Reader nr(r.bytes(), source);
      while (!nr.done()) {
        const uint64_t k = nr.varint();
        const uint32_t f = static_cast<uint32_t>(k >> 3), w = static_cast<uint32_t>(k & 7);
        if (f == 3 && w == 0)
          m.add_dummy_prefix = nr.varint() != 0;
        else
          nr.skip(w);
      }
    } else {
      r.skip(wire);
    }
  }
  if (m.pieces.empty()) fail(ErrorKind::Format, "{}: no SentencePiece pieces: not a tokenizer.model", source);
  return m;
}

Vocab vocab_from_sentencepiece(const SentencePieceModel& m) {
  Vocab v;
  v.model = "llama";
  for (const auto& p : m.pieces) {
    v.tokens.push_back(p.text);
    v.scores.push_back(p.score);
    v.types.push_back(p.type);
  }
  const auto id = [&](int32_t x) -> std::optional<uint32_t> {
    if (x < 0 || static_cast<size_t>(x) >= m.pieces.size()) return std::nullopt;
    return static_cast<uint32_t>(x);
  };
  v.unk_id = id(m.unk_id);
  v.bos_id = id(m.bos_id);
  v.eos_id = id(m.eos_id);
  v.pad_id = id(m.pad_id);
  v.add_space_prefix = m.add_dummy_prefix;
  return v;
}

}  // namespace ember::convert
