// GGUF v3 writer. Values are encoded when set (so a key/value costs its encoded size, and
// copying a 150k-token array from a reader is one pass); tensor data is produced at write()
// time, one tensor at a time, into a single reused buffer.
#include "gguf/gguf_writer.h"

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "gguf/gguf_format.h"
#include "gguf/gguf_printable.h"
#include "util/error.h"

namespace ember::gguf {

using namespace format;

namespace {

class Encoder {
 public:
  explicit Encoder(ValueType type) { u32(static_cast<uint32_t>(type)); }
  template <class T>
  void put(T v) {
    uint8_t raw[sizeof(T)];
    std::memcpy(raw, &v, sizeof(T));
    bytes_.insert(bytes_.end(), raw, raw + sizeof(T));
  }
  void u32(uint32_t v) { put(v); }
  void u64(uint64_t v) { put(v); }
  void str(std::string_view s) {
    u64(s.size());
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  void raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  void array_header(ValueType element, uint64_t count) {
    u32(static_cast<uint32_t>(element));
    u64(count);
  }
  std::vector<uint8_t> take() { return std::move(bytes_); }

 private:
  std::vector<uint8_t> bytes_;
};

template <class T>
std::vector<uint8_t> scalar(ValueType type, T v) {
  Encoder e(type);
  e.put(v);
  return e.take();
}

template <class T>
std::vector<uint8_t> numeric_array(ValueType element, std::span<const T> v) {
  Encoder e(ValueType::ARRAY);
  e.array_header(element, v.size());
  e.raw(v.data(), v.size_bytes());
  return e.take();
}

}  // namespace

// ---- metadata ----

void Writer::set_raw(std::string_view key, std::vector<uint8_t> value) {
  for (Entry& e : entries_) {
    if (e.key == key) {
      e.value = std::move(value);
      return;
    }
  }
  entries_.push_back({std::string(key), std::move(value)});
}

void Writer::set_u8(std::string_view key, uint8_t v) { set_raw(key, scalar(ValueType::U8, v)); }
void Writer::set_i8(std::string_view key, int8_t v) { set_raw(key, scalar(ValueType::I8, v)); }
void Writer::set_u16(std::string_view key, uint16_t v) { set_raw(key, scalar(ValueType::U16, v)); }
void Writer::set_i16(std::string_view key, int16_t v) { set_raw(key, scalar(ValueType::I16, v)); }
void Writer::set_u32(std::string_view key, uint32_t v) { set_raw(key, scalar(ValueType::U32, v)); }
void Writer::set_i32(std::string_view key, int32_t v) { set_raw(key, scalar(ValueType::I32, v)); }
void Writer::set_u64(std::string_view key, uint64_t v) { set_raw(key, scalar(ValueType::U64, v)); }
void Writer::set_i64(std::string_view key, int64_t v) { set_raw(key, scalar(ValueType::I64, v)); }
void Writer::set_f32(std::string_view key, float v) { set_raw(key, scalar(ValueType::F32, v)); }
void Writer::set_f64(std::string_view key, double v) { set_raw(key, scalar(ValueType::F64, v)); }
void Writer::set_bool(std::string_view key, bool v) { set_raw(key, scalar(ValueType::BOOL, uint8_t(v ? 1 : 0))); }

void Writer::set_string(std::string_view key, std::string_view v) {
  Encoder e(ValueType::STRING);
  e.str(v);
  set_raw(key, e.take());
}

void Writer::set_array_string(std::string_view key, const std::vector<std::string>& v) {
  Encoder e(ValueType::ARRAY);
  e.array_header(ValueType::STRING, v.size());
  for (const std::string& s : v) e.str(s);
  set_raw(key, e.take());
}

void Writer::set_array_u8(std::string_view key, std::span<const uint8_t> v) {
  set_raw(key, numeric_array(ValueType::U8, v));
}
void Writer::set_array_i32(std::string_view key, std::span<const int32_t> v) {
  set_raw(key, numeric_array(ValueType::I32, v));
}
void Writer::set_array_u32(std::string_view key, std::span<const uint32_t> v) {
  set_raw(key, numeric_array(ValueType::U32, v));
}
void Writer::set_array_i64(std::string_view key, std::span<const int64_t> v) {
  set_raw(key, numeric_array(ValueType::I64, v));
}
void Writer::set_array_f32(std::string_view key, std::span<const float> v) {
  set_raw(key, numeric_array(ValueType::F32, v));
}

void Writer::set_array_bool(std::string_view key, const std::vector<bool>& v) {
  Encoder e(ValueType::ARRAY);
  e.array_header(ValueType::BOOL, v.size());
  for (bool b : v) e.put(uint8_t(b ? 1 : 0));
  set_raw(key, e.take());
}

void Writer::copy_kv(const KeyValue& kv) {
  Encoder e(kv.type);
  switch (kv.type) {
    case ValueType::U8: e.put(static_cast<uint8_t>(kv.u64)); break;
    case ValueType::I8: e.put(static_cast<int8_t>(kv.i64)); break;
    case ValueType::U16: e.put(static_cast<uint16_t>(kv.u64)); break;
    case ValueType::I16: e.put(static_cast<int16_t>(kv.i64)); break;
    case ValueType::U32: e.put(static_cast<uint32_t>(kv.u64)); break;
    case ValueType::I32: e.put(static_cast<int32_t>(kv.i64)); break;
    case ValueType::U64: e.put(kv.u64); break;
    case ValueType::I64: e.put(kv.i64); break;
    case ValueType::F32: e.put(static_cast<float>(kv.f64)); break;
    case ValueType::F64: e.put(kv.f64); break;
    case ValueType::BOOL: e.put(uint8_t(kv.b ? 1 : 0)); break;
    case ValueType::STRING: e.str(kv.str); break;
    case ValueType::ARRAY: {
      const ArrayView& a = kv.array;
      e.array_header(a.element_type(), a.size());
      if (a.element_type() == ValueType::STRING) {
        for (uint64_t i = 0; i < a.size(); ++i) e.str(a.string_at(i));
      } else {
        // Numeric elements are stored in the file exactly as they are written: copy the bytes.
        e.raw(a.data_, a.size() * scalar_size(a.element_type()));
      }
      break;
    }
  }
  set_raw(kv.key, e.take());
}

void Writer::copy_metadata(const File& file, const std::function<bool(std::string_view)>& skip) {
  for (const KeyValue& kv : file.metadata())
    if (!skip || !skip(kv.key)) copy_kv(kv);
}

bool Writer::has(std::string_view key) const {
  for (const Entry& e : entries_)
    if (e.key == key) return true;
  return false;
}

void Writer::remove(std::string_view key) {
  std::erase_if(entries_, [&](const Entry& e) { return e.key == key; });
}

uint32_t Writer::alignment() const {
  for (const Entry& e : entries_) {
    if (e.key != kAlignmentKey) continue;
    uint32_t type, value;
    if (e.value.size() != 8) fail(ErrorKind::InvalidArgument, "gguf writer: {} must be a u32", kAlignmentKey);
    std::memcpy(&type, e.value.data(), 4);
    std::memcpy(&value, e.value.data() + 4, 4);
    if (type != static_cast<uint32_t>(ValueType::U32) || !std::has_single_bit(value) || value > kMaxAlignment)
      fail(ErrorKind::InvalidArgument, "gguf writer: {} must be a u32 power of two <= {}, got {}", kAlignmentKey,
           kMaxAlignment, value);
    return value;
  }
  return kDefaultAlignment;
}

// ---- tensors ----

void Writer::add_tensor(std::string name, DType type, std::vector<int64_t> shape, Fill fill) {
  auto bad = [&](std::string what) {
    fail(ErrorKind::InvalidArgument, "gguf writer: tensor '{}': {}", printable(name), what);
  };
  if (name.size() > kMaxTensorName) bad(fmt::format("name is {} bytes long (limit {})", name.size(), kMaxTensorName));
  for (const Tensor& t : tensors_)
    if (t.name == name) bad("duplicate tensor name");
  if (shape.empty() || shape.size() > static_cast<size_t>(kMaxDims))
    bad(fmt::format("{} dimensions (must be 1..{})", shape.size(), kMaxDims));
  if (!dtype_id_known(static_cast<uint32_t>(type))) bad("unknown type");
  const DTypeSize ts = dtype_size(type);
  int64_t ne[kMaxDims] = {1, 1, 1, 1};
  uint64_t elements = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] <= 0) bad(fmt::format("dimension ne[{}] = {} (must be > 0)", d, shape[d]));
    if (__builtin_mul_overflow(elements, static_cast<uint64_t>(shape[d]), &elements) ||
        elements > static_cast<uint64_t>(INT64_MAX))
      bad("element count overflows");
    ne[d] = shape[d];
  }
  if (ne[0] % ts.block_size != 0)
    bad(fmt::format("ne[0] = {} is not a multiple of {}'s block size {}", ne[0], ts.name, ts.block_size));
  // Elements fit in int64, but bytes (up to 8 per element) could still overflow 64 bits.
  uint64_t nbytes = static_cast<uint64_t>(ne[0] / ts.block_size);
  bool overflow = __builtin_mul_overflow(nbytes, static_cast<uint64_t>(ts.block_bytes), &nbytes);
  for (int d = 1; d < kMaxDims; ++d) overflow = overflow || __builtin_mul_overflow(nbytes, uint64_t(ne[d]), &nbytes);
  if (overflow) bad("byte size overflows");
  if (!fill) bad("no fill callback");
  Tensor t{std::move(name), type, static_cast<int>(shape.size()), {ne[0], ne[1], ne[2], ne[3]}, nbytes, std::move(fill)};
  tensors_.push_back(std::move(t));
}

