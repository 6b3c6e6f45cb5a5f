#include "backend/cpu/kernel_choice_cache.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <fmt/format.h>

#include "backend/cpu/cpu_features.h"
#include "util/error.h"
#include "util/json.h"
#include "util/mmap.h"

namespace ember::cpu {

namespace {

constexpr const char* kFormat = "ember-kernel-choice";
constexpr size_t kMaxCacheBytes = 1 << 20;  // a real file is a few KiB

// A variant's figure in an entry: "avx2_gbs", "avx2_4streams_gbs", ...
std::string gbs_key(Variant v) {
  std::string key = variant_name(v);
  for (char& ch : key)
    if (ch == '-') ch = '_';
  return key + "_gbs";
}

// AVX2's and AVX-512's figures are always written (0: not measured here); the others only
// where measured (AMX where the CPU has it, AVX2's decode variants for decode).
bool always_written(Variant v) { return v == Variant::Avx2 || v == Variant::Avx512; }

json::Value regime_json(const VariantSpeeds& s) {
  json::Value v = json::Value::object();
  v["use"] = variant_name(s.faster());
  for (int i = 0; i < kVariants; ++i) {
    const auto variant = static_cast<Variant>(i);
    if (always_written(variant) || s.of(variant) > 0) v[gbs_key(variant)] = s.of(variant);
  }
  return v;
}

json::Value type_json(const TypeSpeeds& t) {
  json::Value v = json::Value::object();
  for (int r = 0; r < kRegimes; ++r) v[regime_name(static_cast<Regime>(r))] = regime_json(t.regime[r]);
  return v;
}

Variant parse_variant(const json::Value& v) {
  const std::string& s = json::as_string(v, "\"use\"");
  for (int i = 0; i < kVariants; ++i)
    if (s == variant_name(static_cast<Variant>(i))) return static_cast<Variant>(i);
  fail(ErrorKind::Format, "\"use\": expected avx2, avx2-4streams, avx2-prefetch1k, avx512 or amx, got '{}'", s);
}

// The entries of one thread count; throws Error(Format) on a malformed one.
void parse_types(const json::Value& by_type, CachedSpeeds& out) {
  for (const auto& [name, regimes] : json::as_object(by_type, "a thread count's entry")) {
    DType type = DType::F32;
    bool known = false;
    for (DType t : kChoosableTypes)
      if (name == dtype_name(t)) type = t, known = true;
    if (!known) continue;  // a type this build cannot choose for: nothing to use
    TypeSpeeds speeds;
    speeds.type = type;
    std::array<Variant, kRegimes> use{};
    for (int r = 0; r < kRegimes; ++r) {
      const json::Value& e = json::at(regimes, regime_name(static_cast<Regime>(r)));
      use[r] = parse_variant(json::at(e, "use"));
      for (int i = 0; i < kVariants; ++i) {
        const auto variant = static_cast<Variant>(i);
        const std::string key = gbs_key(variant);
        const json::Value* gbs = always_written(variant) ? &json::at(e, key) : json::find(e, key);
        if (gbs) speeds.regime[r].gbs[i] = json::as_double(*gbs, key.c_str());
      }
    }
    out.types.push_back(speeds);
    out.use.push_back(use);
  }
}

// "" when the document is for `key`'s CPU, version and ABI, else why not.
std::string foreign_reason(const json::Value& doc, const KernelCacheKey& key) {
  const json::Value* format = json::find(doc, "format");
  if (!format || !format->is_string() || format->get<std::string>() != kFormat) return "not an ember kernel-choice file";
  const std::string cpu = json::as_string(json::at(doc, "cpu"), "cpu");
  const std::string ember = json::as_string(json::at(doc, "ember"), "ember");
  const int64_t abi = json::as_int(json::at(doc, "abi"), "abi");
  if (cpu != key.cpu || ember != key.ember || abi != key.abi)
    return fmt::format("made for '{}', ember {}, kernel ABI {} (this is '{}', ember {}, ABI {})", cpu, ember, abi, key.cpu,
                       key.ember, key.abi);
  return "";
}

std::string read_capped(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxCacheBytes) fail(ErrorKind::Format, "{} bytes, more than a kernel-choice file holds", size);
  return read_text_file(path);
}

}  // namespace

KernelCacheKey current_kernel_cache_key(int threads) {
  return KernelCacheKey{cpu_brand_string(), EMBER_VERSION, kKernelAbi, threads};
}

std::string default_kernel_cache_path() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) return (std::filesystem::path(xdg) / "ember" / "kernel-choice.json").string();
  const char* home = std::getenv("HOME");
  if (home && *home) return (std::filesystem::path(home) / ".cache" / "ember" / "kernel-choice.json").string();
  return "";
}

CachedSpeeds read_kernel_cache(const std::string& path, const KernelCacheKey& key) {
  CachedSpeeds out;
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) return out;
  try {
    const json::Value doc = json::parse(read_capped(path), path);
    if (std::string why = foreign_reason(doc, key); !why.empty()) {
      out.warning = fmt::format("ignoring kernel-choice cache {}: {}", path, why);
      return out;
    }
    const json::Value& threads = json::at(doc, "threads");
    json::as_object(threads, "\"threads\"");
    if (const json::Value* entry = json::find(threads, std::to_string(key.threads))) parse_types(*entry, out);
  } catch (const std::exception& e) {
    out = CachedSpeeds{};
    out.warning = fmt::format("ignoring kernel-choice cache {}: {}", path, e.what());
  }
  return out;
}

std::string write_kernel_cache(const std::string& path, const KernelCacheKey& key, const std::vector<TypeSpeeds>& types) {
  if (path.empty()) return "no cache folder (neither XDG_CACHE_HOME nor HOME is set)";
  json::Value doc = json::Value::object();
  try {  // keep what the file holds for this CPU, version and ABI
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) {
      json::Value old = json::parse(read_capped(path), path);
      if (foreign_reason(old, key).empty()) {
        for (const auto& [threads, entry] : json::as_object(json::at(old, "threads"), "\"threads\"")) {
          CachedSpeeds check;
          parse_types(entry, check);  // a malformed entry anywhere: start afresh
        }
        doc = std::move(old);
      }
    }
  } catch (const std::exception&) {
    // unreadable or corrupt: replaced below
  }
  doc["format"] = kFormat;
  doc["cpu"] = key.cpu;
  doc["ember"] = key.ember;
  doc["abi"] = key.abi;
  json::Value& entry = doc["threads"][std::to_string(key.threads)];
  if (!entry.is_object()) entry = json::Value::object();
  for (const TypeSpeeds& t : types) entry[dtype_name(t.type)] = type_json(t);

  // Written to a temporary name and renamed: a reader never sees half a file.
  std::error_code ec;
  const std::filesystem::path target(path);
  std::filesystem::create_directories(target.parent_path(), ec);
  const std::string tmp = fmt::format("{}.{}.tmp", path, static_cast<long>(getpid()));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << doc.dump(2) << '\n';
    if (!f.good()) {
      std::filesystem::remove(tmp, ec);
      return fmt::format("cannot write {}", tmp);
    }
  }
  std::filesystem::rename(tmp, target, ec);
  if (ec) {
    const std::string why = fmt::format("cannot write {}: {}", path, ec.message());
    std::filesystem::remove(tmp, ec);
    return why;
  }
  return "";
}

}  // namespace ember::cpu
