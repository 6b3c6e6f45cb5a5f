// Each family's forward pass against an independent numpy reference (tools/reference/):
// tiny random-weight GGUFs, 200 positions each, prompt processing in chunks of 64 for the
// first half and single-token decode for the second. Quantized weights (Q8_0/Q4_0) are
// multiplied against 8-bit-quantized activations by the engine, as ggml does, hence the
// tolerance relative to the logit scale rather than float epsilon.
#include <doctest/doctest.h>

#include "models/model_support.h"

using namespace ember;
using namespace ember::test;

// f32 weights and f32 KV: only float rounding separates engine and reference.
TEST_CASE("llama with f32 weights matches the numpy reference to rounding") {
  check_family("llama-f32", 1e-5, DType::F32);
}
TEST_CASE("llama matches the numpy reference") { check_family("llama", 0.03); }
TEST_CASE("qwen2 matches the numpy reference") { check_family("qwen2", 0.03); }
TEST_CASE("qwen3 matches the numpy reference") { check_family("qwen3", 0.03); }
TEST_CASE("gemma3 matches the numpy reference") { check_family("gemma3", 0.03); }
