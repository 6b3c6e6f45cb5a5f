// libFuzzer target for the GBNF parser and the matcher (`make fuzz`): any text must either
// compile or throw ember::Error(InvalidArgument) -- never crash, hang or exhaust memory; a
// grammar that compiles is then run over the input's own bytes, with a rollback, which may
// only refuse bytes or throw InvalidArgument (too ambiguous).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "grammar/gbnf_parser.h"
#include "grammar/matcher.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::shared_ptr<const ember::grammar::Grammar> g;
  try {
    g = std::make_shared<const ember::grammar::Grammar>(ember::grammar::parse_gbnf(text));
  } catch (const ember::Error& e) {
    if (e.kind() != ember::ErrorKind::InvalidArgument) __builtin_trap();
    return 0;
  }
  try {
    ember::grammar::Matcher m(g);
    size_t taken = 0;
    for (size_t i = 0; i < size && i < 256; ++i) taken += m.accept(text.substr(i, 1)) ? 1 : 0;
    if (taken != m.steps()) __builtin_trap();
    m.rollback(taken / 2);
    if (m.steps() != taken - taken / 2) __builtin_trap();
  } catch (const ember::Error& e) {
    if (e.kind() != ember::ErrorKind::InvalidArgument) __builtin_trap();
  }
  return 0;
}
