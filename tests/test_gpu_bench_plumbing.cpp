// The GPU benchmarks' plumbing without a GPU: the copy bandwidth probe and the tensor-core
// peak table (cuda/copy_probe.h, cuda/tensor_peak.h), `ember bench -ngl 99` and `ember
// bench-ops --gpu --small` on the CPU execution of the CUDA kernels (EMBER_CUDA_ON_CPU=1),
// which runs every line of the GPU paths; the figures themselves mean nothing there.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_test_util.h"
#include "cuda/copy_probe.h"
#include "cuda/tensor_peak.h"

using ember::test::ProcessResult;
using ember::test::run_ember;

namespace {

// run_ember with EMBER_CUDA_ON_CPU=1 for the one call.
ProcessResult run_on_cpu_exec(const std::vector<std::string>& args) {
  setenv("EMBER_CUDA_ON_CPU", "1", 1);
  ProcessResult r = run_ember(args);
  unsetenv("EMBER_CUDA_ON_CPU");
  return r;
}

}  // namespace

TEST_CASE("copy probe: read + write bytes over the time of the copies, sized by the device") {
  ember::cuda::DeviceRuntime& rt = ember::cuda::host_runtime();
  CHECK(ember::cuda::copy_probe_bytes(rt) == size_t{64} << 20);  // no device properties: the CPU execution
  ember::cuda::CopyProbe probe(rt, size_t{4} << 20);
  CHECK(probe.bytes() == size_t{4} << 20);
  const double one = probe.gb_per_s(3);
  CHECK(one > 0.1);
  CHECK(one < 1e4);
  CHECK(probe.gb_per_s_over(0.02) > 0.1);
}

TEST_CASE("tensor-core peak: SMs x ops per clock x clock, by compute capability") {
  using ember::cuda::MmaOperand;
  const ember::cuda::DeviceInfo h200{9, 0, 132, 1980000};
  const auto int8 = ember::cuda::tensor_peak(h200, MmaOperand::Int8);
  CHECK(int8.ops_per_s == doctest::Approx(132.0 * 8192 * 1.98e9));
  CHECK(int8.how.find("132 SMs x 8192 ops/clock x 1980 MHz") != std::string::npos);
  CHECK(ember::cuda::tensor_peak(h200, MmaOperand::F16).ops_per_s == doctest::Approx(132.0 * 4096 * 1.98e9));
  // A100 SXM: 108 SMs at 1410 MHz, 624 dense int8 TOPS in NVIDIA's datasheet.
  CHECK(ember::cuda::tensor_peak({8, 0, 108, 1410000}, MmaOperand::Int8).ops_per_s / 1e12 == doctest::Approx(624).epsilon(0.01));
  const auto unknown = ember::cuda::tensor_peak({7, 5, 40, 1590000}, MmaOperand::Int8);
  CHECK(unknown.ops_per_s == 0);
  CHECK(unknown.how.find("sm_75") != std::string::npos);
  CHECK(ember::cuda::tensor_peak({}, MmaOperand::Int8).ops_per_s == 0);
}

TEST_CASE("ember bench -ngl 99 on the CUDA kernels: the CPU's columns, the device's copy bandwidth as roofline") {
  const std::string m = ember::test::aidreams_gguf();
  const ProcessResult r = run_on_cpu_exec({"bench", "-m", m, "-ngl", "99", "-p", "8", "-n", "4", "-r", "1", "-o", "json"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j.size() == 2);
  CHECK(j[0]["backends"] == "CUDA-on-CPU");
  CHECK(j[0]["ttft_ms"].get<double>() > 0);
  CHECK(j[1]["decode_bytes_per_token"].get<double>() > 0);
  CHECK(j[1]["mem_bw_gbs"].get<double>() > 0);
  CHECK(j[1]["roofline_pct"].get<double>() > 0);

  const ProcessResult md = run_on_cpu_exec({"bench", "-m", m, "-ngl", "99", "-p", "0", "-n", "4", "-r", "1"});
  INFO(md.out << md.err);
  CHECK(md.out.find("| CUDA-on-CPU ") != std::string::npos);
  CHECK(md.out.find("cpu_exec copy bandwidth (read + write)") != std::string::npos);
}

TEST_CASE("ember bench-ops --gpu --small: the matvec, attention and prefill tables on the CPU execution") {
  const ProcessResult r = run_on_cpu_exec({"bench-ops", "--gpu", "--small", "--reps", "1"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("device copy bandwidth: ") != std::string::npos);
  for (const char* row : {"| Q4_0 | 96x256 |", "| BF16 | 96x256 |", "| F16 | 64 |", "| Q8_0 | 200 |",
                          "| Q4_K | 64x256 | 128 |", "| F16 | 64x256 | 64 |"})
    CHECK_MESSAGE(r.out.find(row) != std::string::npos, row);
  CHECK(r.out.find("int8 tensor-core peak: 0 TOPS (no device properties") != std::string::npos);
  // Without --small the CPU execution would take hours: --gpu says so and stops.
  const ProcessResult full = run_on_cpu_exec({"bench-ops", "--gpu"});
  CHECK(full.exit_code == 0);
  CHECK(full.out.find("skipped on the CPU execution of the kernels without --small") != std::string::npos);
}
