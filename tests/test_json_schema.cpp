// The JSON-schema compiler: each schema's grammar accepts hand-checked valid documents and
// refuses invalid ones (checked by the matcher over the bytes); unsupported keywords and
// bad values are errors naming them; the tool-call grammar wraps the arguments' schema.
#include <doctest/doctest.h>

#include "engine/output_constraint.h"
#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/schema_strings.h"
#include "grammar/tool_call.h"
#include "util/error.h"

using namespace ember;
using namespace ember::grammar;

namespace {

std::shared_ptr<const Grammar> from_gbnf(const std::string& text) {
  try {
    return std::make_shared<const Grammar>(parse_gbnf(text));
  } catch (const Error& e) {
    FAIL(e.what() << "\n" << text);
  }
  return nullptr;
}

std::shared_ptr<const Grammar> schema(const char* text) { return from_gbnf(json_schema_to_gbnf(json::parse(text, "schema"))); }

bool matches(const std::shared_ptr<const Grammar>& g, std::string_view s) {
  Matcher m(g);
  return m.accept(s) && m.can_end();
}

std::string error_of(const char* text) {
  try {
    json_schema_to_gbnf(json::parse(text, "schema"));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("objects: required and optional properties in order, no extra keys") {
  auto g = schema(R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},
      "tags":{"type":"array","items":{"type":"string"}}},"required":["name"]})");
  CHECK(matches(g, R"({"name": "Ann"})"));
  CHECK(matches(g, R"({"name":"Ann","age":3})"));
  CHECK(matches(g, R"({"name": "Ann", "tags": ["a", "b"]})"));
  CHECK(matches(g, "{\n  \"name\": \"A\",\n  \"age\": -12,\n  \"tags\": []\n}"));
  CHECK_FALSE(matches(g, R"({"age": 3})"));                 // name is required
  CHECK_FALSE(matches(g, R"({"name": "A", "x": 1})"));      // no extra keys
  CHECK_FALSE(matches(g, R"({"name": "A", "age": 1.5})"));  // integer
  CHECK_FALSE(matches(g, R"({"name": "A",})"));
  CHECK_FALSE(matches(g, R"({, "name": "A"})"));
}

TEST_CASE("only optional properties, and additionalProperties") {
  auto g = schema(R"({"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"null"}}})");
  CHECK(matches(g, "{}"));
  CHECK(matches(g, R"({"b": null})"));
  CHECK(matches(g, R"({"a": true, "b": null})"));
  CHECK_FALSE(matches(g, R"({"b": null, "a": true})"));  // schema order
  auto extra = schema(R"({"type":"object","properties":{"a":{"type":"number"}},"additionalProperties":{"type":"integer"}})");
  CHECK(matches(extra, R"({"a": 1.5, "x": 2, "y": 3})"));
  CHECK(matches(extra, R"({"x": 2})"));
  CHECK_FALSE(matches(extra, R"({"x": "s"})"));
  CHECK(matches(schema(R"({"type":"object"})"), R"({"any": [1, {"x": null}]})"));
}

TEST_CASE("enum, const, anyOf, type lists, $ref with recursion") {
  CHECK(matches(schema(R"({"enum":["red","green",3,null]})"), "\"green\""));
  CHECK(matches(schema(R"({"enum":["red","green",3,null]})"), "null"));
  CHECK_FALSE(matches(schema(R"({"enum":["red","green"]})"), "\"blue\""));
  CHECK(matches(schema(R"({"const":{"k":[1,2]}})"), R"({"k":[1,2]})"));
  auto any = schema(R"({"anyOf":[{"type":"integer"},{"type":"string","maxLength":2}]})");
  CHECK(matches(any, "12"));
  CHECK(matches(any, "\"ab\""));
  CHECK_FALSE(matches(any, "\"abc\""));
  CHECK(matches(schema(R"({"type":["string","null"]})"), "null"));
  auto tree = schema(R"({"$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{
      "v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}}})");
  CHECK(matches(tree, R"({"v": 1, "kids": [{"v": 2}, {"v": 3, "kids": []}]})"));
  CHECK_FALSE(matches(tree, R"({"v": 1, "kids": [{}]})"));
}

TEST_CASE("arrays with minItems and maxItems") {
  auto g = schema(R"({"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3})");
  CHECK_FALSE(matches(g, "[1]"));
  CHECK(matches(g, "[1, 2]"));
  CHECK(matches(g, "[1,2,3]"));
  CHECK_FALSE(matches(g, "[1,2,3,4]"));
  CHECK(matches(schema(R"({"type":"array","maxItems":0})"), "[]"));
  CHECK(matches(schema(R"({"type":"array"})"), R"([1, "a", {}])"));
}

