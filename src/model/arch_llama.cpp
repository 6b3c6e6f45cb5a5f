// llama: Llama 1/2/3, Mistral, TinyLlama, SmolLM (and llama2.c checkpoints converted by
// `ember convert llama2c`). GQA, adjacent-pair RoPE ("normal" rope: pairs x[2i], x[2i+1]),
// optional linear RoPE scaling, SwiGLU FFN, output head optional (tied to token_embd).
//
// Keys:    llama.{context_length, embedding_length, block_count, feed_forward_length,
//          attention.head_count, attention.head_count_kv, attention.layer_norm_rms_epsilon,
//          rope.dimension_count, rope.freq_base, rope.scaling.type/factor}
// Tensors: token_embd, blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_output (optional
//          biases), ffn_norm, ffn_gate, ffn_up, ffn_down}, output_norm, output (optional)
// Forward: PreNormDecoder (decoder.cpp).
#include "gguf/gguf.h"
#include "model/decoder.h"
#include "util/error.h"

namespace ember {
namespace {

void read_hparams(const gguf::File& file, Hparams& hp) {
  hp.rope_neox = false;
  // Llama 3.1 frequency factors and Mixtral experts change the math; refuse rather than
  // compute something else.
  if (file.find_tensor("rope_freqs.weight"))
    fail(ErrorKind::Unsupported, "{}: rope_freqs.weight (Llama 3.1 RoPE frequency factors) is not supported",
         file.source());
  if (file.find_tensor("blk.0.ffn_gate_inp.weight"))
    fail(ErrorKind::Unsupported, "{}: mixture-of-experts llama models are not supported", file.source());
}

std::unique_ptr<ArchModel> bind(TensorBinder& b, const Hparams& hp) { return bind_prenorm_decoder(b, hp, false); }

}  // namespace

extern const ArchInfo kArchLlama{"llama", read_hparams, bind};

}  // namespace ember
