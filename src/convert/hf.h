// Hugging Face checkpoints (config.json, *.safetensors, tokenizer.json / tokenizer.model)
// of the dense families (llama, qwen2, qwen3, gemma2, gemma3, phi3) and the mixture-of-experts
// ones (qwen3moe, qwen2moe, mixtral, olmoe) into GGUF files llama.cpp reads.
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
