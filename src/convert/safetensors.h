// Safetensors checkpoints: an 8-byte little-endian header length, a JSON header mapping each
// tensor name to {dtype, shape, data_offsets}, then the raw data. Sharded checkpoints list
// their files in model.safetensors.index.json ("weight_map": name -> file).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tensor/dtype.h"
#include "util/mmap.h"

namespace ember::convert {

struct SafeTensor {
  std::string name;
  std::string file;             // which shard holds it
  std::string dtype;            // "F32", "F16", "BF16", ...
  std::vector<int64_t> shape;   // PyTorch order: outermost first
  const uint8_t* data = nullptr;
  uint64_t nbytes = 0;
  int64_t n_elements() const;
  // Element i (row-major) as f32; F32, F16 and BF16 only.
  void read_row(int64_t row, int64_t row_len, float* out) const;
};

// All tensors of a model folder, every shard memory-mapped for the lifetime of this object.
class SafetensorsModel {
 public:
  // Opens model.safetensors, or the shards model.safetensors.index.json names, or else every
  // *.safetensors in `dir`. Validates every header (offsets within the file, sizes matching
  // dtype x shape, no overlaps) and throws Error(Format) naming file and tensor.
  static SafetensorsModel open(const std::string& dir);
  // Parses one file's header into `out` (used by open, exposed for tests).
  static void read_header(const MappedFile& file, std::map<std::string, SafeTensor>& out);

  const SafeTensor* find(const std::string& name) const;
  const std::map<std::string, SafeTensor>& tensors() const { return tensors_; }

 private:
  std::vector<std::shared_ptr<MappedFile>> files_;
  std::map<std::string, SafeTensor> tensors_;
};

}  // namespace ember::convert
