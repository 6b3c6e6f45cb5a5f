// GGUF parsing: every count, length, type, dimension, alignment and offset is checked against
// the bytes that are actually there before it is used, so a hostile file yields one error line
// `SOURCE: FIELD: WHAT (VALUES)` and never a crash, a hang or an allocation larger than the
// file. Memory use is O(file size): every vector is reserved only after its count has been
// bounded by the bytes left.
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "gguf/gguf.h"
#include "gguf/gguf_format.h"
#include "gguf/gguf_printable.h"
#include "util/error.h"

namespace ember::gguf {

using namespace format;

class Parser {
 public:
  explicit Parser(File& file) : f_(file), p_(file.bytes_.data()), size_(file.bytes_.size()) {}

  void run() {
    read_header();
    read_metadata();
    read_alignment();
    read_tensor_infos();
    f_.data_offset_ = align_up(pos_, f_.alignment_);
    place_tensor_data();
  }

 private:
  File& f_;
  const uint8_t* p_;
  uint64_t size_;
  uint64_t pos_ = 0;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;

  uint64_t left() const { return size_ - pos_; }

  template <class... Args>
  [[noreturn]] void bad(std::string_view field, fmt::format_string<Args...> what, Args&&... args) const {
    fail(ErrorKind::Format, "{}: {}: {}", f_.source_, field, fmt::format(what, std::forward<Args>(args)...));
  }

  // `field` is a callable producing the field's name; it only runs when something is wrong,
  // so the hot loops over vocabulary arrays format nothing.
  template <class Field>
  void need(uint64_t n, const Field& field) const {
    if (n > left()) bad(field(), "truncated: needs {} bytes at offset {}, file has {} bytes", n, pos_, size_);
  }

