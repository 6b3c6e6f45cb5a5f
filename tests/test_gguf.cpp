// The GGUF reader against hand-assembled files: a valid one (fields checked one by one) and a
// table of malformed ones, each of which must fail with its own specific one-line error.
#include <doctest/doctest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "util/error.h"

namespace {

using ember::DType;
using ember::gguf::File;
using ember::gguf::ValueType;

constexpr uint64_t kTwo62 = uint64_t{1} << 62;
constexpr uint64_t kTwo40 = uint64_t{1} << 40;

// Little-endian byte assembly, independent of ember's writer on purpose.
struct Bytes {
  std::vector<uint8_t> b;
  template <class T>
  Bytes& put(T v) {
    uint8_t raw[sizeof(T)];
    std::memcpy(raw, &v, sizeof(T));
    b.insert(b.end(), raw, raw + sizeof(T));
    return *this;
  }
  Bytes& u32(uint32_t v) { return put(v); }
  Bytes& u64(uint64_t v) { return put(v); }
  Bytes& str(std::string_view s) {
    u64(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Bytes& zeros(size_t n) {
    b.insert(b.end(), n, 0);
    return *this;
  }
  size_t size() const { return b.size(); }
};

struct TensorSpec {
  std::string name;
  std::vector<uint64_t> ne;
  uint32_t type = 0;  // F32
  uint64_t offset = 0;
  uint32_t n_dims_override = 0;  // 0: ne.size()
};

// A file description; build() lays it out exactly like ggml does and records the offset at
// which each field starts (for the truncation test).
struct Spec {
  uint32_t magic = 0x46554747;
  uint32_t version = 3;
  int64_t n_tensors_override = -1;
  int64_t n_kv_override = -1;
  std::vector<std::function<void(Bytes&)>> kvs;
  std::vector<TensorSpec> tensors;
  uint64_t pad_to = 32;     // padding used before the data section
  uint64_t data_bytes = 0;  // bytes after the padding

  struct Mark {
    size_t offset;
    std::string field;
  };
  mutable std::vector<Mark> marks;

  std::vector<uint8_t> build() const {
    Bytes o;
    marks.clear();
    auto mark = [&](std::string field) { marks.push_back({o.size(), std::move(field)}); };
    mark("magic");
    o.u32(magic);
    mark("version");
    o.u32(version);
    mark("n_tensors");
    o.u64(n_tensors_override >= 0 ? uint64_t(n_tensors_override) : tensors.size());
    mark("n_kv");
    o.u64(n_kv_override >= 0 ? uint64_t(n_kv_override) : kvs.size());
    for (size_t i = 0; i < kvs.size(); ++i) {
      mark("key #" + std::to_string(i));
      kvs[i](o);
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
      const TensorSpec& t = tensors[i];
      mark("tensor #" + std::to_string(i) + " name");
      o.str(t.name);
      mark("tensor '" + t.name + "' n_dims");
      o.u32(t.n_dims_override ? t.n_dims_override : uint32_t(t.ne.size()));
      for (size_t d = 0; d < t.ne.size(); ++d) {
        mark("tensor '" + t.name + "' ne[" + std::to_string(d) + "]");
        o.u64(t.ne[d]);
      }
      mark("tensor '" + t.name + "' type");
      o.u32(t.type);
      mark("tensor '" + t.name + "' offset");
      o.u64(t.offset);
    }
    mark("data");
    o.zeros((pad_to - o.size() % pad_to) % pad_to);
    o.zeros(data_bytes);
    return o.b;
  }
};

// Key/value encoders.
auto kv_string(std::string key, std::string value) {
  return [=](Bytes& o) { o.str(key).u32(8).str(value); };
}
auto kv_u32(std::string key, uint32_t v) {
  return [=](Bytes& o) { o.str(key).u32(4).u32(v); };
}
auto kv_typed(std::string key, uint32_t type, uint64_t raw, size_t nbytes) {
  return [=](Bytes& o) {
    o.str(key).u32(type);
    for (size_t i = 0; i < nbytes; ++i) o.b.push_back(uint8_t(raw >> (8 * i)));
  };
}

// A valid file: six keys (two arrays), two tensors (F32 [8], Q8_0 [32, 2]). Layout: header
// 24 bytes, key/values to 251, tensor infos to 331, data section at 352, file 452 bytes; the
// offsets in the expected messages below follow from it.
Spec valid_spec() {
  Spec s;
  s.kvs.push_back(kv_string("general.architecture", "llama"));
  s.kvs.push_back(kv_u32("general.alignment", 32));
  s.kvs.push_back([](Bytes& o) { o.str("tokenizer.ggml.tokens").u32(9).u32(8).u64(3).str("a").str("").str("\xC3\xA9t\xC3\xA9"); });
  s.kvs.push_back([](Bytes& o) { o.str("scores").u32(9).u32(6).u64(2).put(1.5f).put(-2.0f); });
  s.kvs.push_back(kv_typed("flag", 7, 1, 1));
  s.kvs.push_back(kv_typed("neg", 5, uint32_t(-7), 4));
  s.tensors.push_back({"a", {8}, 0, 0});
  s.tensors.push_back({"blk.0.b", {32, 2}, 8, 32});  // Q8_0: 2 rows x 34 bytes
  s.data_bytes = 32 + 68;
  return s;
}

std::string parse_error(const std::vector<uint8_t>& bytes) {
  try {
    File::parse(bytes, "bad.gguf");
  } catch (const ember::Error& e) {
    CHECK(e.kind() == ember::ErrorKind::Format);
    return e.what();
  }
  return "(parsed without error)";
}

}  // namespace

TEST_CASE("a valid hand-made file parses field by field") {
  Spec s = valid_spec();
  auto bytes = s.build();
  File f = File::parse(bytes, "ok.gguf");
  CHECK(f.version() == 3);
  CHECK(f.alignment() == 32);
  CHECK(f.metadata().size() == 6);
  CHECK(f.get_string("general.architecture") == "llama");
  CHECK(f.get_u32("general.alignment") == 32);
  const auto& tokens = f.get_array("tokenizer.ggml.tokens");
  REQUIRE(tokens.size() == 3);
  CHECK(tokens.element_type() == ValueType::STRING);
  CHECK(tokens.string_at(0) == "a");
  CHECK(tokens.string_at(1) == "");
  CHECK(tokens.string_at(2) == "\xC3\xA9t\xC3\xA9");
  const auto& scores = f.get_array("scores");
  CHECK(scores.float_at(0) == 1.5);
  CHECK(scores.float_at(1) == -2.0);
  CHECK(f.get_bool("flag") == true);
  CHECK(f.get_i64("neg") == -7);
  CHECK(f.find_u32("absent") == std::nullopt);
  CHECK(f.find_array("absent") == nullptr);

  REQUIRE(f.tensors().size() == 2);
  const auto* b = f.find_tensor("blk.0.b");
  REQUIRE(b != nullptr);
  CHECK(b->type == DType::Q8_0);
  CHECK(b->n_dims == 2);
  CHECK(b->ne[0] == 32);
  CHECK(b->ne[1] == 2);
  CHECK(b->n_elements() == 64);
  CHECK(b->nbytes == 68);
  CHECK(b->offset == 32);
  CHECK(f.data_offset() == 352);
  CHECK(bytes.size() == 452);
  CHECK(f.data_offset() + 32 + 68 == bytes.size());
  CHECK(b->data == bytes.data() + f.data_offset() + 32);
  CHECK(f.find_tensor("a")->nbytes == 32);
  CHECK(f.find_tensor("nope") == nullptr);
}

TEST_CASE("version 2 files parse like version 3") {
  Spec s = valid_spec();
  s.version = 2;
  auto bytes = s.build();
  CHECK(File::parse(bytes, "v2.gguf").version() == 2);
}

TEST_CASE("typed accessors name the key and the types") {
  auto bytes = valid_spec().build();
  File f = File::parse(bytes, "ok.gguf");
  CHECK_THROWS_WITH_AS(f.get_u32("missing.key"), "ok.gguf: key 'missing.key': missing", ember::Error);
  CHECK_THROWS_WITH_AS(f.get_u32("general.architecture"),
                       "ok.gguf: key 'general.architecture': expected an integer, found string", ember::Error);
  CHECK_THROWS_WITH_AS(f.get_string("general.alignment"),
                       "ok.gguf: key 'general.alignment': expected string, found u32", ember::Error);
  CHECK_THROWS_WITH_AS(f.get_u64("neg"), "ok.gguf: key 'neg': value -7 is negative", ember::Error);
  CHECK_THROWS_WITH_AS(f.get_bool("neg"), "ok.gguf: key 'neg': expected bool, found i32", ember::Error);
  CHECK_THROWS_WITH_AS(f.get_array("flag"), "ok.gguf: key 'flag': expected array, found bool", ember::Error);
  CHECK(f.get_f32("neg") == -7.0f);
  CHECK_THROWS_WITH_AS(f.get_array("scores").int_at(0), "array 'scores': elements are f32, not integers",
                       ember::Error);
}

TEST_CASE("a truncated file fails at every byte, naming the field cut at each boundary") {
  Spec s = valid_spec();
  const auto full = s.build();
  // Below this many bytes, the header's counts cannot fit and the count check fires first.
  const size_t count_bound = 24 + 32 * s.tensors.size() + 13 * s.kvs.size();
  size_t boundaries = 0;
  for (const auto& m : s.marks) {
    if (m.offset >= full.size()) continue;
    std::vector<uint8_t> cut(full.begin(), full.begin() + m.offset);
    std::string err = parse_error(cut);
    CAPTURE(m.offset);
    CAPTURE(m.field);
    if (m.field == "data") {
      CHECK(err.find("runs past end of file") != std::string::npos);
    } else if (m.offset >= 24 && m.offset < count_bound) {
      CHECK(err.find("cannot fit in the") != std::string::npos);
    } else {
      CHECK(err.rfind("bad.gguf: " + m.field + ": truncated: needs", 0) == 0);
    }
    ++boundaries;
  }
  CHECK(boundaries == s.marks.size());
  for (size_t n = 0; n < full.size(); ++n) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + n);
    CAPTURE(n);
    CHECK(parse_error(cut).rfind("bad.gguf: ", 0) == 0);
  }
}

