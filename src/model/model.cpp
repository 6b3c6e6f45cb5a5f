#include "model/model.h"

#include <cstdio>
#include <fmt/format.h>
#include <map>

#include "gguf/gguf.h"
#include "model/arch.h"
#include "model/hparams.h"
#include "model/weights.h"
#include "util/error.h"

namespace ember {

Model::~Model() = default;

int Batch::n_outputs() const {
  int n = 0;
  for (uint8_t w : want_logits) n += w != 0;
  return n;
}

// Bytes of the tensors `pl` puts on the device (what its store will upload).
static size_t device_share(const gguf::File& file, const Placement& pl) {
  size_t n = 0;
  for (const gguf::TensorInfo& t : file.tensors())
    n += tensor_device(t.name, pl, false) != DeviceKind::Cpu || tensor_device(t.name, pl, true) != DeviceKind::Cpu ? t.nbytes : 0;
  return n;
}

std::unique_ptr<Model> Model::load(const std::string& path, const LoadOptions& opts) {
  std::unique_ptr<Model> m(new Model());
  m->file_ = std::make_unique<gguf::File>(gguf::File::open(path));
  const gguf::File& file = *m->file_;

  const std::string arch(file.get_string("general.architecture"));
  const ArchInfo* info = find_arch(arch);
  if (!info)
    fail(ErrorKind::Unsupported, "{}: architecture '{}' is not supported (known: {})", path, arch, known_archs());
  m->hp_.arch = arch;
  read_common_hparams(file, m->hp_);
  info->read_hparams(file, m->hp_);

  // On the CPU, weights stay in the mapping (the views point straight into the file) unless
  // repacked; a GPU gets its copy here.
  m->placement_ = choose_placement(opts.gpu_layers, m->hp_.n_layer);
  const Placement& pl = m->placement_;
  for (const gguf::TensorInfo& t : file.tensors()) m->weight_bytes_ += t.nbytes;
  if (pl.first_device_layer > 0) m->host_weights_ = make_weight_store(DeviceKind::Cpu, opts.repack);
  if (pl.device != DeviceKind::Cpu) {
    m->device_weights_ = make_weight_store(pl.device, opts.repack);
    const size_t need = device_share(file, pl);
    if (need > m->device_weights_->memory_available())
      fail(ErrorKind::OutOfMemory,
           "{}: {} layers' weights ({:.1f} MiB) do not fit the {:.1f} MiB free on {} (a smaller -ngl keeps more on the CPU)",
           path, pl.n_layer - pl.first_device_layer, need / 1048576.0, m->device_weights_->memory_available() / 1048576.0,
           m->device_weights_->describe());
  }
  TensorBinder binder(file, m->host_weights_.get(), m->device_weights_.get(), pl);
  m->arch_ = info->bind(binder, m->hp_);
  if (opts.progress) opts.progress(1.0f);
  if (opts.print_plan) {
    const Hparams& hp = m->hp_;
    const size_t repacked = m->repacked_bytes();
    const std::string where =
        pl.device != DeviceKind::Cpu
            ? fmt::format("{} of {} layers, {:.1f} MiB on {}", pl.n_layer - pl.first_device_layer, pl.n_layer,
                          m->device_weight_bytes() / 1048576.0, device_kind_name(pl.device))
        : repacked ? fmt::format("mmap, {:.1f} MiB repacked for the CPU kernels", repacked / 1048576.0)
                   : "mmap";
    std::fprintf(stderr, "model: %s '%s', %d layers, n_embd %d, heads %d/%d x %d, n_ff %d, vocab %d, %.1f MiB of weights (%s)\n",
                 hp.arch.c_str(), hp.name.c_str(), hp.n_layer, hp.n_embd, hp.n_head, hp.n_head_kv, hp.head_dim,
                 hp.n_ff[0], hp.n_vocab, m->weight_bytes_ / 1048576.0, where.c_str());
  }
  return m;
}

size_t Model::repacked_bytes() const {
  return (host_weights_ ? host_weights_->copied_bytes() : 0) + device_weight_bytes();
}
std::vector<MatView> Model::cpu_repacked_matrices() const {
  return host_weights_ ? host_weights_->repacked_matrices() : std::vector<MatView>{};
}
size_t Model::device_weight_bytes() const { return device_weights_ ? device_weights_->copied_bytes() : 0; }

std::string Model::describe() const {
  std::map<std::string, std::pair<int, uint64_t>> by_type;
  for (const gguf::TensorInfo& t : file_->tensors()) {
    auto& e = by_type[dtype_name(t.type)];
    e.first += 1;
    e.second += t.nbytes;
  }
  std::string s;
  for (const auto& [name, e] : by_type)
    s += fmt::format("{}: {} tensors, {:.1f} MiB\n", name, e.first, e.second / 1048576.0);
  return s;
}

}  // namespace ember
