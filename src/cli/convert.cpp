// `ember convert llama2c MODEL.bin TOKENIZER.bin -o OUT.gguf` and
// `ember convert hf DIR -o OUT.gguf`: other checkpoint formats into GGUF.
#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <string>

#include "util/thread_pool.h"
#include "cli/commands.h"
#include "convert/hf.h"
#include "convert/llama2c.h"
#include "quantize/ftype.h"
#include "util/error.h"

namespace ember::cli {

namespace {

struct ConvertOptions {
  std::string model, tokenizer, dir, out, type;
  int threads = 0;
};

void print_stats(const std::string& out, const convert::ConvertStats& s, double seconds) {
  fmt::print("wrote {}: {} tensors, {:.2f} M parameters, {:.2f} MiB, {:.2f} s\n", out, s.n_tensors,
             s.n_params / 1e6, s.file_bytes / 1048576.0, seconds);
}

}  // namespace

void add_convert(CLI::App& app) {
  auto* convert = app.add_subcommand("convert", "Convert llama2.c or Hugging Face checkpoints to GGUF");
  convert->require_subcommand(1);
  // One options struct per subcommand: CLI11 writes defaults into the bound variables.
  auto opt = std::make_shared<ConvertOptions>();
  auto hopt = std::make_shared<ConvertOptions>();

  auto* l2c = convert->add_subcommand("llama2c", "llama2.c checkpoint (run.c format) + tokenizer.bin -> llama GGUF");
  l2c->add_option("model", opt->model, "llama2.c checkpoint (.bin)")->required();
  l2c->add_option("tokenizer", opt->tokenizer, "llama2.c tokenizer.bin")->required();
  l2c->add_option("-o,--output", opt->out, "output GGUF path")->required();
  l2c->add_option("--type", opt->type, "weight type: f32, f16, bf16, q8_0, ... (norms stay f32)")
      ->default_val("f32");
  l2c->add_option("-t,--threads", opt->threads, "threads (default: all cores)");
  l2c->callback([opt] {
    set_exit_code(guarded("convert llama2c", [&] {
      const auto t0 = std::chrono::steady_clock::now();
      const quantize::FileType ft = quantize::parse_file_type(opt->type);
      if (ft.mix) fail(ErrorKind::InvalidArgument, "convert writes one type; use `ember quantize` for {}", ft.name);
      ThreadPool pool(opt->threads > 0 ? opt->threads : ThreadPool::default_threads());
      const auto stats = convert::convert_llama2c(opt->model, opt->tokenizer, opt->out, ft.base, &pool);
      print_stats(opt->out, stats, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      return 0;
    }));
  });

  auto* hf = convert->add_subcommand("hf", "Hugging Face folder (config.json, *.safetensors, tokenizer) -> GGUF");
  hf->add_option("dir", hopt->dir, "model folder")->required();
  hf->add_option("-o,--output", hopt->out, "output GGUF path")->required();
  hf->add_option("--type", hopt->type, "weight type: f32, f16, bf16, q8_0 (norms stay f32)")->default_val("f16");
  hf->add_option("-t,--threads", hopt->threads, "threads (default: all cores)");
  hf->callback([opt = hopt] {
    set_exit_code(guarded("convert hf", [&] {
      const auto t0 = std::chrono::steady_clock::now();
      const quantize::FileType ft = quantize::parse_file_type(opt->type);
      if (ft.mix) fail(ErrorKind::InvalidArgument, "convert writes one type; use `ember quantize` for {}", ft.name);
      ThreadPool pool(opt->threads > 0 ? opt->threads : ThreadPool::default_threads());
      const auto stats = convert::convert_hf(opt->dir, opt->out, ft.base, &pool);
      print_stats(opt->out, stats, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      return 0;
    }));
  });
}

}  // namespace ember::cli