namespace {

struct BadCase {
  const char* what;
  std::function<void(Spec&)> mutate;
  const char* error;  // the exact message after "bad.gguf: "
};

// Overrides the valid spec's key #i.
void set_kv(Spec& s, size_t i, std::function<void(Bytes&)> kv) { s.kvs.at(i) = std::move(kv); }

const std::vector<BadCase>& bad_cases() {
  static const std::vector<BadCase> cases = {
      {"bad magic", [](Spec& s) { s.magic = 0x4c4d4747; },
       "magic: not a GGUF file: expected \"GGUF\" (47 47 55 46), found 47 47 4d 4c"},
      {"version 1", [](Spec& s) { s.version = 1; },
       "version: 1 is not supported (GGUF v1 used 32-bit counts and is obsolete; ember reads 2 and 3)"},
      {"version 4", [](Spec& s) { s.version = 4; }, "version: 4 is not supported (ember reads versions 2 and 3)"},
      {"version 0", [](Spec& s) { s.version = 0; }, "version: 0 is not supported (ember reads versions 2 and 3)"},
      {"big-endian", [](Spec& s) { s.version = 0x03000000; },
       "version: 0x03000000 is a big-endian GGUF, which ember does not read"},
      {"n_tensors 2^62", [](Spec& s) { s.n_tensors_override = int64_t(kTwo62); },
       "n_tensors: 4611686018427387904 tensor infos cannot fit in the 428 bytes after the header (each needs >= 32)"},
      {"n_kv 2^40", [](Spec& s) { s.n_kv_override = int64_t(kTwo40); },
       "n_kv: 1099511627776 key/values and 2 tensor infos cannot fit in the 428 bytes after the header"},
      {"key length past EOF", [](Spec& s) { set_kv(s, 0, [](Bytes& o) { o.u64(1000000); }); },
       "key #0: string length 1000000 runs past end of file (388 bytes left at offset 32)"},
      {"string value length past EOF",
       [](Spec& s) { set_kv(s, 0, [](Bytes& o) { o.str("general.name").u32(8).u64(uint64_t(1) << 50); }); },
       "key 'general.name' value: string length 1125899906842624 runs past end of file (364 bytes left at offset 56)"},
      {"unknown value type", [](Spec& s) { set_kv(s, 4, kv_typed("flag", 13, 0, 1)); },
       "key 'flag': unknown value type 13 (valid: 0..12)"},
      {"unknown array element type",
       [](Spec& s) { set_kv(s, 3, [](Bytes& o) { o.str("scores").u32(9).u32(99).u64(0); }); },
       "key 'scores': unknown array element type 99 (valid: 0..12)"},
      {"array of arrays", [](Spec& s) { set_kv(s, 3, [](Bytes& o) { o.str("scores").u32(9).u32(9).u64(0); }); },
       "key 'scores': arrays of arrays are not supported"},
      {"array of 2^40 u32",
       [](Spec& s) { set_kv(s, 3, [](Bytes& o) { o.str("scores").u32(9).u32(4).u64(kTwo40); }); },
       "key 'scores': array of 1099511627776 u32 elements (4398046511104 bytes) runs past end of file (245 bytes "
       "left at offset 207)"},
      {"array of 2^62 u64 (byte count overflows)",
       [](Spec& s) { set_kv(s, 3, [](Bytes& o) { o.str("scores").u32(9).u32(10).u64(kTwo62); }); },
       "key 'scores': array of 4611686018427387904 u64 elements (over 2^64 bytes) runs past end of file (245 "
       "bytes left at offset 207)"},
      {"array of 2^40 strings",
       [](Spec& s) { set_kv(s, 2, [](Bytes& o) { o.str("tokenizer.ggml.tokens").u32(9).u32(8).u64(kTwo40); }); },
       "key 'tokenizer.ggml.tokens': array of 1099511627776 strings cannot fit in the 273 bytes left at offset 147 "
       "(each needs >= 8)"},
      {"string element past EOF",
       [](Spec& s) {
         set_kv(s, 2, [](Bytes& o) { o.str("tokenizer.ggml.tokens").u32(9).u32(8).u64(2).str("x").u64(999); });
       },
       "key 'tokenizer.ggml.tokens' element 1: string length 999 runs past end of file (256 bytes left at offset 164)"},
      {"duplicate key", [](Spec& s) { set_kv(s, 5, kv_typed("flag", 7, 0, 1)); },
       "key 'flag': duplicate key (first at key #4, again at key #5)"},
      {"bool value 2", [](Spec& s) { set_kv(s, 4, kv_typed("flag", 7, 2, 1)); }, "key 'flag': bool value 2 (must be 0 or 1)"},
      {"alignment 0", [](Spec& s) { set_kv(s, 1, kv_u32("general.alignment", 0)); },
       "key 'general.alignment': alignment 0 is not a power of two"},
      {"alignment 3", [](Spec& s) { set_kv(s, 1, kv_u32("general.alignment", 3)); },
       "key 'general.alignment': alignment 3 is not a power of two"},
      {"alignment 2^31", [](Spec& s) { set_kv(s, 1, kv_u32("general.alignment", 1u << 31)); },
       "key 'general.alignment': alignment 2147483648 exceeds the limit 1048576"},
      {"alignment as a string", [](Spec& s) { set_kv(s, 1, kv_string("general.alignment", "32")); },
       "key 'general.alignment': must be an integer (u32), found string"},
      {"tensor name of 64 bytes", [](Spec& s) { s.tensors[0].name = std::string(64, 'n'); },
       "tensor #0: name 'nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn' is 64 bytes long (limit 63)"},
      {"duplicate tensor name", [](Spec& s) { s.tensors[1].name = "a"; },
       "tensor 'a': duplicate tensor name (first at tensor #0, again at tensor #1)"},
      {"n_dims 5", [](Spec& s) { s.tensors[0].n_dims_override = 5; }, "tensor 'a': n_dims 5 out of range (1..4)"},
      {"n_dims 0", [](Spec& s) { s.tensors[0].n_dims_override = 0xffffffff; },
       "tensor 'a': n_dims 4294967295 out of range (1..4)"},
      {"dimension 0", [](Spec& s) { s.tensors[1].ne = {32, 0}; }, "tensor 'blk.0.b': dimension ne[1] is 0 in shape [32, 0]"},
      {"dimension above 2^63-1", [](Spec& s) { s.tensors[0].ne = {uint64_t(1) << 63}; },
       "tensor 'a': dimension ne[0] = 9223372036854775808 exceeds 2^63-1"},
      {"dimension product overflow", [](Spec& s) { s.tensors[1].ne = {uint64_t(1) << 32, uint64_t(1) << 32}; },
       "tensor 'blk.0.b': element count of shape [4294967296, 4294967296] overflows 64 bits"},
      {"byte size overflow", [](Spec& s) { s.tensors[0] = {"a", {uint64_t(1) << 61, 2}, 28, 0}; },
       "tensor 'a': byte size of F64 [2305843009213693952, 2] overflows 64 bits"},
      {"unknown tensor type 99", [](Spec& s) { s.tensors[0].type = 99; }, "tensor 'a': unknown tensor type id 99"},
      {"retired tensor type 4 (Q4_2)", [](Spec& s) { s.tensors[0].type = 4; }, "tensor 'a': unknown tensor type id 4"},
      {"ne0 not a multiple of the block", [](Spec& s) { s.tensors[1].ne = {33, 2}; },
       "tensor 'blk.0.b': ne[0] = 33 is not a multiple of Q8_0's block size 32"},
      {"misaligned offset", [](Spec& s) { s.tensors[1].offset = 48; },
       "tensor 'blk.0.b': data offset 48 is not a multiple of the alignment 32"},
      {"data past end of file", [](Spec& s) { s.tensors[1].offset = 64; },
       "tensor 'blk.0.b': data [offset 64, 68 bytes] runs past end of file (data section at 352, file 452 bytes)"},
      {"offset near 2^64", [](Spec& s) { s.tensors[1].offset = ~uint64_t(31); },
       "tensor 'blk.0.b': data [offset 18446744073709551584, 68 bytes] runs past end of file (data section at "
       "352, file 452 bytes)"},
      {"overlapping tensors", [](Spec& s) { s.tensors[1].offset = 0; s.tensors[0].offset = 64; },
       "tensor 'a': data [offset 64, 32 bytes] overlaps tensor 'blk.0.b' [offset 0, 68 bytes]"},
      {"hostile name escaped", [](Spec& s) { s.tensors[1].name = "x\ny\xff"; s.tensors[1].ne = {31, 2}; },
       "tensor 'x\\ny\\xff': ne[0] = 31 is not a multiple of Q8_0's block size 32"},
  };
  return cases;
}

}  // namespace

