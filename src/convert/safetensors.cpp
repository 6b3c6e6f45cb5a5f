#include "convert/safetensors.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>

#include "tensor/fp16.h"
#include "util/error.h"
#include "util/json.h"

namespace ember::convert {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kMaxHeader = 100u << 20;  // 100 MiB of JSON is far beyond any real header

int dtype_bytes(const std::string& dtype) {
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" || dtype == "F8_E5M2") return 1;
  return 0;
}

}  // namespace

int64_t SafeTensor::n_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void SafeTensor::read_row(int64_t row, int64_t row_len, float* out) const {
  const size_t first = static_cast<size_t>(row) * static_cast<size_t>(row_len);
  if (dtype == "F32") {
    std::memcpy(out, data + first * 4, static_cast<size_t>(row_len) * 4);
  } else if (dtype == "F16" || dtype == "BF16") {
    const bool bf = dtype == "BF16";
    for (int64_t i = 0; i < row_len; ++i) {
      uint16_t h;
      std::memcpy(&h, data + (first + static_cast<size_t>(i)) * 2, 2);
      out[i] = bf ? bf16_to_f32(h) : fp16_to_f32(h);
    }
  } else {
    fail(ErrorKind::Unsupported, "{}: tensor {} has dtype {}; only F32, F16 and BF16 convert", file, name, dtype);
  }
}

void SafetensorsModel::read_header(const MappedFile& file, std::map<std::string, SafeTensor>& out) {
  const auto b = file.bytes();
  const std::string& path = file.path();
  if (b.size() < 8) fail(ErrorKind::Format, "{}: too small for a safetensors file", path);
  uint64_t n = 0;
  std::memcpy(&n, b.data(), 8);
  if (n > kMaxHeader || n > b.size() - 8)
    fail(ErrorKind::Format, "{}: header length {} exceeds the file ({} bytes)", path, n, b.size());
  const json::Value header =
      json::parse(std::string_view(reinterpret_cast<const char*>(b.data() + 8), static_cast<size_t>(n)), path);
  const uint8_t* base = b.data() + 8 + n;
  const uint64_t data_size = b.size() - 8 - n;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& [name, info] : json::as_object(header, path + ": header")) {
    if (name == "__metadata__") continue;
    const std::string what = path + ": tensor " + name;
    SafeTensor t;
    t.name = name;
    t.file = path;
    t.dtype = json::as_string(json::at(info, "dtype"), what + " dtype");
    const int eb = dtype_bytes(t.dtype);
    if (eb == 0) fail(ErrorKind::Format, "{}: unknown dtype {}", what, t.dtype);
    uint64_t elements = 1;
    for (const json::Value& d : json::as_array(json::at(info, "shape"), what + " shape")) {
      const int64_t v = json::as_int(d, what + " shape");
      if (v < 0 || v > (int64_t{1} << 40)) fail(ErrorKind::Format, "{}: dimension {} out of range", what, v);
      if (v != 0 && elements > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(v))
        fail(ErrorKind::Format, "{}: shape overflows", what);
      elements *= static_cast<uint64_t>(v);
      t.shape.push_back(v);
    }
    const auto& offs = json::as_array(json::at(info, "data_offsets"), what + " data_offsets");
    if (offs.size() != 2) fail(ErrorKind::Format, "{}: data_offsets needs 2 entries", what);
    const int64_t begin = json::as_int(offs[0], what + " data_offsets"), end = json::as_int(offs[1], what + " data_offsets");
    if (begin < 0 || end < begin || static_cast<uint64_t>(end) > data_size)
      fail(ErrorKind::Format, "{}: data_offsets [{}, {}) outside the {} data bytes", what, begin, end, data_size);
    if (static_cast<uint64_t>(end - begin) != elements * static_cast<uint64_t>(eb))
      fail(ErrorKind::Format, "{}: {} data bytes for {} elements of {}", what, end - begin, elements, t.dtype);
    t.data = base + begin;
    t.nbytes = static_cast<uint64_t>(end - begin);
    if (t.nbytes) ranges.emplace_back(begin, end);
    if (!out.emplace(name, std::move(t)).second) fail(ErrorKind::Format, "{}: defined twice", what);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second) fail(ErrorKind::Format, "{}: tensor data overlaps", path);
}

SafetensorsModel SafetensorsModel::open(const std::string& dir) {
  SafetensorsModel m;
  std::vector<std::string> files;
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(index)) {
    const json::Value v = json::parse(read_text_file(index.string()), index.string());
    std::set<std::string> unique;
    for (const auto& [name, file] : json::as_object(json::at(v, "weight_map"), index.string() + ": weight_map")) {
      const std::string& f = json::as_string(file, index.string() + ": weight_map entry");
      if (f.find('/') != std::string::npos || f.starts_with("."))
        fail(ErrorKind::Format, "{}: shard name '{}' is not a plain file name", index.string(), f);
      unique.insert(f);
    }
    for (const std::string& f : unique) files.push_back((fs::path(dir) / f).string());
  } else if (fs::exists(fs::path(dir) / "model.safetensors")) {
    files.push_back((fs::path(dir) / "model.safetensors").string());
  } else {
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".safetensors") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
  }
  if (files.empty()) fail(ErrorKind::Io, "{}: no *.safetensors files", dir);
  for (const std::string& f : files) {
    auto mapped = std::make_shared<MappedFile>(f);
    read_header(*mapped, m.tensors_);
    m.files_.push_back(std::move(mapped));
  }
  return m;
}

const SafeTensor* SafetensorsModel::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

}  // namespace ember::convert
