// util/json: parse() over nlohmann's SAX parser into ordered_json (key order, exact integers,
// UTF-8, the depth limit, one-line errors with byte offsets), the typed accessors and json::quote.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "util/error.h"
#include "util/json.h"

using namespace ember;

namespace {

json::Value parse(std::string_view text) { return json::parse(text, "t.json"); }

// The message parse() throws for `text` (empty when it parses).
std::string error_of(std::string_view text) {
  try {
    parse(text);
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Format);
    return e.what();
  }
  return "";
}

std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

}  // namespace

TEST_CASE("json: objects keep their key order and kinds read back typed") {
  const json::Value v = parse(R"({"z": 1, "a": [true, null, "s"], "m": {"k": false}, "b": 2.5})");
  const auto& o = json::as_object(v);
  REQUIRE(o.size() == 4);
  CHECK((o.begin() + 0)->first == "z");
  CHECK((o.begin() + 1)->first == "a");
  CHECK((o.begin() + 2)->first == "m");
  CHECK((o.begin() + 3)->first == "b");
  const auto& a = json::as_array(json::at(v, "a"));
  REQUIRE(a.size() == 3);
  CHECK(json::as_bool(a[0]));
  CHECK(a[1].is_null());
  CHECK(json::as_string(a[2]) == "s");
  CHECK_FALSE(json::as_bool(json::at(json::at(v, "m"), "k")));
  CHECK(json::as_double(json::at(v, "b")) == 2.5);
  CHECK(json::find(v, "nope") == nullptr);
  CHECK(json::find(json::at(v, "a"), "z") == nullptr);  // not an object
  CHECK(json::as_array(parse("[]")).empty());
  CHECK(json::as_object(parse("{}")).empty());
  CHECK(json::as_int(parse(" \t\r\n7 \n")) == 7);
}

TEST_CASE("json: duplicate keys are all kept, find() returns the first") {
  const json::Value v = parse(R"({"k": 1, "k": 2})");
  CHECK(json::as_object(v).size() == 2);
  CHECK(json::as_int(json::at(v, "k")) == 1);
}

TEST_CASE("json: wrong kinds and missing keys name what was asked for") {
  const json::Value v = parse(R"({"n": 1.5, "s": "x"})");
  CHECK_THROWS_WITH_AS(json::as_int(json::at(v, "n"), "config n"), "config n should be an integer, is a number", Error);
  CHECK_THROWS_WITH_AS(json::as_double(json::at(v, "s"), "s"), "s should be a number, is a string", Error);
  CHECK_THROWS_WITH_AS(json::as_array(v, "root"), "root should be an array, is an object", Error);
  CHECK_THROWS_WITH_AS(json::at(v, "q"), "missing key \"q\"", Error);
}

TEST_CASE("json: integers are exact int64, other numbers doubles") {
  const json::Value big = parse("9007199254740993");  // 2^53 + 1: no double holds it
  CHECK(big.is_number_integer());
  CHECK(json::as_int(big) == 9007199254740993);
  CHECK(json::as_int(parse("9223372036854775807")) == std::numeric_limits<int64_t>::max());
  CHECK(json::as_int(parse("-9223372036854775808")) == std::numeric_limits<int64_t>::min());
  CHECK(json::as_int(parse("-12")) == -12);
  CHECK(json::as_int(parse("0")) == 0);
  CHECK(json::as_int(parse("-0")) == 0);
  // Beyond int64 (a uint64 above INT64_MAX, or past uint64 and below INT64_MIN): the nearest double.
  for (const char* text : {"9223372036854775808", "18446744073709551615", "18446744073709551616",
                           "-9223372036854775809"}) {
    CAPTURE(text);
    const json::Value v = parse(text);
    CHECK(v.is_number());
    CHECK_FALSE(v.is_number_integer());
    CHECK(json::as_double(v) == doctest::Approx(std::stod(text)));
  }
  CHECK(json::as_double(parse("18446744073709551615")) == 18446744073709551615.0);
  // A fraction or exponent makes a double, even where the value is whole.
  for (const char* text : {"1.0", "1e3", "1E+3", "-2.5e-3"}) {
    CAPTURE(text);
    CHECK_FALSE(parse(text).is_number_integer());
    CHECK(json::as_double(parse(text)) == std::stod(text));
  }
  CHECK(json::as_double(parse("1.5e300")) == 1.5e300);
  CHECK(error_of("1e400").find("number overflow") != std::string::npos);  // no JSON infinity
}