// ---- output ----

// Where the bytes go: a FILE* (write) or a vector (to_bytes).
class Writer::Sink {
 public:
  virtual ~Sink() = default;
  virtual void put(const void* p, size_t n) = 0;
  uint64_t written() const { return written_; }
  void zeros(uint64_t n) {
    static const uint8_t kZeros[256] = {};
    while (n > 0) {
      const size_t k = n < sizeof kZeros ? static_cast<size_t>(n) : sizeof kZeros;
      put(kZeros, k);
      n -= k;
    }
  }
  template <class T>
  void scalar(T v) { put(&v, sizeof v); }
  void str(std::string_view s) {
    scalar<uint64_t>(s.size());
    put(s.data(), s.size());
  }

 protected:
  uint64_t written_ = 0;
};

namespace {

class VectorSink final : public Writer::Sink {
 public:
  explicit VectorSink(std::vector<uint8_t>& out) : out_(out) {}
  void put(const void* p, size_t n) override {
    const auto* b = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
    written_ += n;
  }

 private:
  std::vector<uint8_t>& out_;
};

class FileSink final : public Writer::Sink {
 public:
  FileSink(std::FILE* f, const std::string& path) : f_(f), path_(path) {}
  void put(const void* p, size_t n) override {
    if (n != 0 && std::fwrite(p, 1, n, f_) != n)
      fail(ErrorKind::Io, "{}: write failed after {} bytes: {}", path_, written_, std::strerror(errno));
    written_ += n;
  }

