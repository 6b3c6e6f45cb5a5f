// SentencePiece's tokenizer.model (a protobuf ModelProto) read with a minimal protobuf
// decoder: the pieces with score and type, the special ids and add_dummy_prefix.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "convert/vocab.h"

namespace ember::convert {

struct SentencePieceModel {
  struct Piece {
    std::string text;
    float score = 0;
    TokenType type = TokenType::Normal;  // SentencePiece's Type enum has llama.cpp's values
  };
  std::vector<Piece> pieces;
  int32_t unk_id = 0, bos_id = 1, eos_id = 2, pad_id = -1;  // TrainerSpec defaults
  bool add_dummy_prefix = true;                              // NormalizerSpec default
};

// Throws Error(Format) naming `source` for malformed input.
SentencePieceModel parse_sentencepiece_model(std::span<const uint8_t> bytes, const std::string& source);

// The GGUF vocabulary of a SentencePiece model ("llama" tokenizer model).
Vocab vocab_from_sentencepiece(const SentencePieceModel& m);

}  // namespace ember::convert
