// `ember bench`: the json output parses (a strict little JSON reader below) and holds
// llama-bench's fields with sane values; the markdown table has llama-bench's columns; the
// sample statistics are the mean and the sample (n - 1) standard deviation.
#include <doctest/doctest.h>

#include <cctype>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "eval/bench.h"
#include "eval/bench_report.h"
#include "test_bench_cli.h"

namespace {

// A strict JSON reader: enough to prove the output is valid JSON and to look fields up.
struct Json {
  std::variant<std::nullptr_t, bool, double, std::string, std::vector<Json>, std::map<std::string, Json>> v;
  const Json& operator[](const std::string& k) const { return std::get<std::map<std::string, Json>>(v).at(k); }
  const Json& operator[](size_t i) const { return std::get<std::vector<Json>>(v).at(i); }
  size_t size() const { return std::get<std::vector<Json>>(v).size(); }
  double num() const { return std::get<double>(v); }
  const std::string& str() const { return std::get<std::string>(v); }
  bool has(const std::string& k) const { return std::get<std::map<std::string, Json>>(v).count(k) != 0; }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}
  Json parse_document() {
    Json j = value();
    ws();
    if (i_ != s_.size()) throw std::runtime_error("trailing text at " + std::to_string(i_));
    return j;
  }

 private:
  void ws() { while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_; }
  char peek() { ws(); if (i_ >= s_.size()) throw std::runtime_error("unexpected end"); return s_[i_]; }
  void expect(char c) { if (peek() != c) throw std::runtime_error(std::string("expected ") + c + " at " + std::to_string(i_)); ++i_; }
  Json value() {
    const char c = peek();
    if (c == '{') {
      ++i_;
      std::map<std::string, Json> m;
      if (peek() == '}') { ++i_; return {m}; }
      for (;;) {
        std::string k = string();
        expect(':');
        m[k] = value();
        if (peek() == ',') { ++i_; continue; }
        expect('}');
        return {m};
      }
    }
    if (c == '[') {
      ++i_;
      std::vector<Json> a;
      if (peek() == ']') { ++i_; return {a}; }
      for (;;) {
        a.push_back(value());
        if (peek() == ',') { ++i_; continue; }
        expect(']');
        return {a};
      }
    }
    if (c == '"') return {string()};
    if (s_.compare(i_, 4, "true") == 0) { i_ += 4; return {true}; }
    if (s_.compare(i_, 5, "false") == 0) { i_ += 5; return {false}; }
    if (s_.compare(i_, 4, "null") == 0) { i_ += 4; return {nullptr}; }
    size_t used = 0;
    const double d = std::stod(s_.substr(i_), &used);
    if (used == 0) throw std::runtime_error("bad value at " + std::to_string(i_));
    i_ += used;
    return {d};
  }
  std::string string() {
    expect('"');
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      if (s_[i_] == '\\') {
        ++i_;
        if (i_ >= s_.size()) break;
        if (s_[i_] == 'u') { out += '?'; i_ += 5; continue; }
        out += s_[i_++];
      } else {
        if (static_cast<unsigned char>(s_[i_]) < 0x20) throw std::runtime_error("control character in string");
        out += s_[i_++];
      }
    }
    expect('"');
    return out;
  }
  const std::string& s_;
  size_t i_ = 0;
};

}  // namespace

TEST_CASE("bench statistics: mean and sample standard deviation of per-run t/s") {
  ember::eval::BenchResult r;
  r.test = {0, 10, 0};
  r.samples_ns = {1e9, 2e9, 4e9};  // 10, 5, 2.5 t/s
  CHECK(r.test.name() == "tg10");
  CHECK(r.avg_ts() == doctest::Approx((10 + 5 + 2.5) / 3));
  const double m = (10 + 5 + 2.5) / 3;
  CHECK(r.stddev_ts() == doctest::Approx(std::sqrt(((10 - m) * (10 - m) + (5 - m) * (5 - m) + (2.5 - m) * (2.5 - m)) / 2)));
  CHECK(ember::eval::BenchTest{512, 0, 4096}.name() == "pp512 @ d4096");
}

