// libFuzzer target for the JSON-schema compiler (`make fuzz`): any bytes that parse as JSON
// must either compile to a grammar or throw ember::Error(InvalidArgument) naming what is
// unsupported; what compiles must be GBNF the parser accepts (or refuses only for
// InvalidArgument: a left-recursive $ref, the size bound), and never crash or hang.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"
#include "util/error.h"
#include "util/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ember::json::Value schema;
  try {
    schema = ember::json::parse(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
  } catch (const ember::Error&) {
    return 0;
  }
  std::string gbnf;
  try {
    gbnf = ember::grammar::json_schema_to_gbnf(schema);
  } catch (const ember::Error& e) {
    if (e.kind() != ember::ErrorKind::InvalidArgument) __builtin_trap();
    return 0;
  }
  try {
    ember::grammar::parse_gbnf(gbnf);
  } catch (const ember::Error& e) {
    const std::string what = e.what();
    if (e.kind() != ember::ErrorKind::InvalidArgument || what.rfind("grammar line", 0) == 0) __builtin_trap();
  }
  return 0;
}
