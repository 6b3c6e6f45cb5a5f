#include "model/sandwich_decoder.h"

#include <cmath>

#include "model/weights.h"

namespace ember {

void SandwichDecoder::forward(Step& s) const {
  // x = token_embd[tokens] * sqrt(n_embd)
  s.embed(tok_embd, std::sqrt(static_cast<float>(s.hp.n_embd)));
  for (size_t il = 0; il < layers.size(); ++il) {
    const Layer& L = layers[il];
    s.begin_layer(static_cast<int>(il));
    // x = x + post_attn_norm(attn(attn_norm(x)))   (local or global by layer)
    s.rms_norm(s.x, L.attn_norm, s.cur);
    s.attention(static_cast<int>(il), L.attn, s.cur, s.out);
    s.rms_norm(s.out, L.attn_post_norm, s.cur);
    s.add(s.x, s.cur);
    // x = x + post_ffw_norm(down(gelu(gate) * up)(ffn_norm(x)))
    s.rms_norm(s.x, L.ffn_norm, s.cur);
    s.ffn(L.ffn, Activation::GELU, s.cur, s.out);
    s.rms_norm(s.out, L.ffn_post_norm, s.cur);
    s.add(s.x, s.cur);
  }
  s.logits(output_norm, output, final_softcap);
}

std::unique_ptr<SandwichDecoder> bind_sandwich_decoder(TensorBinder& b, const Hparams& hp, bool qk_norm) {
  auto m = std::make_unique<SandwichDecoder>();
  m->tok_embd = b.matrix("token_embd.weight", hp.n_embd, hp.n_vocab);
  m->layers.resize(hp.n_layer);
  for (int il = 0; il < hp.n_layer; ++il) {
    SandwichDecoder::Layer& L = m->layers[il];
    L.attn_norm = b.vector(blk(il, "attn_norm.weight"), hp.n_embd);
    L.attn = bind_attention(b, hp, il, qk_norm);
    L.attn_post_norm = b.vector(blk(il, "post_attention_norm.weight"), hp.n_embd);
    L.ffn_norm = b.vector(blk(il, "ffn_norm.weight"), hp.n_embd);
    L.ffn = bind_ffn(b, hp, il);
    L.ffn_post_norm = b.vector(blk(il, "post_ffw_norm.weight"), hp.n_embd);
  }
  m->output_norm = b.vector("output_norm.weight", hp.n_embd);
  m->output = bind_output(b, hp, m->tok_embd);
  return m;
}

}  // namespace ember