TEST_CASE("the decode roofline compares each run with the bandwidth paired with it") {
  ember::eval::BenchRow row;
  row.result.test = {0, 10, 0};
  row.result.samples_ns = {1e9, 2e9, 1e9};  // 10, 5, 10 t/s
  row.decode_bytes = 1000000000;           // 1 GB per token
  row.result.mem_bw_runs = {20e9, 5e9, 12.5e9};  // the second run met a busy memory bus
  // Per run: 10/20 = 50%, 5/5 = 100%, 10/12.5 = 80%; the median is 80%, where one
  // bandwidth figure for all runs (the median, 12.5 GB/s) would give mean 8.33 t/s = 66.7%.
  CHECK(row.mem_bw() == doctest::Approx(12.5e9));
  CHECK(row.roofline_ts() == doctest::Approx(12.5));
  CHECK(row.roofline_pct() == doctest::Approx(80.0));
  row.result.mem_bw_runs.pop_back();  // a reference per run or none
  CHECK(row.roofline_pct() == 0.0);
}

TEST_CASE("a run's bandwidth reference weighs each window by the tokens of its segment") {
  using ember::eval::segment_reference;
  CHECK(segment_reference({}) == 0.0);
  CHECK(segment_reference({{7, {20e9}}}) == doctest::Approx(20e9));
  // 1 GB tokens: 2 tokens at 10 GB/s take the roofline 0.2 s, 6 at 30 GB/s another 0.2 s:
  // 8 tokens in 0.4 s is 20 GB/s (the token-weighted mean, 25 GB/s, would flatter a run
  // that met the slow stretch).
  CHECK(segment_reference({{2, {10e9}}, {6, {30e9}}}) == doctest::Approx(20e9));
  CHECK(segment_reference({{2, {10e9}}, {6, {0.0}}}) == 0.0);  // a failed window: no reference
}

TEST_CASE("a run's bandwidth reference is the best read pattern over the run, not the best of each window") {
  using ember::eval::segment_reference;
  // Pattern 0 reads 10 then 30 GB/s (20 GB/s over the run, as above); pattern 1 reads 30
  // then 20: 8 tokens in 2/30 + 6/20 = 0.3667 s is 21.8 GB/s, the reference. Taking the
  // faster pattern in each window (30 and 30 GB/s) would give 30 GB/s, which no one read had.
  CHECK(segment_reference({{2, {10e9, 30e9}}, {6, {30e9, 20e9}}}) == doctest::Approx(8.0 / (2.0 / 30 + 6.0 / 20) * 1e9));
  CHECK(segment_reference({{2, {10e9, 30e9}}, {6, {30e9}}}) == 0.0);  // patterns must match
  int best = 7;
  segment_reference({{2, {10e9, 30e9}}, {6, {30e9, 20e9}}}, &best);
  CHECK(best == 1);
  segment_reference({{2, {30e9, 10e9}}, {6, {30e9, 20e9}}}, &best);
  CHECK(best == 0);
  segment_reference({{2, {10e9, 30e9}}, {6, {30e9}}}, &best);
  CHECK(best == -1);  // no reference, no pattern
}

TEST_CASE("the bench notes and json name the read patterns that set the roofline") {
  ember::eval::BenchRow row;
  row.result.test = {0, 10, 0};
  row.result.samples_ns = {1e9, 1e9, 1e9};
  row.decode_bytes = 1000000000;
  row.result.mem_bw_runs = {20e9, 20e9, 20e9};
  row.result.mem_bw_patterns = {2, 0, 2};
  row.bandwidth_patterns = {"one stream", "two streams", "decode's chunks"};
  const std::string method = "best of 3 read patterns per run; set by: one stream (1 run), decode's chunks (2 runs)";
  CHECK(row.bandwidth_method() == method);
  CHECK(ember::eval::format_notes({row}).find("bandwidth probe: " + method) != std::string::npos);
  ember::eval::BenchModelInfo info{"m.gguf", "llama 1B Q4_0", 1000, 2000};
  const Json j = JsonParser(ember::eval::format_json(info, {row})).parse_document();
  CHECK(j[0]["mem_bw_method"].str() == method);
  row.bandwidth_patterns = {"device copy bandwidth"};  // one way to read: its name, no probe line
  row.bandwidth_name = "device copy bandwidth";
  CHECK(row.bandwidth_method() == "device copy bandwidth");
  CHECK(ember::eval::format_notes({row}).find("bandwidth probe") == std::string::npos);
}

TEST_CASE("the json writer emits valid JSON that survives odd file names") {
  ember::eval::BenchModelInfo info{"we\"ird\\name.gguf", "llama 1B Q4_0", 1000, 2000};
  ember::eval::BenchRow row;
  row.result.test = {16, 0, 0};
  row.result.samples_ns = {1e6, 2e6};
  row.n_threads = 2;
  const Json j = JsonParser(ember::eval::format_json(info, {row})).parse_document();
  CHECK(j[0]["model_filename"].str() == "we\"ird\\name.gguf");
  CHECK(j[0]["test"].str() == "pp16");
}