TEST_CASE("patterns and formats") {
  auto g = schema(R"({"type":"string","pattern":"^[A-Z]{2}-\\d{3}(x|yz)?$"})");
  CHECK(matches(g, "\"AB-123\""));
  CHECK(matches(g, "\"QZ-000yz\""));
  CHECK_FALSE(matches(g, "\"ab-123\""));
  CHECK_FALSE(matches(g, "\"AB-12\""));
  auto quotes = schema(R"({"type":"string","pattern":"a\"b\\\\c."})");
  CHECK(matches(quotes, R"("a\"b\\cz")"));
  CHECK(matches(schema(R"({"type":"string","format":"date"})"), "\"2024-02-29\""));
  CHECK_FALSE(matches(schema(R"({"type":"string","format":"date"})"), "\"2024-13-01\""));
  CHECK(matches(schema(R"({"type":"string","format":"date-time"})"), "\"2024-02-29T12:30:00Z\""));
  CHECK(matches(schema(R"({"type":"string","format":"uuid"})"), "\"123e4567-e89b-12d3-a456-426614174000\""));
  CHECK(error_of(R"({"type":"string","pattern":"(?=a)b"})").find("lookaround") != std::string::npos);
  CHECK(error_of(R"({"type":"string","pattern":"(a)\\1"})").find("escape \\1") != std::string::npos);
  // Found by fuzz_json_schema: a brace that is not a {m,n} must not reach the grammar text.
  CHECK(error_of(R"({"type":"string","pattern":"[5-9]{5@(-\\d{4)}?"})").find("malformed {m,n}") != std::string::npos);
}

TEST_CASE("unsupported keywords and bad values are named") {
  CHECK(error_of(R"({"type":"object","properties":{"x":{"type":"integer","minimum":0}}})") ==
        "json schema: unsupported keyword 'minimum' at /properties/x");
  CHECK(error_of(R"({"not":{}})") == "json schema: unsupported keyword 'not' at /");
  CHECK(error_of(R"({"type":"string","format":"email"})").find("unsupported format 'email'") != std::string::npos);
  CHECK(error_of(R"({"$ref":"#/$defs/missing"})").find("does not resolve") != std::string::npos);
  CHECK(error_of(R"({"type":"array","maxItems":99999999})").find("over") != std::string::npos);
  CHECK(error_of(R"({"type":"wat"})").find("unknown type 'wat'") != std::string::npos);
  CHECK(error_of(R"({"$ref":"#"})").find("left-recursive") == std::string::npos);  // compiles; the grammar refuses it
}

TEST_CASE("a tool call's arguments follow the tool's schema") {
  const ToolSchema tools[] = {
      {"get_weather", json::parse(R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})", "t")},
      {"get_time", json::Value()}};
  auto g = from_gbnf(tool_call_gbnf(tools, false));
  CHECK(matches(g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"));
  CHECK(matches(g, "<tool_call>{\"name\":\"get_time\",\"arguments\":{}}</tool_call>"));
  CHECK_FALSE(matches(g, "<tool_call>{\"name\":\"get_weather\",\"arguments\":{}}</tool_call>"));
  CHECK_FALSE(matches(g, "<tool_call>{\"name\":\"other\",\"arguments\":{}}</tool_call>"));
  auto parallel = from_gbnf(tool_call_gbnf(std::span(tools).subspan(1), true));
  CHECK(matches(parallel, "<tool_call>{\"name\":\"get_time\",\"arguments\":{}}</tool_call>\n<tool_call>{\"name\":\"get_time\",\"arguments\":{}}</tool_call>"));
}

TEST_CASE("the forced tool-call constraint compiles for the request, errors name 'tools'") {
  const ToolSchema ok[] = {{"f", json::parse(R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})", "t")}};
  auto g = tool_call_constraint(ok, false);
  Matcher m(g);
  CHECK(m.accept("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>"));
  CHECK(m.can_end());
  const ToolSchema bad[] = {{"f", json::parse(R"({"type":"object","properties":{"a":{"type":"integer","minimum":1}}})", "t")}};
  try {
    tool_call_constraint(bad, false);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "field 'tools': json schema: unsupported keyword 'minimum' at /properties/a");
  }
}
