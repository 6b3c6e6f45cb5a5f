#include "quantize/quantize_file.h"

#include <chrono>
#include <cstring>
#include <filesystem>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "quantize/encode.h"
#include "quantize/mix.h"
#include "tensor/quant.h"
#include "util/error.h"

namespace ember::quantize {

namespace {

std::vector<int64_t> shape_of(const gguf::TensorInfo& t) { return {t.ne, t.ne + t.n_dims}; }

int block_count(const gguf::File& f) {
  const std::string arch(f.get_string("general.architecture"));
  return static_cast<int>(f.get_u32(arch + ".block_count"));
}

int expert_count(const gguf::File& f) {
  const std::string arch(f.get_string("general.architecture"));
  return static_cast<int>(f.find_u32(arch + ".expert_count").value_or(0));
}

// The family's rules; a file of a family ember does not run gets the dense families'.
const QuantRules& quant_rules(const gguf::File& f) {
  const ArchInfo* arch = find_arch(f.get_string("general.architecture"));
  return arch ? arch->quant : kDenseQuantRules;
}

bool is_split_key(std::string_view k) { return k.starts_with("split."); }

}  // namespace

QuantizeReport quantize_file(const std::string& in_path, const std::string& out_path, const FileType& type,
                             ThreadPool* pool, const std::function<void(const TensorReport&)>& on_tensor) {
  const auto t0 = std::chrono::steady_clock::now();
  if (std::filesystem::exists(out_path) && std::filesystem::equivalent(in_path, out_path))
    fail(ErrorKind::InvalidArgument, "{}: output would overwrite the input", out_path);
  const gguf::File in = gguf::File::open(in_path);
  if (in.find_u32("split.count").value_or(1) > 1)
    fail(ErrorKind::Unsupported, "{}: split GGUF files are not supported; merge them first", in_path);
  std::vector<std::string> order;
  for (const gguf::TensorInfo& t : in.tensors()) order.emplace_back(t.name);
  const TypePlan plan(type, block_count(in), in.find_tensor("output.weight") != nullptr, order, quant_rules(in),
                      expert_count(in));

  gguf::Writer w;
  w.copy_metadata(in, is_split_key);
  w.set_u32("general.file_type", type.llama_ftype);
  w.set_u32("general.quantization_version", 2);

  QuantizeReport report;
  report.tensors.resize(in.tensors().size());
  for (size_t i = 0; i < in.tensors().size(); ++i) {
    const gguf::TensorInfo& t = in.tensors()[i];
    TensorReport& r = report.tensors[i];
    r.index = i;
    r.count = in.tensors().size();
    r.name = std::string(t.name);
    r.shape = shape_of(t);
    r.from = t.type;
    r.bytes_in = t.nbytes;
    // Tensors ember cannot decode (or integer tensors) and tensors already in their target
    // type are copied byte for byte; everything else is decoded to f32 and re-encoded.
    const bool decodable = dtype_can_quantize(t.type) && t.type != DType::Q8_1 && t.type != DType::Q8_K;
    DType to = decodable ? plan.type_for(t.name, r.shape) : t.type;
    if (decodable && r.shape.size() <= 1 && t.type != DType::F32) to = DType::F32;
    r.to = to;
    r.copied = to == t.type;
    r.bytes_out = dtype_row_bytes(to, t.ne[0]) * static_cast<uint64_t>(t.n_elements() / t.ne[0]);
    report.n_params += static_cast<uint64_t>(t.n_elements());
    report.bytes_in += r.bytes_in;
    report.bytes_out += r.bytes_out;
    const gguf::TensorInfo* src = &t;
    w.add_tensor(r.name, to, r.shape, [src, &r, pool, &on_tensor](std::span<uint8_t> out) {
      if (r.copied) {
        std::memcpy(out.data(), src->data, out.size());
      } else {
        const int64_t row_len = src->ne[0];
        const EncodeError e = encode_rows(r.to, src->n_elements() / row_len, row_len,
                                          rows_of(src->type, src->data, row_len), out, pool, true);
        r.nmse = e.nmse();
      }
      if (on_tensor) on_tensor(r);
    });
  }
  w.write(out_path);
  report.file_bytes = std::filesystem::file_size(out_path);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace ember::quantize
