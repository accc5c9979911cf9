#include "nodecheck/acceptance.h"

#include <algorithm>

#include "core/parse.h"
#include "core/table.h"
#include "nodecheck/gpu_bench.h"

namespace fulcrum::nodecheck {
namespace {

using nlohmann::json;

// The doctor checks that are the node's driver/CUDA stack (the rest, disk room and NCCL
// variables, are the job's setup, not the node's).
constexpr const char* kStackChecks[] = {"nvidia-driver", "cuda-toolkit", "frameworks",
                                        "gpu-visibility"};

std::optional<double> NumberAt(const json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

json Optional(const std::optional<double>& value) { return value ? json(*value) : json(nullptr); }

std::string Percent(double fraction) { return FormatNumber(100 * fraction, 0) + " %"; }

std::string Figure(double value, const std::string& unit) {
  return FormatCheckValue(json(value), unit);
}

// A measured figure against the plan's: reject under kLowFractionOfSpec of it.
AcceptanceCheck FigureCheck(const std::string& name, const std::string& label,
                            std::optional<double> expected, std::optional<double> measured,
                            const std::string& unit) {
  AcceptanceCheck check{name, Optional(expected), Optional(measured), unit, "unknown", ""};
  if (!expected || *expected <= 0) {
    check.reason = label + ": the plan's figure is not known";
  } else if (!measured) {
    check.reason = label + ": not measured";
  } else if (*measured < kLowFractionOfSpec * *expected) {
    check.verdict = "reject";
    check.reason = label + " " + Figure(*measured, unit) + " is " + Percent(*measured / *expected) +
                   " of the " + Figure(*expected, unit) + " the plan assumed (below " +
                   Percent(kLowFractionOfSpec) + ")";
  } else {
    check.verdict = "accept";
  }
  return check;
}

// The smallest of the numbers at `key` in each object of `list`.
std::optional<double> MinOver(const json& list, const char* key) {
  std::optional<double> low;
  if (!list.is_array()) return low;
  for (const json& item : list) {
    if (auto v = NumberAt(item, key)) low = low ? std::min(*low, *v) : *v;
  }
  return low;
}

}  // namespace

std::string FormatCheckValue(const json& value, const std::string& unit) {
  if (value.is_null()) return "-";
  if (value.is_string()) return value.get<std::string>();
  if (!value.is_number()) return value.dump();
  double v = value.get<double>();
  if (unit == "bytes/s" && v < 1e9) return FormatNumber(v / 1e6, 0) + " MB/s";
  if (unit == "bytes/s") return FormatNumber(v / 1e9, v < 100e9 ? 1 : 0) + " GB/s";
  if (unit == "TFLOP/s") return FormatNumber(v, 1) + " TFLOP/s";
  if (unit == "swing") return FormatNumber(100 * v, 0) + " %";
  return FormatNumber(v, 0);
}

Acceptance Evaluate(const NodeExpectation& expected, const json& bench,
                    const std::vector<DoctorCheck>& doctor, std::optional<int> gpus_seen) {
  Acceptance out;
  const json gpu = bench.is_object() ? bench.value("gpu", json()) : json();
  const bool measured_gpu = gpu.is_object();

  // GPU model: the catalog GPU the bench matched to the device (its datasheet), else its name.
  AcceptanceCheck model{"gpu-model", expected.gpu, nullptr, "", "accept", ""};
  if (!measured_gpu) {
    model.verdict = "reject";
    std::string why = bench.is_object() && bench.value("gpu_skipped_reason", json()).is_string()
                          ? bench["gpu_skipped_reason"].get<std::string>()
                          : std::string("no GPU result");
    model.reason = "the GPUs could not be measured (" + why + "); the plan assumed " +
                   std::to_string(expected.gpus_per_node) + " x " + expected.gpu;
  } else {
    const json& sheet = gpu.value("datasheet_gpu", json());
    std::string name = sheet.is_string() ? sheet.get<std::string>()
                                         : gpu.value("device", json::object()).value("name", "");
    model.measured = name;
    if (!sheet.is_string() || name != expected.gpu) {
      model.verdict = "reject";
      model.reason = "the node has " + (name.empty() ? std::string("an unnamed GPU") : name) +
                     (sheet.is_string() ? "" : " (not in the catalog)") + ", the plan assumed " +
                     expected.gpu;
    }
  }
  out.checks.push_back(model);

  // GPU count: the bench's device count, else what the doctor saw.
  std::optional<double> count;
  if (measured_gpu) count = NumberAt(gpu.value("device", json::object()), "gpu_count");
  if (!count && gpus_seen) count = *gpus_seen;
  AcceptanceCheck gpus{"gpu-count", expected.gpus_per_node, Optional(count), "GPUs", "accept", ""};
  if (!count) {
    gpus.verdict = "unknown";
    gpus.reason = "GPU count: not measured";
  } else if (static_cast<int>(*count) != expected.gpus_per_node) {
    gpus.verdict = "reject";
    gpus.reason = "the node has " + FormatNumber(*count, 0) + " GPU(s), the plan assumed " +
                  std::to_string(expected.gpus_per_node);
  }
  out.checks.push_back(gpus);

  // GEMM of the plan's precision, memory bandwidth, interconnect, host link.
  std::optional<double> gemm;
  bool gemm_wrong = false;
  if (measured_gpu && gpu.contains("gemm") && gpu["gemm"].is_array()) {
    for (const json& g : gpu["gemm"]) {
      if (g.value("dtype", "") != expected.gemm_dtype) continue;
      gemm = NumberAt(g, "tflops");
      gemm_wrong = !g.value("correct", false);
    }
  }
  AcceptanceCheck gemm_check =
      FigureCheck("gemm-" + expected.gemm_dtype, expected.gemm_dtype + " GEMM",
                  expected.gemm_tflops, gemm, "TFLOP/s");
  if (gemm_wrong) {  // a wrong result does not count as speed
    gemm_check.verdict = "reject";
    gemm_check.reason = expected.gemm_dtype +
                        " GEMM gave wrong results (checked against a reference): a faulty GPU";
  }
  out.checks.push_back(gemm_check);
  out.checks.push_back(FigureCheck(
      "memory-bandwidth", "memory bandwidth", expected.memory_bandwidth_bytes_per_second,
      measured_gpu ? NumberAt(gpu, "memory_bandwidth_bytes_per_second") : std::nullopt, "bytes/s"));
  if (expected.gpus_per_node > 1) {
    std::optional<double> peer =
        measured_gpu ? MinOver(gpu.value("p2p", json::array()), "bytes_per_second") : std::nullopt;
    out.checks.push_back(FigureCheck("interconnect", expected.interconnect + " GPU-to-GPU",
                                     expected.interconnect_bytes_per_second, peer, "bytes/s"));
  }
  std::optional<double> host;
  if (measured_gpu) {
    auto h2d = NumberAt(gpu, "h2d_bytes_per_second");
    auto d2h = NumberAt(gpu, "d2h_bytes_per_second");
    if (h2d && d2h)
      host = std::min(*h2d, *d2h);
    else
      host = h2d ? h2d : d2h;
  }
  out.checks.push_back(
      FigureCheck("host-link", "PCIe host link", expected.host_bytes_per_second, host, "bytes/s"));
  const json disk = bench.is_object() ? bench.value("disk", json()) : json();
  out.checks.push_back(FigureCheck("disk-write", "checkpoint disk write",
                                   expected.disk_write_bytes_per_second,
                                   NumberAt(disk, "write_bytes_per_second"), "bytes/s"));

  // Throughput stability over the sustained run.
  AcceptanceCheck stable{"stability", kUnstableSwing, nullptr,
                         "swing",     "unknown",      "stability: not measured"};
  const json st = measured_gpu ? gpu.value("stability", json()) : json();
  auto mean = NumberAt(st, "mean_tflops");
  auto lo = NumberAt(st, "min_tflops");
  auto hi = NumberAt(st, "max_tflops");
  if (mean && lo && hi && *mean > 0) {
    double swing = (*hi - *lo) / *mean;
    stable.measured = swing;
    stable.reason.clear();
    stable.verdict = swing > kUnstableSwing ? "reject" : "accept";
    if (stable.verdict == "reject") {
      stable.reason = "sustained GEMM swings " + Percent(swing) + " (" + FormatNumber(*lo, 0) +
                      " to " + FormatNumber(*hi, 0) + " TFLOP/s), more than " +
                      Percent(kUnstableSwing) + ": a noisy or throttling host";
    }
  }
  out.checks.push_back(stable);

  // Driver / CUDA stack (doctor).
  for (const DoctorCheck& d : doctor) {
    const bool stack =
        d.name.rfind("framework:", 0) == 0 ||  // one per framework found
        std::find_if(std::begin(kStackChecks), std::end(kStackChecks),
                     [&](const char* n) { return d.name == n; }) != std::end(kStackChecks);
    if (!stack) continue;
    AcceptanceCheck check{"doctor-" + d.name, "ok", CheckStatusName(d.status), "", "accept", ""};
    if (d.status == CheckStatus::kFail) {
      check.verdict = "reject";
      check.reason = d.name + ": " + d.finding;
    } else if (d.status == CheckStatus::kSkipped) {
      check.verdict = "unknown";
      check.reason = d.name + ": " + d.finding;
    }
    out.checks.push_back(check);
  }

  for (const AcceptanceCheck& c : out.checks) {
    if (c.verdict == "reject") out.reasons.push_back(c.reason);
  }
  out.verdict = out.reasons.empty() ? "accept" : "reject";
  return out;
}

Acceptance AcceptNode(GpuBenchSource& source, const NodeExpectation& expected, const json& bench,
                      const DriverTable& table, const DoctorOptions& options) {
  SystemFacts facts = source.GatherFacts(options);
  std::optional<int> gpus_seen;
  if (facts.driver_version) gpus_seen = static_cast<int>(facts.gpus.size());
  return Evaluate(expected, bench, RunChecks(facts, table, options), gpus_seen);
}

json AcceptanceJson(const Acceptance& acceptance, const NodeExpectation& expected) {
  json checks = json::array();
  for (const AcceptanceCheck& c : acceptance.checks) {
    checks.push_back({{"name", c.name},
                      {"expected", c.expected},
                      {"measured", c.measured},
                      {"unit", c.unit.empty() ? json(nullptr) : json(c.unit)},
                      {"verdict", c.verdict},
                      {"reason", c.reason.empty() ? json(nullptr) : json(c.reason)}});
  }
  return {{"verdict", acceptance.verdict},
          {"reasons", acceptance.reasons},
          {"expected_from", expected.origin},
          {"checks", checks}};
}

}  // namespace fulcrum::nodecheck