 private:
  std::FILE* f_;
  const std::string& path_;
};

}  // namespace

void Writer::emit(Sink& sink) const {
  const uint64_t align = alignment();
  const bool explicit_alignment = has(kAlignmentKey);
  sink.scalar<uint32_t>(kMagic);
  sink.scalar<uint32_t>(kVersion);
  sink.scalar<uint64_t>(tensors_.size());
  sink.scalar<uint64_t>(entries_.size() + (explicit_alignment ? 0 : 1));
  for (const Entry& e : entries_) {
    sink.str(e.key);
    sink.put(e.value.data(), e.value.size());
  }
  if (!explicit_alignment) {
    sink.str(kAlignmentKey);
    sink.scalar<uint32_t>(static_cast<uint32_t>(ValueType::U32));
    sink.scalar<uint32_t>(static_cast<uint32_t>(align));
  }
  // Tensor data is laid out in declaration order, each tensor padded to the alignment,
  // which is the layout llama.cpp's loader requires (it checks each offset exactly).
  uint64_t offset = 0;
  uint64_t largest = 0;
  for (const Tensor& t : tensors_) {
    sink.str(t.name);
    sink.scalar<uint32_t>(static_cast<uint32_t>(t.n_dims));
    for (int d = 0; d < t.n_dims; ++d) sink.scalar<uint64_t>(static_cast<uint64_t>(t.ne[d]));
    sink.scalar<uint32_t>(static_cast<uint32_t>(t.type));
    sink.scalar<uint64_t>(offset);
    offset += align_up(t.nbytes, align);
    largest = std::max(largest, t.nbytes);
  }
  sink.zeros(align_up(sink.written(), align) - sink.written());
  std::vector<uint8_t> buffer;
  buffer.reserve(largest);
  for (const Tensor& t : tensors_) {
    buffer.assign(t.nbytes, 0);
    t.fill(std::span<uint8_t>(buffer.data(), buffer.size()));
    sink.put(buffer.data(), buffer.size());
    sink.zeros(align_up(t.nbytes, align) - t.nbytes);
  }
}

std::vector<uint8_t> Writer::to_bytes() const {
  std::vector<uint8_t> out;
  VectorSink sink(out);
  emit(sink);
  return out;
}

void Writer::write(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) fail(ErrorKind::Io, "{}: cannot create: {}", tmp, std::strerror(errno));
  try {
    FileSink sink(f, tmp);
    emit(sink);
    if (std::fflush(f) != 0) fail(ErrorKind::Io, "{}: write failed: {}", tmp, std::strerror(errno));
  } catch (...) {
    std::fclose(f);
    std::remove(tmp.c_str());
    throw;
  }
  if (std::fclose(f) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    fail(ErrorKind::Io, "{}: close failed: {}", tmp, std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    fail(ErrorKind::Io, "{}: cannot rename to {}: {}", tmp, path, std::strerror(err));
  }
}

}  // namespace ember::gguf
