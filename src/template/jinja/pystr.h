// Python's str semantics over UTF-8 bytes: templates index, slice and measure strings in code
// points, strip Python's whitespace, and print floats as repr() does.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ember::jinja::pystr {

// Byte offset of each code point, plus s.size() at the end (size() - 1 code points).
std::vector<size_t> codepoint_offsets(std::string_view s);
size_t codepoint_count(std::string_view s);
bool is_ascii(std::string_view s);

bool is_space(std::string_view s, size_t pos, size_t* len);  // str.isspace() at a code point
// str.strip / lstrip / rstrip: [begin, end) of what remains. chars empty = whitespace.
void strip_range(std::string_view s, std::string_view chars, bool left, bool right, size_t* begin, size_t* end);
std::vector<std::string> split(std::string_view s, std::string_view sep, int64_t maxsplit);  // sep "" = whitespace
std::vector<std::string> rsplit(std::string_view s, std::string_view sep, int64_t maxsplit);
std::vector<std::string> splitlines(std::string_view s);
std::string replace(std::string_view s, std::string_view from, std::string_view to, int64_t count);
std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string title(std::string_view s);
std::string capitalize(std::string_view s);

std::string float_repr(double d);      // repr(float): 1.0, 0.1, 1e-05, 1e+16, inf, nan
std::string string_repr(std::string_view s);  // repr(str): 'a', "it's", '\n'

}  // namespace ember::jinja::pystr