TEST_CASE("ember bench -o json holds llama-bench's fields for pp and tg") {
  std::string log;
  const std::string model = ember_test::aidreams_gguf(&log);
  INFO("convert output: " << log);
  REQUIRE(!model.empty());
  const auto r = ember_test::run_ember("bench -m '" + model + "' -p 16 -n 4 -r 2 -t 2 -o json");
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  Json j;
  REQUIRE_NOTHROW(j = JsonParser(r.out).parse_document());
  REQUIRE(j.size() == 2);
  CHECK(j[0]["test"].str() == "pp16");
  CHECK(j[1]["test"].str() == "tg4");
  for (size_t i = 0; i < 2; ++i) {
    const Json& t = j[i];
    for (const char* f : {"avg_ts", "stddev_ts", "n_threads", "model_type", "model_size", "model_n_params", "samples_ns"}) {
      CHECK_MESSAGE(t.has(f), f);
    }
    CHECK(t["avg_ts"].num() > 0);
    CHECK(t["stddev_ts"].num() >= 0);
    CHECK(t["n_threads"].num() == 2);
    CHECK(t["samples_ns"].size() == 2);
    CHECK(t["model_size"].num() > 0);
    CHECK(t["model_type"].str().rfind("llama ", 0) == 0);
  }
  CHECK(j[0]["ttft_ms"].num() > 0);
  CHECK(j[1]["decode_bytes_per_token"].num() > 0);
  // the tg test reads the memory between its tokens: a reference for each run
  CHECK(j[1]["mem_bw_gbs"].num() > 0);
  CHECK(j[1]["roofline_pct"].num() > 0);
  CHECK(j[1]["mem_bw_method"].str().rfind("best of 5 read patterns per run; set by: ", 0) == 0);
}

TEST_CASE("ember bench markdown has llama-bench's columns") {
  const std::string model = ember_test::aidreams_gguf();
  REQUIRE(!model.empty());
  const auto r = ember_test::run_ember("bench -m '" + model + "' -p 8 -n 2 -r 1 -t 1");
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("| model ") != std::string::npos);
  CHECK(r.out.find(" test |") != std::string::npos);
  CHECK(r.out.find("t/s |") != std::string::npos);
  CHECK(r.out.find("pp8") != std::string::npos);
  CHECK(r.out.find("tg2") != std::string::npos);
  CHECK(r.out.find("TTFT") != std::string::npos);
}

