// Writing GBNF text: literals and character classes with every byte that GBNF would read
// as syntax escaped, for the grammars ember generates (json_schema.h, tool_call.h).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "grammar/utf8_ranges.h"

namespace ember::grammar {

// "bytes" as a GBNF literal (valid UTF-8 is passed through, other bytes as \xNN).
std::string gbnf_literal(std::string_view bytes);
// [ranges] (or [^ranges]) with every bound as \UXXXXXXXX.
std::string gbnf_class(const std::vector<CodePointRange>& ranges, bool negate = false);

}  // namespace ember::grammar
