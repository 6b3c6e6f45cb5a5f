// `ember quantize IN.gguf OUT.gguf TYPE [-t N]`: rewrite a model's weights in another type.
#include <fmt/format.h>

#include <memory>
#include <string>

#include "util/thread_pool.h"
#include "cli/commands.h"
#include "quantize/quantize_file.h"

namespace ember::cli {

namespace {

struct QuantizeFlags {
  std::string in, out, type;
  int threads = 0;
  bool quiet = false;
};

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s;
  for (int64_t d : shape) s += (s.empty() ? "" : " x ") + std::to_string(d);
  return s;
}

void print_tensor(const quantize::TensorReport& r) {
  const std::string err = r.copied ? std::string("copied") : fmt::format("nmse {:.3e}", r.nmse);
  fmt::print("[{:4}/{}] {:<32} [{:>14}] {:>5} -> {:<5} {:9.2f} -> {:9.2f} MiB  {}\n", r.index + 1, r.count, r.name,
             shape_string(r.shape), dtype_name(r.from), dtype_name(r.to), r.bytes_in / 1048576.0,
             r.bytes_out / 1048576.0, err);
  std::fflush(stdout);
}

}  // namespace

void add_quantize(CLI::App& app) {
  auto f = std::make_shared<QuantizeFlags>();
  auto* cmd = app.add_subcommand("quantize", "Rewrite a GGUF model's weights in another type");
  cmd->add_option("input", f->in, "input GGUF")->required();
  cmd->add_option("output", f->out, "output GGUF")->required();
  cmd->add_option("type", f->type, "f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k q4_k_m q5_k_m mxfp4_moe")->required();
  cmd->add_option("-t,--threads", f->threads, "threads (default: all cores)");
  cmd->add_flag("-q,--quiet", f->quiet, "print only the summary");
  cmd->callback([f] {
    set_exit_code(guarded("quantize", [&] {
      const quantize::FileType ft = quantize::parse_file_type(f->type);
      ThreadPool pool(f->threads > 0 ? f->threads : ThreadPool::default_threads());
      const auto r = quantize::quantize_file(f->in, f->out, ft, &pool,
                                             f->quiet ? std::function<void(const quantize::TensorReport&)>{}
                                                      : print_tensor);
      fmt::print("{} -> {} ({}): {:.2f} MiB -> {:.2f} MiB, {:.2f} M weights, {:.3f} bits/weight, {:.2f} s, {} threads\n",
                 f->in, f->out, ft.name, r.bytes_in / 1048576.0, r.bytes_out / 1048576.0, r.n_params / 1e6,
                 r.bits_per_weight(), r.seconds, pool.size());
      return 0;
    }));
  });
}

}  // namespace ember::cli
