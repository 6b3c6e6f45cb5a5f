// `ember inspect FILE [--json]`: what a GGUF file holds -- header, metadata (arrays summarised
// by element type, length and first items), the tensor table and the totals.
//
//   ember inspect model.gguf                 readable listing
//   ember inspect model.gguf --json          one JSON object for scripts
//   ember inspect vocab.gguf --items 3       show 3 items of each array
//
// The file is validated completely first (gguf::File::open); a malformed file prints one error
// line naming the field and exits with the Format exit code.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "gguf/gguf.h"
#include "gguf/gguf_describe.h"
#include "gguf/gguf_printable.h"
#include "util/json.h"

namespace ember::cli {

namespace {

struct InspectFlags {
  std::string path;
  bool json = false;
  uint64_t items = 8;
};

std::string shape_text(const gguf::TensorInfo& t, const char* sep) {
  std::string s;
  for (int d = 0; d < t.n_dims; ++d) s += fmt::format("{}{}", d ? sep : "", t.ne[d]);
  return s;
}

// "4.08 GiB (4381000000 bytes)", or just "640 bytes" when the unit adds nothing.
std::string size_text(uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} bytes", bytes);
  return fmt::format("{} ({} bytes)", gguf::human_bytes(bytes), bytes);
}

std::string count_text(uint64_t n) {
  if (n < 1000) return fmt::format("{}", n);
  return fmt::format("{} ({})", gguf::human_count(n), n);
}

void print_text(const gguf::File& f, const InspectFlags& flags) {
  const gguf::DescribeLimits limits{flags.items, 96};
  const gguf::TensorTotals totals = gguf::tensor_totals(f);
  std::string out;
  out += fmt::format("file: {}\n", gguf::printable(f.source(), 4096));
  out += fmt::format("GGUF v{}: {} key/values, {} tensors, alignment {}, data section at byte {}, file {}\n",
                     f.version(), f.metadata().size(), f.tensors().size(), f.alignment(), f.data_offset(),
                     size_text(f.file_size()));

  out += "\nmetadata:\n";
  size_t key_width = 0;
  for (const auto& kv : f.metadata()) key_width = std::max(key_width, gguf::printable(kv.key).size());
  for (const auto& kv : f.metadata())
    out += fmt::format("  {:<{}}  {}\n", gguf::printable(kv.key), key_width, gguf::describe_value(kv, limits));

  if (f.tensors().empty()) {
    out += "\ntensors: none (vocabulary/metadata-only file)\n";
    std::fputs(out.c_str(), stdout);
    return;
  }
  size_t name_width = 4, shape_width = 5;
  for (const auto& t : f.tensors()) {
    name_width = std::max(name_width, gguf::printable(t.name).size());
    shape_width = std::max(shape_width, shape_text(t, " x ").size());
  }
  out += fmt::format("\ntensors:\n  {:>5}  {:<{}}  {:<7}  {:<{}}  {:>14}  {:>12}\n", "#", "name", name_width, "type",
                     "shape", shape_width, "file offset", "bytes");
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const auto& t = f.tensors()[i];
    out += fmt::format("  {:>5}  {:<{}}  {:<7}  {:<{}}  {:>14}  {:>12}\n", i, gguf::printable(t.name), name_width,
                       dtype_name(t.type), shape_text(t, " x "), shape_width, f.data_offset() + t.offset, t.nbytes);
  }
  std::string per_type;
  for (const auto& [type, n] : totals.tensors_per_type) per_type += fmt::format("{}{} {}", per_type.empty() ? "" : ", ", type, n);
  out += fmt::format("\ntotals: {} tensors ({}), {} parameters, {} of tensor data, {:.2f} bits per weight\n",
                     totals.tensors, per_type, count_text(totals.parameters), size_text(totals.bytes),
                     totals.bits_per_weight());
  std::fputs(out.c_str(), stdout);
}

void print_json(const gguf::File& f, const InspectFlags& flags) {
  const gguf::DescribeLimits limits{flags.items, 0};
  const gguf::TensorTotals totals = gguf::tensor_totals(f);
  std::string out = "{\n";
  out += fmt::format("  \"file\": {},\n  \"version\": {},\n  \"alignment\": {},\n  \"data_offset\": {},\n"
                     "  \"file_size\": {},\n",
                     json::quote(f.source()), f.version(), f.alignment(), f.data_offset(), f.file_size());
  out += "  \"metadata\": [";
  for (size_t i = 0; i < f.metadata().size(); ++i) {
    const auto& kv = f.metadata()[i];
    out += fmt::format("{}\n    {{\"key\": {}, \"type\": \"{}\", \"value\": {}}}", i ? "," : "", json::quote(kv.key),
                       value_type_name(kv.type), gguf::describe_value_json(kv, limits));
  }
  out += f.metadata().empty() ? "],\n" : "\n  ],\n";
  out += "  \"tensors\": [";
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const auto& t = f.tensors()[i];
    out += fmt::format(
        "{}\n    {{\"name\": {}, \"type\": \"{}\", \"shape\": [{}], \"offset\": {}, \"file_offset\": {}, \"bytes\": {}}}",
        i ? "," : "", json::quote(t.name), dtype_name(t.type), shape_text(t, ", "), t.offset,
        f.data_offset() + t.offset, t.nbytes);
  }
  out += f.tensors().empty() ? "],\n" : "\n  ],\n";
  std::string per_type;
  for (const auto& [type, n] : totals.tensors_per_type)
    per_type += fmt::format("{}\"{}\": {}", per_type.empty() ? "" : ", ", type, n);
  out += fmt::format("  \"totals\": {{\"tensors\": {}, \"parameters\": {}, \"bytes\": {}, \"bits_per_weight\": {:.4f}, "
                     "\"tensors_per_type\": {{{}}}}}\n}}\n",
                     totals.tensors, totals.parameters, totals.bytes, totals.bits_per_weight(), per_type);
  std::fputs(out.c_str(), stdout);
}

}  // namespace

void add_inspect(CLI::App& app) {
  auto flags = std::make_shared<InspectFlags>();
  CLI::App* cmd = app.add_subcommand("inspect", "Show a GGUF file's header, metadata, tensor table and totals");
  cmd->add_option("file", flags->path, "GGUF file to inspect")->required();
  cmd->add_flag("--json", flags->json, "Print one JSON object instead of the listing");
  cmd->add_option("--items", flags->items, "Array elements to show per key")->capture_default_str()
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 20));
  cmd->callback([flags] {
    set_exit_code(guarded("inspect", [&] {
      const gguf::File f = gguf::File::open(flags->path);
      if (flags->json) print_json(f, *flags);
      else print_text(f, *flags);
      return 0;
    }));
  });
}

}  // namespace ember::cli
