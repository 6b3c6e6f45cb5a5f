// The KV type table (backend/kv_types.h): what -ctk/-ctv accept and print, and that every row
// has its CPU store kernel (the other kernel tests loop over the rows too, see the header).
#include <doctest/doctest.h>

#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "backend/kv_types.h"
#include "backend/ops.h"
#include "tensor/quant.h"
#include "util/error.h"

using namespace ember;

TEST_CASE("every KV type parses from its name in any case and prints it") {
  for (const KVType& kv : kKVTypes) {
    std::string upper = kv.name;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    CHECK(parse_kv_type(kv.name, "-ctk") == kv.type);
    CHECK(parse_kv_type(upper, "-ctk") == kv.type);
    CHECK(std::string(kv_type_name(kv.type)) == kv.name);
    CHECK(kv_type_known(kv.type));
    CHECK(kv_type_names().find(kv.name) != std::string::npos);
  }
  CHECK_FALSE(kv_type_known(DType::Q4_K));
  CHECK(std::string(kv_type_name(DType::Q4_K)) == "Q4_K");
}

TEST_CASE("a bad -ctk/-ctv value is one line naming the flag and every accepted type") {
  try {
    parse_kv_type("q5_9", "-ctv");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("-ctv 'q5_9': expected one of " + kv_type_names()) != std::string::npos);
    CHECK(std::string(e.what()).find('\n') == std::string::npos);
  }
  CHECK(kv_type_names() == "f32, f16, q8_0, q4_0");
}

TEST_CASE("every KV type stores a row that reads back close to what was stored") {
  std::vector<float> x(64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i)) * 2.0f;
  for (const KVType& kv : kKVTypes) {
    INFO(std::string(kv.name));
    std::vector<uint8_t> row(dtype_row_bytes(kv.type, 64));
    ops::store_row(x.data(), 64, kv.type, row.data());
    std::vector<float> back(64);
    dequantize_row(kv.type, row.data(), back.data(), 64);
    for (size_t i = 0; i < x.size(); ++i) CHECK(std::fabs(back[i] - x[i]) <= 0.25f);  // q4_0: a step of max |x| / 8
  }
  CHECK_THROWS_AS(ops::store_row(x.data(), 64, DType::Q4_K, nullptr), Error);
}