TEST_CASE("json: escapes and surrogate pairs decode to UTF-8") {
  CHECK(json::as_string(parse(R"("\"\\\/\b\f\n\r\t")")) == "\"\\/\b\f\n\r\t");
  CHECK(json::as_string(parse(R"("\u0041\u00e9\u4E2D")")) == "A\xc3\xa9\xe4\xb8\xad");
  CHECK(json::as_string(parse(R"("\ud83d\ude00")")) == "\xf0\x9f\x98\x80");  // U+1F600
  CHECK(json::as_string(parse(R"("\u0000")")) == std::string(1, '\0'));
  CHECK(json::as_string(parse("\"caf\xc3\xa9 \xf0\x9f\x98\x80\"")) == "caf\xc3\xa9 \xf0\x9f\x98\x80");  // raw UTF-8
  CHECK(error_of(R"("\ud83d")").find("surrogate") != std::string::npos);   // lone high
  CHECK(error_of(R"("\ude00")").find("surrogate") != std::string::npos);   // lone low
  CHECK(error_of(R"("\ud83d\u0041")").find("surrogate") != std::string::npos);
  CHECK(error_of(R"("\x")") != "");
  CHECK(error_of(R"("\u12G4")") != "");
  CHECK(error_of("\"a\nb\"").find("control character") != std::string::npos);
}

TEST_CASE("json: invalid UTF-8 inside strings is refused") {
  for (const char* text : {"\"\xff\"", "\"a\x80\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"",
                           "\"\xe4\xb8\"", "{\"k\xfe\": 1}"}) {
    CAPTURE(text);
    CHECK(error_of(text).find("ill-formed UTF-8") != std::string::npos);
  }
  // The message echoes none of the input's bytes.
  CHECK(error_of("\"\xff\"").find('\xff') == std::string::npos);
}

TEST_CASE("json: nesting deeper than kMaxDepth is refused where it happens") {
  CHECK(parse(nested(json::kMaxDepth)).is_array());
  CHECK(parse(std::string(json::kMaxDepth - 1, '[') + "{}" + std::string(json::kMaxDepth - 1, ']')).is_array());
  const std::string deep = error_of(nested(json::kMaxDepth + 1));
  CHECK(deep == fmt::format("t.json: JSON at byte {}: nests deeper than {} arrays and objects", json::kMaxDepth,
                            json::kMaxDepth));
  // Far deeper input fails just as cleanly (and quickly): no recursion while parsing.
  CHECK(error_of(std::string(1'000'000, '[')).find("nests deeper") != std::string::npos);
  CHECK(error_of(R"({"a": )" + nested(json::kMaxDepth) + "}").find("at byte 517:") != std::string::npos);
}

TEST_CASE("json: a document is one value, whitespace around it only") {
  CHECK(error_of("[1] x").find("t.json: JSON at byte 4:") == 0);
  CHECK(error_of("{} {}").find("expected end of input") != std::string::npos);
  CHECK(error_of("1 2") != "");
  CHECK(error_of("") != "");
  CHECK(error_of("   ") != "");
  // nlohmann alone would stop at a NUL byte and take what came before.
  CHECK(error_of(std::string("1\0", 2)) == "t.json: JSON at byte 1: a NUL byte");
  CHECK(error_of(std::string("[1]\0[2]", 7)) == "t.json: JSON at byte 3: a NUL byte");
  CHECK(error_of(std::string("[\"a\0\"]", 6)).find("at byte 3") != std::string::npos);
  CHECK(parse("\xef\xbb\xbf[1]").is_array());  // RFC 8259 lets a reader skip a BOM
}

TEST_CASE("json: errors are one line naming the source and byte offset") {
  CHECK(error_of(R"({"a": [1, 2,]})") ==
        "t.json: JSON at byte 12: syntax error while parsing value - unexpected ']'; expected '[', '{', or a literal");
  CHECK(error_of("[1,").find("t.json: JSON at byte 3: ") == 0);  // the end of the input
  CHECK(error_of("\"ab\xff\"").find("t.json: JSON at byte 3: ") == 0);
  CHECK(error_of("{\"a\" 1}").find("t.json: JSON at byte 5: ") == 0);
  CHECK(error_of("[\n  tru\n]").find("t.json: JSON at byte 7: ") == 0);
  CHECK(error_of("[01]").find("t.json: JSON at byte 2: ") == 0);
  CHECK(error_of("[1.]").find("t.json: JSON at byte 3: ") == 0);
  CHECK(error_of("{1:2}").find("t.json: JSON at byte 1: ") == 0);
  CHECK(error_of("[nan]") != "");
  CHECK(error_of("[1,]") != "");
  CHECK(error_of("// c\n1") != "");  // no comments
  for (const char* text : {"\"a\nb\"", "[\"\x01\"]", "\"\xff\"", "[1,"}) {
    CAPTURE(text);
    CHECK(error_of(text).find('\n') == std::string::npos);
  }
}

TEST_CASE("json: quote escapes control characters and replaces each invalid byte") {
  CHECK(json::quote("") == "\"\"");
  CHECK(json::quote("a\"b\\c\nd\re\tf") == "\"a\\\"b\\\\c\\nd\\re\\tf\"");
  CHECK(json::quote(std::string("\x00\x01\x1f\x7f\b\f", 6)) == "\"\\u0000\\u0001\\u001f\\u007f\\u0008\\u000c\"");
  CHECK(json::quote("/ caf\xc3\xa9 \xf0\x9f\x98\x80") == "\"/ caf\xc3\xa9 \xf0\x9f\x98\x80\"");
  CHECK(json::quote("x\xff") == "\"x\xef\xbf\xbd\"");
  CHECK(json::quote("\xe4\xb8") == "\"\xef\xbf\xbd\xef\xbf\xbd\"");            // truncated: one per byte
  CHECK(json::quote("\xed\xa0\x80") == "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");  // a surrogate
  // What quote writes, parse reads back (invalid bytes as U+FFFD).
  const std::string odd = std::string("k\x00\n\"\\\x7f\xc3\xa9\xff", 9);
  CHECK(json::as_string(parse(json::quote(odd))) == std::string("k\x00\n\"\\\x7f\xc3\xa9\xef\xbf\xbd", 11));
}
