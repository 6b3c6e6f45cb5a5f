// How an architecture plugs in: one file per family (arch_llama.cpp, arch_qwen2.cpp, ...)
// defines an ArchInfo: how to read its hyperparameters from GGUF metadata, which tensors it
// binds (names, types, shapes) and its forward pass. arch_registry.cpp lists them; adding a
// family is one new file plus one line there.
#pragma once
#include <memory>
#include <string_view>
#include <vector>

#include "model/model.h"

namespace ember {

namespace gguf { class File; }
class TensorBinder;
class Step;

// How one layer attends, where families differ. The pre-norm families attend over the whole
// context with the file's RoPE (default_attention); gemma3's local layers set their own.
struct LayerAttention {
  int window = 0;                 // tokens; sliding window (0 = the whole context)
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;   // linear scaling: 1/rope.scaling.factor
  float scale = 0.0f;             // q.k scale
  float softcap = 0.0f;           // tanh soft-cap of the attention scores (0 = none)
};
LayerAttention default_attention(const Hparams& hp);  // whole context, 1/sqrt(head_dim)

// An architecture's bound weights and its forward pass over one ubatch.
struct ArchModel {
  virtual ~ArchModel() = default;
  // Runs the ubatch held by `step` through the model: embeddings in, logits written for the
  // rows the step asks for. Reads and writes the KV cache through the step, and calls
  // step.begin_layer(il) as each layer begins (a split model changes device there).
  virtual void forward(Step& step) const = 0;
  std::vector<LayerAttention> attention;  // [n_layer], filled by the family's bind
};

struct ArchInfo {
  const char* name;  // general.architecture value
  // Fills the architecture-specific fields of hp (the common keys are already read).
  void (*read_hparams)(const gguf::File& file, Hparams& hp);
  // Binds every tensor (checking type and shape) and returns the ready model.
  std::unique_ptr<ArchModel> (*bind)(TensorBinder& binder, const Hparams& hp);
};

// The architecture named `name`, or nullptr.
const ArchInfo* find_arch(std::string_view name);
// Comma-separated list of known names (for error messages).
std::string known_archs();

}  // namespace ember
