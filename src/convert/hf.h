// Hugging Face checkpoints (config.json, *.safetensors, tokenizer.json / tokenizer.model)
// of the llama, qwen2, qwen3 and gemma3 families into GGUF files llama.cpp reads.
#pragma once
#include <string>

#include "convert/llama2c.h"
#include "tensor/dtype.h"

namespace ember {
class ThreadPool;
}

namespace ember::convert {

ConvertStats convert_hf(const std::string& dir, const std::string& out_path, DType type, ThreadPool* pool);

}  // namespace ember::convert