// --draft / --draft-ngram: a plain greedy row and a speculative row on the same prompt; the
// speculative row's numbers agree with each other and with the plain row.
TEST_CASE("ember bench --draft-ngram / --draft add a plain greedy and a speculative row") {
  const std::string model = ember_test::aidreams_gguf();
  REQUIRE(!model.empty());
  const std::string prompt = (ember_test::scratch_dir() / "copy.txt").string();
  {
    std::string text;
    for (int i = 0; i < 3; ++i) text += "The dissolve within me, a soft whispers of vectors. Classification whispers secrets. ";
    FILE* f = std::fopen(prompt.c_str(), "wb");
    REQUIRE(f);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  struct Case {
    std::string flags, source;
    bool all_accepted;
  };
  const Case cases[] = {
      {"--draft-ngram 3 -f '" + prompt + "'", "n-gram 3", false},
      // The target as its own draft, drafting every round: every drafted token is accepted.
      {"--draft '" + model + "' --draft-fixed --draft-max 4", "draft model aidreams260K.gguf", true},
  };
  for (const Case& c : cases) {
    CAPTURE(c.flags);
    const auto r = ember_test::run_ember("bench -m '" + model + "' -p 0 -n 24 -r 2 -t 1 -o json " + c.flags);
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    Json j;
    REQUIRE_NOTHROW(j = JsonParser(r.out).parse_document());
    REQUIRE(j.size() == 3);  // tg24, its greedy twin, the speculative run
    CHECK(j[0]["test"].str() == "tg24");
    const Json& plain = j[1];
    const Json& spec = j[2];
    CHECK(plain["test"].str().find(" greedy") != std::string::npos);
    CHECK(spec["test"].str() == plain["test"].str() + "+" + c.source);
    CHECK(plain["n_depth"].num() == spec["n_depth"].num());  // the same prompt
    CHECK(plain["samples_ns"].size() == 2);
    CHECK(spec["samples_ns"].size() == 2);
    CHECK_FALSE(plain.has("speculative"));
    REQUIRE(spec.has("speculative"));
    const Json& s = spec["speculative"];
    CHECK(s["source"].str() == c.source);
    CHECK(std::get<bool>(s["same_text"].v));
    CHECK(s["plain_ts"].num() == doctest::Approx(plain["avg_ts"].num()).epsilon(1e-5));
    CHECK(s["speedup"].num() == doctest::Approx(spec["avg_ts"].num() / plain["avg_ts"].num()).epsilon(1e-3));
    const double drafted = s["drafted"].num(), accepted = s["accepted"].num(), passes = s["target_passes"].num();
    CHECK(drafted > 0);
    CHECK(accepted <= drafted);
    CHECK(s["acceptance_rate"].num() == doctest::Approx(accepted / drafted).epsilon(1e-3));
    // 2 runs of 24 tokens: passes >= tokens / (max drafted + 1), and at most one per token.
    CHECK(passes <= 48);
    CHECK(s["tokens_per_pass"].num() == doctest::Approx(48 / passes).epsilon(1e-3));
    if (c.all_accepted) CHECK(accepted == drafted);
  }
}

TEST_CASE("ember bench --draft: markdown notes, csv columns, flag errors") {
  const std::string model = ember_test::aidreams_gguf();
  REQUIRE(!model.empty());
  const auto md = ember_test::run_ember("bench -m '" + model + "' -p 8 -n 8 -r 1 -t 1 --draft-ngram 2");
  INFO(md.out << md.err);
  REQUIRE(md.exit_code == 0);
  CHECK(md.out.find("tg8 @ d8 greedy+n-gram 2") != std::string::npos);  // -p random tokens as the prompt
  CHECK(md.out.find("x the plain greedy run's") != std::string::npos);
  const auto csv = ember_test::run_ember("bench -m '" + model + "' -p 0 -n 8 -r 1 -t 1 --draft-ngram 2 -o csv");
  REQUIRE(csv.exit_code == 0);
  CHECK(csv.out.find(",spec_source,spec_speedup,spec_acceptance_rate,spec_tokens_per_pass,spec_same_text\n") !=
        std::string::npos);
  CHECK(csv.out.find("\"n-gram 2\",") != std::string::npos);
  CHECK(ember_test::run_ember("bench -m '" + model + "' -p 0 -n 8 -f /nonexistent").exit_code == 2);
  CHECK(ember_test::run_ember("bench -m '" + model + "' -p 8 -n 0 --draft-ngram 2").exit_code == 2);
  CHECK(ember_test::run_ember("bench -m '" + model + "' -n 8 --draft-ngram 2 --draft '" + model + "'").exit_code == 2);
}

TEST_CASE("ember bench -np prints a row per concurrency and the static-vs-continuous workload lines") {
  const std::string model = ember_test::aidreams_gguf();
  REQUIRE(!model.empty());
  const auto r = ember_test::run_ember("bench -m '" + model + "' -np 1,3 -p 8 -n 4 -r 1 -t 1");
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("| n_seq | pp | tg | prompt t/s | decode t/s (all sequences)") != std::string::npos);
  CHECK(r.out.find("\n| 1 | 8 | 4 | ") != std::string::npos);
  CHECK(r.out.find("\n| 3 | 8 | 4 | ") != std::string::npos);
  CHECK(r.out.find("workload: 12 requests of uniform lengths at 3 sequences") != std::string::npos);
  CHECK(r.out.find("workload: 12 requests of long-tailed lengths at 3 sequences") != std::string::npos);
  CHECK(r.out.find("padded static") != std::string::npos);
  CHECK(r.out.find("x padded") != std::string::npos);
  CHECK(ember_test::run_ember("bench -m '" + model + "' -np 0 -p 8 -n 4").exit_code == 2);
  CHECK(ember_test::run_ember("bench -m '" + model + "' -np 2,x -p 8 -n 4").exit_code == 2);
}

TEST_CASE("ember bench -np --no-workloads prints the concurrency rows only; alone it is refused") {
  const std::string model = ember_test::aidreams_gguf();
  REQUIRE(!model.empty());
  const auto r = ember_test::run_ember("bench -m '" + model + "' -np 1,2 -p 8 -n 4 -r 1 -t 1 --no-workloads");
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("\n| 2 | 8 | 4 | ") != std::string::npos);
  CHECK(r.out.find("workload:") == std::string::npos);
  const auto alone = ember_test::run_ember("bench -m '" + model + "' -p 8 -n 4 --no-workloads");
  CHECK(alone.exit_code == 2);
  CHECK(alone.err.find("--no-workloads") != std::string::npos);
}