  template <class T, class Field>
  T read(const Field& field) {
    need(sizeof(T), field);
    T v;
    std::memcpy(&v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  template <class Field>
  std::string_view read_string(const Field& field) {
    uint64_t len = read<uint64_t>(field);
    if (len > left())
      bad(field(), "string length {} runs past end of file ({} bytes left at offset {})", len, left(), pos_);
    std::string_view s(reinterpret_cast<const char*>(p_ + pos_), len);
    pos_ += len;
    return s;
  }

  void read_header() {
    auto magic_field = [] { return std::string("magic"); };
    need(4, magic_field);
    uint32_t magic;
    std::memcpy(&magic, p_, 4);
    if (magic != kMagic)
      bad("magic", "not a GGUF file: expected \"GGUF\" (47 47 55 46), found {:02x} {:02x} {:02x} {:02x}",
          p_[0], p_[1], p_[2], p_[3]);
    pos_ = 4;
    uint32_t version = read<uint32_t>([] { return std::string("version"); });
    if (version == 1)
      bad("version", "1 is not supported (GGUF v1 used 32-bit counts and is obsolete; ember reads 2 and 3)");
    if (version > kVersion && (version & 0xffff) == 0 && __builtin_bswap32(version) <= kVersion)
      bad("version", "{:#010x} is a big-endian GGUF, which ember does not read", version);
    if (version < kMinVersion || version > kVersion)
      bad("version", "{} is not supported (ember reads versions {} and {})", version, kMinVersion, kVersion);
    f_.version_ = version;
    n_tensors_ = read<uint64_t>([] { return std::string("n_tensors"); });
    n_kv_ = read<uint64_t>([] { return std::string("n_kv"); });
    // Bound the counts by the bytes left before reserving anything for them.
    if (n_tensors_ > left() / kMinTensorInfoBytes)
      bad("n_tensors", "{} tensor infos cannot fit in the {} bytes after the header (each needs >= {})",
          n_tensors_, left(), kMinTensorInfoBytes);
    if (n_kv_ > (left() - n_tensors_ * kMinTensorInfoBytes) / kMinKeyValueBytes)
      bad("n_kv", "{} key/values and {} tensor infos cannot fit in the {} bytes after the header",
          n_kv_, n_tensors_, left());
  }

  void read_metadata() {
    f_.kvs_.reserve(n_kv_);
    f_.kv_index_.reserve(n_kv_);
    for (uint64_t i = 0; i < n_kv_; ++i) {
      KeyValue kv;
      kv.key = read_string([i] { return fmt::format("key #{}", i); });
      auto field = [&kv] { return fmt::format("key '{}'", printable(kv.key)); };
      auto [it, inserted] = f_.kv_index_.emplace(kv.key, f_.kvs_.size());
      if (!inserted) bad(field(), "duplicate key (first at key #{}, again at key #{})", it->second, i);
      uint32_t type = read<uint32_t>([&] { return field() + " type"; });
      if (type >= kValueTypeCount) bad(field(), "unknown value type {} (valid: 0..{})", type, kValueTypeCount - 1);
      kv.type = static_cast<ValueType>(type);
      if (kv.type == ValueType::ARRAY)
        read_array(kv, field);
      else
        read_scalar(kv, field);
      f_.kvs_.push_back(kv);
    }
  }

  template <class Field>
  void read_scalar(KeyValue& kv, const Field& field) {
    auto value_field = [&] { return field() + " value"; };
    switch (kv.type) {
      case ValueType::U8: kv.u64 = read<uint8_t>(value_field); kv.i64 = static_cast<int64_t>(kv.u64); break;
      case ValueType::U16: kv.u64 = read<uint16_t>(value_field); kv.i64 = static_cast<int64_t>(kv.u64); break;
      case ValueType::U32: kv.u64 = read<uint32_t>(value_field); kv.i64 = static_cast<int64_t>(kv.u64); break;
      case ValueType::U64: kv.u64 = read<uint64_t>(value_field); kv.i64 = static_cast<int64_t>(kv.u64); break;
      case ValueType::I8: kv.i64 = read<int8_t>(value_field); kv.u64 = static_cast<uint64_t>(kv.i64); break;
      case ValueType::I16: kv.i64 = read<int16_t>(value_field); kv.u64 = static_cast<uint64_t>(kv.i64); break;
      case ValueType::I32: kv.i64 = read<int32_t>(value_field); kv.u64 = static_cast<uint64_t>(kv.i64); break;
      case ValueType::I64: kv.i64 = read<int64_t>(value_field); kv.u64 = static_cast<uint64_t>(kv.i64); break;
      case ValueType::F32: kv.f64 = read<float>(value_field); break;
      case ValueType::F64: kv.f64 = read<double>(value_field); break;
      case ValueType::BOOL: {
        uint8_t b = read<uint8_t>(value_field);
        if (b > 1) bad(field(), "bool value {} (must be 0 or 1)", b);
        kv.b = b != 0;
        kv.u64 = b;
        kv.i64 = b;
        break;
      }
      case ValueType::STRING: kv.str = read_string(value_field); break;
      case ValueType::ARRAY: break;  // handled by read_array
    }
  }

  template <class Field>
  void read_array(KeyValue& kv, const Field& field) {
    ArrayView& a = kv.array;
    a.key_ = kv.key;
    a.base_ = p_;
    uint32_t type = read<uint32_t>([&] { return field() + " array element type"; });
    if (type >= kValueTypeCount)
      bad(field(), "unknown array element type {} (valid: 0..{})", type, kValueTypeCount - 1);
    a.type_ = static_cast<ValueType>(type);
    if (a.type_ == ValueType::ARRAY) bad(field(), "arrays of arrays are not supported");
    a.count_ = read<uint64_t>([&] { return field() + " array length"; });
    a.data_ = p_ + pos_;
    if (a.type_ == ValueType::STRING) {
      read_string_array(a, field);
      return;
    }
    const uint64_t elem = scalar_size(a.type_);
    if (a.count_ > left() / elem)
      bad(field(), "array of {} {} elements ({} bytes) runs past end of file ({} bytes left at offset {})",
          a.count_, value_type_name(a.type_), format_bytes_product(a.count_, elem), left(), pos_);
    if (a.type_ == ValueType::BOOL) {
      for (uint64_t j = 0; j < a.count_; ++j)
        if (p_[pos_ + j] > 1) bad(field(), "bool element {} is {} (must be 0 or 1)", j, p_[pos_ + j]);
    }
    pos_ += a.count_ * elem;
  }

  static std::string format_bytes_product(uint64_t count, uint64_t elem) {
    uint64_t bytes;
    if (__builtin_mul_overflow(count, elem, &bytes)) return "over 2^64";
    return std::to_string(bytes);
  }

  template <class Field>
  void read_string_array(ArrayView& a, const Field& field) {
    if (a.count_ > left() / kStringHeaderBytes)
      bad(field(), "array of {} strings cannot fit in the {} bytes left at offset {} (each needs >= {})",
          a.count_, left(), pos_, kStringHeaderBytes);
    auto offsets = std::make_shared<std::vector<uint64_t>>();
    offsets->reserve(a.count_);  // bounded above: count * 8 <= bytes left
    for (uint64_t j = 0; j < a.count_; ++j) {
      offsets->push_back(pos_);
      read_string([&] { return fmt::format("{} element {}", field(), j); });
    }
    a.string_offsets_ = std::move(offsets);
  }

  void read_alignment() {
    const KeyValue* kv = f_.find(kAlignmentKey);
    if (kv == nullptr) return;
    std::string field = fmt::format("key '{}'", kAlignmentKey);
    if (!is_integer(kv->type))
      bad(field, "must be an integer (u32), found {}", value_type_name(kv->type));
    bool negative = kv->type == ValueType::I8 || kv->type == ValueType::I16 || kv->type == ValueType::I32 ||
                    kv->type == ValueType::I64;
    if (negative && kv->i64 < 0) bad(field, "alignment {} is negative", kv->i64);
    uint64_t a = kv->u64;
    if (a == 0 || !std::has_single_bit(a)) bad(field, "alignment {} is not a power of two", a);
    if (a > kMaxAlignment) bad(field, "alignment {} exceeds the limit {}", a, kMaxAlignment);
    f_.alignment_ = a;
  }

  void read_tensor_infos() {
    f_.tensors_.reserve(n_tensors_);
    f_.tensor_index_.reserve(n_tensors_);
    for (uint64_t i = 0; i < n_tensors_; ++i) {
      TensorInfo t;
      t.name = read_string([i] { return fmt::format("tensor #{} name", i); });
      if (t.name.size() > kMaxTensorName)
        bad(fmt::format("tensor #{}", i), "name '{}' is {} bytes long (limit {})", printable(t.name),
            t.name.size(), kMaxTensorName);
      auto field = [&t] { return fmt::format("tensor '{}'", printable(t.name)); };
      auto [it, inserted] = f_.tensor_index_.emplace(t.name, f_.tensors_.size());
      if (!inserted) bad(field(), "duplicate tensor name (first at tensor #{}, again at tensor #{})", it->second, i);
      uint32_t n_dims = read<uint32_t>([&] { return field() + " n_dims"; });
      if (n_dims < 1 || n_dims > static_cast<uint32_t>(kMaxDims))
        bad(field(), "n_dims {} out of range (1..{})", n_dims, kMaxDims);
      t.n_dims = static_cast<int>(n_dims);
      uint64_t dims[kMaxDims] = {1, 1, 1, 1};
      for (uint32_t d = 0; d < n_dims; ++d) dims[d] = read<uint64_t>([&] { return fmt::format("{} ne[{}]", field(), d); });
      uint32_t type = read<uint32_t>([&] { return field() + " type"; });
      t.offset = read<uint64_t>([&] { return field() + " offset"; });
      check_shape(t, dims, type, field);
      f_.tensors_.push_back(t);
    }
  }

  template <class Field>
  void check_shape(TensorInfo& t, const uint64_t (&dims)[kMaxDims], uint32_t type, const Field& field) const {
    auto shape = [&] { return fmt::format("[{}]", fmt::join(dims, dims + t.n_dims, ", ")); };
    uint64_t elements = 1;
    for (int d = 0; d < t.n_dims; ++d) {
      if (dims[d] == 0) bad(field(), "dimension ne[{}] is 0 in shape {}", d, shape());
      if (dims[d] > static_cast<uint64_t>(INT64_MAX))
        bad(field(), "dimension ne[{}] = {} exceeds 2^63-1", d, dims[d]);
      if (__builtin_mul_overflow(elements, dims[d], &elements) || elements > static_cast<uint64_t>(INT64_MAX))
        bad(field(), "element count of shape {} overflows 64 bits", shape());
      t.ne[d] = static_cast<int64_t>(dims[d]);
    }
    if (!dtype_id_known(type)) bad(field(), "unknown tensor type id {}", type);
    t.type = static_cast<DType>(type);
    const DTypeSize ts = dtype_size(t.type);
    if (dims[0] % static_cast<uint64_t>(ts.block_size) != 0)
      bad(field(), "ne[0] = {} is not a multiple of {}'s block size {}", dims[0], ts.name, ts.block_size);
    uint64_t bytes = dims[0] / static_cast<uint64_t>(ts.block_size);
    bool overflow = __builtin_mul_overflow(bytes, static_cast<uint64_t>(ts.block_bytes), &bytes);
    for (int d = 1; d < t.n_dims; ++d) overflow = overflow || __builtin_mul_overflow(bytes, dims[d], &bytes);
    if (overflow) bad(field(), "byte size of {} {} overflows 64 bits", ts.name, shape());
    t.nbytes = bytes;
  }

  // Every tensor's data must be aligned, lie inside the file and not overlap another's.
  void place_tensor_data() {
    const uint64_t data_start = f_.data_offset_;
    const uint64_t avail = data_start <= size_ ? size_ - data_start : 0;
    for (TensorInfo& t : f_.tensors_) {
      auto field = [&t] { return fmt::format("tensor '{}'", printable(t.name)); };
      if (t.offset % f_.alignment_ != 0)
        bad(field(), "data offset {} is not a multiple of the alignment {}", t.offset, f_.alignment_);
      if (t.offset > avail || t.nbytes > avail - t.offset)
        bad(field(), "data [offset {}, {} bytes] runs past end of file (data section at {}, file {} bytes)",
            t.offset, t.nbytes, data_start, size_);
      t.data = p_ + data_start + t.offset;
    }
    std::vector<uint32_t> order(f_.tensors_.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    const auto& ts = f_.tensors_;
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return ts[a].offset < ts[b].offset; });
    for (size_t k = 1; k < order.size(); ++k) {
      const TensorInfo& prev = ts[order[k - 1]];
      const TensorInfo& cur = ts[order[k]];
      if (prev.offset + prev.nbytes > cur.offset)  // no overflow: both end inside the file
        bad(fmt::format("tensor '{}'", printable(cur.name)),
            "data [offset {}, {} bytes] overlaps tensor '{}' [offset {}, {} bytes]", cur.offset, cur.nbytes,
            printable(prev.name), prev.offset, prev.nbytes);
    }
  }
};

File File::parse(std::span<const uint8_t> bytes, std::string source) {
  File f;
  f.bytes_ = bytes;
  f.source_ = std::move(source);
  Parser(f).run();
  return f;
}

File File::open(const std::string& path) {
  auto mapping = std::make_shared<MappedFile>(path);
  File f = parse(mapping->bytes(), path);
  f.mapping_ = std::move(mapping);
  return f;
}

}  // namespace ember::gguf
