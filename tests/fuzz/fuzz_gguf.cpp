// libFuzzer target for the GGUF reader (`make fuzz`): any input must either parse or throw
// ember::Error(Format) -- never crash, hang, read out of bounds (ASan) or hit UB (UBSan).
// On success every accessor a loader would use, and what `ember inspect` prints, is exercised
// on what the parser returned. Run: make fuzz (it passes -dict=tests/fuzz/gguf.dict).
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>

#include "gguf/gguf.h"
#include "gguf/gguf_describe.h"
#include "util/error.h"

namespace {

volatile uint64_t g_sink;  // keeps the reads below from being optimised away

void touch(const ember::gguf::File& f) {
  uint64_t acc = 0;
  for (const auto& kv : f.metadata()) {
    acc += kv.key.size() + kv.str.size() + kv.u64;
    // What `ember inspect` prints for it, as text and as JSON.
    acc += ember::gguf::describe_value(kv).size() + ember::gguf::describe_value_json(kv).size();
    if (kv.type != ember::gguf::ValueType::ARRAY || kv.array.size() == 0) continue;
    const auto& a = kv.array;
    for (uint64_t i : {uint64_t{0}, a.size() / 2, a.size() - 1}) {
      try {
        if (a.element_type() == ember::gguf::ValueType::STRING) acc += a.string_at(i).size();
        else acc += std::bit_cast<uint64_t>(a.float_at(i));  // its bits: converting a negative or NaN is UB
        acc += static_cast<uint64_t>(a.int_at(i));
      } catch (const ember::Error&) {
        // wrong element type or a u64 above INT64_MAX: a clean error is the right answer
      }
    }
  }
  for (const auto& t : f.tensors()) {
    // First and last byte of every tensor: ASan reports any pointer outside the input.
    acc += t.data[0] + t.data[t.nbytes - 1] + static_cast<uint64_t>(t.n_elements());
    if (f.find_tensor(t.name) != &t) __builtin_trap();
  }
  acc += ember::gguf::tensor_totals(f).parameters;
  try {
    acc += f.get_u32("general.alignment") + f.get_string("general.architecture").size();
  } catch (const ember::Error&) {
  }
  g_sink = acc;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ember::gguf::File f = ember::gguf::File::parse(std::span<const uint8_t>(data, size), "fuzz.gguf");
    touch(f);
  } catch (const ember::Error& e) {
    if (e.kind() != ember::ErrorKind::Format) __builtin_trap();  // the reader only reports Format
  }
  return 0;
}
