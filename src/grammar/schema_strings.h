// The string side of the JSON-schema compiler: a `pattern` (a regular expression) and the
// supported `format`s as GBNF expressions over a JSON string's content, i.e. over the
// characters as they are written inside the quotes (", \ and control characters escaped).
#pragma once
#include <string>
#include <string_view>

namespace ember::grammar {

// The regular expression, anchored at both ends (a whole-string match also satisfies JSON
// Schema's search semantics). Supported: literals, escapes, \d \w \s \D \W \S, classes,
// ., groups (...) (?:...), |, * + ? {m} {m,} {m,n} (lazy forms as greedy), ^ and $ at the
// ends. Throws Error(InvalidArgument) naming what is not supported.
std::string pattern_to_gbnf(std::string_view pattern);

// date, time, date-time, uuid; throws Error(InvalidArgument) naming another format.
std::string format_to_gbnf(std::string_view format);

}  // namespace ember::grammar
