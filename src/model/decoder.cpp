#include "model/decoder.h"

#include "gguf/gguf.h"
#include "model/weights.h"
#include "util/error.h"

namespace ember {

void PreNormDecoder::forward(Step& s) const {
  s.embed(tok_embd, 1.0f);
  for (size_t il = 0; il < layers.size(); ++il) {
    const Layer& L = layers[il];
    s.begin_layer(static_cast<int>(il));
    // x = x + attn(rms_norm(x) * attn_norm)
    s.rms_norm(s.x, L.attn_norm, s.cur);
    s.attention(static_cast<int>(il), L.attn, s.cur, s.out);
    s.add(s.x, s.out);
    // x = x + ffn(rms_norm(x) * ffn_norm),  ffn = down(silu(gate) * up)
    s.rms_norm(s.x, L.ffn_norm, s.cur);
    if (L.moe.active())
      s.moe(L.moe, s.cur, s.out);
    else
      s.ffn(L.ffn, Activation::SiLU, s.cur, s.out);
    s.add(s.x, s.out);
  }
  // logits = output(rms_norm(x) * output_norm), not soft-capped
  s.logits(output_norm, output, 0.0f);
}

std::unique_ptr<ArchModel> bind_prenorm_decoder(TensorBinder& b, const Hparams& hp, bool qk_norm) {
  return bind_prenorm_decoder(
      b, hp, [qk_norm](TensorBinder& tb, const Hparams& h, int il) { return bind_attention(tb, h, il, qk_norm); },
      bind_ffn);
}

std::unique_ptr<PreNormDecoder> bind_prenorm_decoder(TensorBinder& b, const Hparams& hp,
                                                     const BindLayerAttention& attention, const BindLayerFfn& ffn,
                                                     const char* ffn_norm) {
  auto m = std::make_unique<PreNormDecoder>();
  m->attention.assign(hp.n_layer, default_attention(hp));
  m->tok_embd = b.matrix("token_embd.weight", hp.n_embd, hp.n_vocab);
  m->layers.resize(hp.n_layer);
  for (int il = 0; il < hp.n_layer; ++il) {
    PreNormDecoder::Layer& L = m->layers[il];
    L.attn_norm = b.vector(blk(il, "attn_norm.weight"), hp.n_embd);
    L.attn = attention(b, hp, il);
    L.ffn_norm = b.vector(blk(il, ffn_norm), hp.n_embd);
    if (hp.n_expert > 0)
      L.moe = bind_moe(b, hp, il);
    else
      L.ffn = ffn(b, hp, il);
  }
  m->output_norm = b.vector("output_norm.weight", hp.n_embd);
  m->output = bind_output(b, hp, m->tok_embd);
  return m;
}

}  // namespace ember