TEST_CASE("each malformed file fails with its own specific error") {
  std::vector<std::string> seen;
  for (const BadCase& c : bad_cases()) {
    CAPTURE(c.what);
    Spec s = valid_spec();
    c.mutate(s);
    const std::string err = parse_error(s.build());
    CHECK(err == std::string("bad.gguf: ") + c.error);
    CHECK(err.find('\n') == std::string::npos);
    for (const auto& other : seen) CHECK(other != err);
    seen.push_back(err);
  }
}

TEST_CASE("the empty file and the bare header") {
  CHECK(parse_error({}) == "bad.gguf: magic: truncated: needs 4 bytes at offset 0, file has 0 bytes");
  Spec s;  // no keys, no tensors: a valid (if useless) file of 24 bytes
  auto bytes = s.build();
  File f = File::parse(bytes, "empty.gguf");
  CHECK(f.metadata().empty());
  CHECK(f.tensors().empty());
  CHECK(f.data_offset() == 32);  // past the end is fine when nothing lives there
}

TEST_CASE("opening a missing file is an I/O error naming it") {
  try {
    File::open("/nonexistent/x.gguf");
    FAIL("opened a missing file");
  } catch (const ember::Error& e) {
    CHECK(e.kind() == ember::ErrorKind::Io);
    CHECK(std::string(e.what()).rfind("/nonexistent/x.gguf: cannot open", 0) == 0);
  }
}
