// Template text -> tokens, with the whitespace rules transformers renders under: trim_blocks
// (the first newline after a block or comment tag is dropped), lstrip_blocks (spaces and tabs
// from the start of a line up to a block or comment tag are dropped), and the per-tag
// modifiers `-` (strip all whitespace on that side) and `+` (keep it).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace ember::jinja {

struct Token {
  enum class Kind {
    Text,        // literal template text (value), whitespace rules already applied
    VarBegin,    // {{
    VarEnd,      // }}
    BlockBegin,  // {%
    BlockEnd,    // %}
    Name,
    String,      // value: the decoded literal
    Int,
    Float,
    Op,          // value: + - * / // % ** ~ == != < > <= >= = ( ) [ ] { } , . : |
    End,
  };
  Kind kind;
  std::string value;
  int line = 1;
  int col = 1;
};

// Throws Failure "line L:C: ..." for unterminated tags, strings and comments.
std::vector<Token> lex(std::string_view source);

}  // namespace ember::jinja
