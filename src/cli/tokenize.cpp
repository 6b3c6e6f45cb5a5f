// `ember tokenize`: the token ids of a text, as the model's own vocabulary produces them.
//
//   ember tokenize -m model.gguf -p "Hello world"            one line per token: id 'piece'
//   ember tokenize -m vocab.gguf -f input.txt --ids          the ids on one line
//   ember tokenize -m model.gguf -p "<s>hi" --show-pieces    adds the vocabulary entry and type
//
// BOS/EOS are added as the vocabulary's metadata says (--no-bos drops BOS); control-token text
// such as "<|im_start|>" becomes that token unless --no-parse-special. -f reads the file's exact
// bytes (a trailing newline is part of the input). Vocabulary-only GGUFs work.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "util/error.h"
#include "util/mmap.h"

namespace ember::cli {

namespace {

struct TokenizeFlags {
  std::string model;
  std::string prompt;
  std::string file;
  CLI::Option* prompt_opt = nullptr;
  CLI::Option* file_opt = nullptr;
  bool ids = false;
  bool no_bos = false;
  bool no_parse_special = false;
  bool show_pieces = false;
};

// Printable form of a piece: valid UTF-8 as is, control characters and stray bytes escaped.
std::string escape_piece(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const auto d = unicode::decode_utf8(s, i);
    const auto c = static_cast<unsigned char>(s[i]);
    if (d.cp >= unicode::kInvalidByte || d.cp < 0x20 || d.cp == 0x7F) {
      switch (c) {
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        case '\r': out += "\\r"; break;
        default: out += fmt::format("\\x{:02x}", c);
      }
    } else if (c == '\\' || c == '\'') {
      out += '\\';
      out += static_cast<char>(c);
    } else {
      out.append(s, i, d.len);
    }
    i += d.len;
  }
  return out;
}

int run_tokenize(const TokenizeFlags& f) {
  const bool has_prompt = f.prompt_opt->count() > 0;
  const bool has_file = f.file_opt->count() > 0;
  if (has_prompt == has_file) fail(ErrorKind::InvalidArgument, "give the text with exactly one of -p TEXT or -f FILE");
  const std::string text = has_file ? read_text_file(f.file) : f.prompt;

  const gguf::File file = gguf::File::open(f.model);
  Tokenizer tok = Tokenizer::from_gguf(file);
  if (f.no_bos) tok.set_add_bos(false);
  const std::vector<int32_t> ids = tok.encode(text, /*add_special=*/true, /*parse_special=*/!f.no_parse_special);

  std::string out;
  if (f.ids) {
    for (size_t i = 0; i < ids.size(); ++i) out += fmt::format("{}{}", i ? " " : "", ids[i]);
    out += '\n';
  }
  if (!f.ids || f.show_pieces) {
    for (int32_t id : ids) {
      out += fmt::format("{:>7} '{}'", id, escape_piece(tok.piece(id)));
      if (f.show_pieces)
        out += fmt::format("  {} ({})", escape_piece(tok.token_text(id)), token_type_name(tok.vocab().tokens[id].type));
      out += '\n';
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

void add_tokenize(CLI::App& app) {
  auto flags = std::make_shared<TokenizeFlags>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Print the token ids of a text (model or vocabulary-only GGUF)");
  cmd->add_option("-m,--model", flags->model, "GGUF file with a tokenizer.ggml.* vocabulary")->required();
  flags->prompt_opt = cmd->add_option("-p,--prompt", flags->prompt, "text to tokenize");
  flags->file_opt = cmd->add_option("-f,--file", flags->file, "file whose exact bytes are tokenized");
  cmd->add_flag("--ids", flags->ids, "print only the ids, space-separated on one line");
  cmd->add_flag("--no-bos", flags->no_bos, "do not add BOS even if the vocabulary asks for it");
  cmd->add_flag("--no-parse-special", flags->no_parse_special, "treat control-token text as plain text");
  cmd->add_flag("--show-pieces", flags->show_pieces, "list each token with its vocabulary entry and type");
  cmd->callback([flags] { set_exit_code(guarded("tokenize", [&] { return run_tokenize(*flags); })); });
}

}  // namespace ember::cli
