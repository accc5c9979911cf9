// `fulcrum bench`: measures this server (or a sim node) against its datasheet through the bench
// seam (nodecheck/node_bench.h), optionally saves and compares results, and with --expect /
// --offer accepts or rejects the node against what a plan assumed (nodecheck/acceptance.h),
// releasing a rejected one with the agent's idle release command.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "agent/config.h"
#include "agent/idle.h"
#include "catalog/catalog.h"
#include "cli/bench_expect.h"
#include "cli/bench_source_options.h"
#include "cli/command.h"
#include "core/input_error.h"
#include "core/parse.h"
#include "core/paths.h"
#include "core/progress.h"
#include "core/table.h"
#include "core/text_file.h"
#include "nodecheck/acceptance.h"
#include "nodecheck/disk.h"
#include "nodecheck/doctor.h"
#include "nodecheck/gpu_bench.h"
#include "nodecheck/node_bench.h"

namespace fulcrum::cli {
namespace {

struct BenchFlags {
  bool quick = false, standard = false, long_run = false;
  bool json = false;
  bool skip_gpu = false, skip_disk = false;
  std::string checkpoint_dir = ".";
  std::string checkpoint_size;
  std::string disk_size;
  std::string compare_file;
  std::string output_file;
  int device = 0;
  BenchSourceFlags source;
  // Acceptance on arrival.
  std::string expect_file, offer, agent_config;
  int pick = 1;
  bool release_on_reject = false, arm = false;
};

struct Mode {
  const char* name;
  double disk_bytes;
  double stability_seconds;
};

Mode ChooseMode(const BenchFlags& flags) {
  if (flags.long_run) return {"long", 8.0 * (1 << 30), 600};
  if (flags.standard) return {"standard", 2.0 * (1 << 30), 60};
  if (flags.quick) return {"quick", 256.0 * (1 << 20), 5};
  return {"standard", 2.0 * (1 << 30), 60};
}

// Key figures of a bench JSON, by name, for --compare.
std::map<std::string, double> KeyFigures(const nlohmann::json& doc) {
  std::map<std::string, double> figures;
  if (doc.contains("disk") && doc["disk"].is_object() &&
      doc["disk"]["write_bytes_per_second"].is_number()) {
    figures["disk_write_bytes_per_second"] = doc["disk"]["write_bytes_per_second"].get<double>();
  }
  if (doc.contains("gpu") && doc["gpu"].is_object()) {
    const auto& gpu = doc["gpu"];
    if (gpu.contains("gemm")) {
      for (const auto& g : gpu["gemm"]) {
        if (g["tflops"].is_number())
          figures["gemm_" + g.value("dtype", "?") + "_tflops"] = g["tflops"].get<double>();
      }
    }
    for (const char* key :
         {"memory_bandwidth_bytes_per_second", "h2d_bytes_per_second", "d2h_bytes_per_second"}) {
      if (gpu.contains(key) && gpu[key].is_number()) figures[key] = gpu[key].get<double>();
    }
    if (gpu.contains("stability") && gpu["stability"]["mean_tflops"].is_number()) {
      figures["stability_mean_tflops"] = gpu["stability"]["mean_tflops"].get<double>();
    }
  }
  return figures;
}

// `bench --expect` / `--offer` rejects with this exit code (0 accept, 2 bad usage).
constexpr int kRejectExitCode = 3;

// Checks the acceptance flags and reads what they need before anything is measured: the
// expectation, and with --release-on-reject the agent's idle release argv.
Status PrepareAcceptance(const BenchFlags& flags, const catalog::Catalog& cat,
                         const std::string& catalog_dir,
                         std::optional<nodecheck::NodeExpectation>& expectation,
                         std::vector<std::string>& release_argv) {
  const bool acceptance = !flags.expect_file.empty() || !flags.offer.empty();
  auto usage = [](const char* field, const std::string& expected, const std::string& found) {
    return InputError({"", std::nullopt, field, expected, found, {}}, FoundIs::kDescription);
  };
  if (!flags.expect_file.empty() && !flags.offer.empty()) {
    return usage("--offer", "either --expect or --offer", "both");
  }
  if (flags.release_on_reject && !acceptance) {
    return usage("--release-on-reject", "--expect plan.json or --offer PROVIDER:INSTANCE with it",
                 "neither");
  }
  if (flags.arm && !flags.release_on_reject) {
    return usage("--arm", "--release-on-reject with it", "no --release-on-reject");
  }
  if (flags.release_on_reject) {
    if (flags.agent_config.empty()) {
      return usage("--release-on-reject",
                   "--agent-config FILE: the agent.yaml whose idle release command (idle: "
                   "{command: [...]}) returns this node",
                   "no --agent-config");
    }
    agent::AgentConfig config;
    FULCRUM_RETURN_IF_ERROR(agent::LoadAgentConfigFile(flags.agent_config, config));
    if (config.idle.command.empty()) {
      return InputError({flags.agent_config,
                         std::nullopt,
                         "idle.command",
                         "the release command's argv",
                         "an empty list",
                         {}},
                        FoundIs::kDescription);
    }
    release_argv = config.idle.command;
  }
  if (!flags.expect_file.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(expectation,
                             ExpectationFromPlan(flags.expect_file, flags.pick, cat, catalog_dir));
  } else if (!flags.offer.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(expectation, ExpectationFromOffer(flags.offer, cat, catalog_dir));
  }
  return Status::Ok();
}

// Runs the doctor on the same source, judges the node against the expectation, merges the
// verdict into `result` ({"verdict", "reasons", "expected_from", "checks"}) and, on a reject
// with --release-on-reject, runs (--arm) or shows the release command ("release").
Status Accept(CliContext& ctx, const BenchFlags& flags, nodecheck::GpuBenchSource& source,
              const nodecheck::NodeExpectation& expectation,
              const std::vector<std::string>& release_argv, nlohmann::json& result) {
  nodecheck::DoctorOptions options;
  options.checkpoint_dir = flags.checkpoint_dir;
  FULCRUM_ASSIGN_OR_RETURN(nodecheck::DriverTable table,
                           nodecheck::LoadDriverTable(DefaultCatalogDir(ctx.catalog_dir)));
  nodecheck::Acceptance acceptance =
      nodecheck::AcceptNode(source, expectation, result, table, options);
  nlohmann::json verdict = nodecheck::AcceptanceJson(acceptance, expectation);
  for (auto it = verdict.begin(); it != verdict.end(); ++it) result[it.key()] = it.value();
  if (!flags.release_on_reject) return Status::Ok();
  nlohmann::json release = {
      {"argv", release_argv},  {"command", agent::ShowReleaseCommand(release_argv)},
      {"dry_run", !flags.arm}, {"ran", false},
      {"exit_code", nullptr},  {"error", nullptr}};
  if (acceptance.verdict == "reject" && flags.arm) {
    Result<CaptureResult> done = agent::RunReleaseCommand(release_argv);
    if (!done.ok()) {
      release["error"] = done.status().message();
    } else {
      release["ran"] = true;
      release["exit_code"] = done->exit_code;
      if (done->timed_out)
        release["error"] = "did not finish in time; killed";
      else if (done->exit_code != 0)
        release["error"] = "exited with status " + std::to_string(done->exit_code) + ": " +
                           std::string(Trim(done->err)).substr(0, 300);
    }
    if (!release["error"].is_null()) {
      ctx.err << "fulcrum: warning: the release command failed (the node is still rented): "
              << release["error"].get<std::string>() << "\n";
    }
  }
  result["release"] = release;
  return Status::Ok();
}

void PrintAcceptance(CliContext& ctx, const nlohmann::json& result) {
  ctx.out << "\nAcceptance against " << result["expected_from"].get<std::string>() << ":\n";
  Table t({"check", "expected", "measured", "verdict"},
          {Align::kLeft, Align::kRight, Align::kRight, Align::kLeft});
  for (const auto& c : result["checks"]) {
    std::string unit = c["unit"].is_string() ? c["unit"].get<std::string>() : "";
    std::string expected = nodecheck::FormatCheckValue(c["expected"], unit);
    if (c["name"] == "stability" && c["expected"].is_number()) expected = "<= " + expected;
    t.AddRow({c["name"].get<std::string>(), expected,
              nodecheck::FormatCheckValue(c["measured"], unit), c["verdict"].get<std::string>()});
  }
  ctx.out << t.Render() << "\nverdict: " << result["verdict"].get<std::string>() << "\n";
  for (const auto& reason : result["reasons"])
    ctx.out << "  - " << reason.get<std::string>() << "\n";
  if (result.contains("release")) {
    const auto& r = result["release"];
    std::string command = r["command"].get<std::string>();
    if (result["verdict"] != "reject") {
      ctx.out << "release: not needed (accepted); would run: " << command << "\n";
    } else if (r["dry_run"].get<bool>()) {
      ctx.out << "release (dry run; --arm runs it): would run: " << command << "\n";
    } else if (r["ran"].get<bool>() && r["error"].is_null()) {
      ctx.out << "release: ran " << command << " (exit 0)\n";
    } else {
      ctx.out << "release: FAILED: " << command << ": " << r["error"].get<std::string>() << "\n";
    }
  }
}

// The bench's own table: GPU figures against the datasheet, disk, comparison.
void PrintBenchTable(CliContext& ctx, const BenchFlags& flags, const nlohmann::json& result) {
  ctx.out << "fulcrum bench (" << result["mode"].get<std::string>() << ")\n\n";
  if (result["gpu"].is_null()) {
    ctx.out << "GPU: skipped: " << result["gpu_skipped_reason"].get<std::string>() << "\n";
  } else {
    const auto& gpu = result["gpu"];
    ctx.out << "GPU: " << gpu["device"].value("name", "?") << " (datasheet: "
            << (gpu["datasheet_gpu"].is_null() ? std::string("not in catalog")
                                               : gpu["datasheet_gpu"].get<std::string>())
            << ")\n";
    Table t({"figure", "measured", "spec", "% of spec", "verdict"},
            {Align::kLeft, Align::kRight, Align::kRight, Align::kRight, Align::kLeft});
    auto num = [](const nlohmann::json& v, double scale, int decimals) {
      return v.is_number() ? FormatNumber(v.get<double>() / scale, decimals) : std::string("-");
    };
    for (const auto& g : gpu["gemm"]) {
      t.AddRow({g.value("dtype", "?") + " GEMM TFLOP/s", num(g["tflops"], 1, 1),
                num(g["spec"], 1, 1), num(g["percent_of_spec"], 1, 0), g.value("verdict", "")});
    }
    const auto& bw = gpu["memory_bandwidth"];
    t.AddRow({"memory GB/s", num(bw["measured_bytes_per_second"], 1e9, 0), num(bw["spec"], 1e9, 0),
              num(bw["percent_of_spec"], 1, 0), bw.value("verdict", "")});
    t.AddRow({"host->device GB/s", num(gpu["h2d_bytes_per_second"], 1e9, 1), "-", "-", ""});
    t.AddRow({"device->host GB/s", num(gpu["d2h_bytes_per_second"], 1e9, 1), "-", "-", ""});
    const auto& st = gpu["stability"];
    t.AddRow({"sustained bf16 TFLOP/s", num(st["mean_tflops"], 1, 1), "-", "-",
              st.value("verdict", "") + " (swing " + num(st["swing_fraction"], 0.01, 0) + " %)"});
    ctx.out << t.Render();
  }
  if (!result["disk"].is_null()) {
    const auto& d = result["disk"];
    ctx.out << "\nDisk: " << d["path"].get<std::string>() << ": sequential write with fsync "
            << FormatNumber(d["write_bytes_per_second"].get<double>() / 1e6, 0) << " MB/s ("
            << FormatBytes(d["written_bytes"].get<double>()) << " in "
            << FormatNumber(d["seconds"].get<double>(), 2) << " s)";
    if (d["checkpoint_seconds"].is_number()) {
      ctx.out << "; a " << FormatBytes(d["checkpoint_bytes"].get<double>())
              << " checkpoint takes about "
              << FormatDuration(d["checkpoint_seconds"].get<double>());
    }
    ctx.out << "\n";
  }
  if (result.contains("comparison")) {
    Table t({"metric", "old", "new", "change"},
            {Align::kLeft, Align::kRight, Align::kRight, Align::kRight});
    for (const auto& row : result["comparison"]) {
      t.AddRow({row["metric"].get<std::string>(), FormatNumber(row["old"].get<double>(), 3),
                FormatNumber(row["new"].get<double>(), 3),
                row["change_fraction"].is_number()
                    ? FormatNumber(100 * row["change_fraction"].get<double>(), 1) + " %"
                    : "-"});
    }
    ctx.out << "\nCompared with " << flags.compare_file << ":\n" << t.Render();
  }
}

void RunBench(CliContext& ctx, const BenchFlags& flags) {
  Mode mode = ChooseMode(flags);
  nlohmann::json old_doc;
  if (!flags.compare_file.empty()) {
    auto text = ReadTextFile(flags.compare_file, "a `fulcrum bench --json` result");
    if (!text.ok()) return ReportError(ctx, text.status().WithContext("--compare"));
    old_doc = nlohmann::json::parse(*text, nullptr, false);
    if (!old_doc.is_object()) {
      return ReportError(ctx, Status::InvalidInput(flags.compare_file +
                                                   ": expected a `fulcrum bench --json` result"));
    }
  }
  std::optional<double> checkpoint_bytes;
  if (!flags.checkpoint_size.empty()) {
    auto bytes = ParseBytes(flags.checkpoint_size);
    if (!bytes.ok()) return ReportError(ctx, bytes.status().WithContext("--checkpoint-size"));
    checkpoint_bytes = *bytes;
  }
  double disk_bytes = mode.disk_bytes;
  if (!flags.disk_size.empty()) {
    auto bytes = ParseBytes(flags.disk_size);
    if (!bytes.ok() || *bytes <= 0)
      return ReportError(ctx,
                         Status::InvalidInput("--disk-size: expected a size such as 1GiB, found '" +
                                              flags.disk_size + "'"));
    disk_bytes = *bytes;
  }

  auto cat = catalog::Catalog::Load(DefaultCatalogDir(ctx.catalog_dir));
  if (!cat.ok()) return ReportError(ctx, cat.status());
  auto source = MakeBenchSource(flags.source, *cat);
  if (!source.ok()) return ReportError(ctx, source.status());
  std::optional<nodecheck::NodeExpectation> expectation;
  std::vector<std::string> release_argv;
  Status prepared =
      PrepareAcceptance(flags, *cat, DefaultCatalogDir(ctx.catalog_dir), expectation, release_argv);
  if (!prepared.ok()) return ReportError(ctx, prepared);
  const bool acceptance = expectation.has_value();

  if (!flags.json && isatty(STDERR_FILENO) && !flags.skip_gpu && (*source)->kind() != "sim") {
    std::fprintf(stderr, "GPU bench running (about %.0f s)...\n", mode.stability_seconds + 30);
  }
  nodecheck::NodeBenchOptions options;
  options.skip_gpu = flags.skip_gpu;
  options.gpu.quick = flags.quick;
  options.gpu.stability_seconds = mode.stability_seconds;
  options.gpu.device = flags.device;
  options.skip_disk = flags.skip_disk;
  options.disk.directory = flags.checkpoint_dir;
  options.disk.total_bytes = disk_bytes;
  options.disk.checkpoint_bytes = checkpoint_bytes;
  ProgressBar bar(stderr, !flags.json && !flags.skip_disk);
  auto measured = nodecheck::RunNodeBench(**source, Datasheets(*cat), options, [&](double f) {
    bar.Update(f, "disk write " + flags.checkpoint_dir);
  });
  bar.Finish();
  if (!measured.ok()) return ReportError(ctx, measured.status());
  nlohmann::json result = *measured;
  result["mode"] = mode.name;
  // Comparison.
  if (!old_doc.is_null()) {
    auto before = KeyFigures(old_doc);
    auto after = KeyFigures(result);
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& [name, old_value] : before) {
      auto it = after.find(name);
      if (it == after.end()) continue;
      rows.push_back(
          {{"metric", name},
           {"old", old_value},
           {"new", it->second},
           {"change_fraction", old_value != 0 ? nlohmann::json((it->second - old_value) / old_value)
                                              : nlohmann::json(nullptr)}});
    }
    result["comparison"] = rows;
  }
  if (acceptance) {
    Status st = Accept(ctx, flags, **source, *expectation, release_argv, result);
    if (!st.ok()) return ReportError(ctx, st);
  }
  if (!flags.output_file.empty()) {
    std::ofstream out(flags.output_file);
    out << WithSchemaVersion(result).dump(2) << "\n";
    if (!out) return ReportError(ctx, Status::IoError(flags.output_file + ": cannot write"));
  }
  if (flags.json) {
    PrintJson(ctx, result);
  } else {
    PrintBenchTable(ctx, flags, result);
    if (acceptance) PrintAcceptance(ctx, result);
  }
  if (acceptance && result["verdict"] == "reject") ctx.exit_code = kRejectExitCode;
}

}  // namespace

void RegisterBench(CLI::App* cmd, CliContext& ctx) {
  auto flags = std::make_shared<BenchFlags>();
  cmd->description(
      "Measure this server's GPU and checkpoint disk, and compare with the datasheet.\n\n"
      "GPU: cuBLAS GEMM TFLOP/s in bf16, fp16, tf32 and fp32 (each result checked against a\n"
      "reference first), device memory bandwidth (copy kernel, bytes read + written), pinned\n"
      "host<->device bandwidth, peer-to-peer bandwidth, and a sustained-GEMM stability run.\n"
      "Each figure gets % of the catalog's spec for the detected GPU and a verdict: low below\n"
      "70 % of spec, unstable above a 30 % swing. It needs fulcrum-gpubench (built where a CUDA\n"
      "toolkit was found), looked for beside fulcrum, then in ../libexec/fulcrum/ where\n"
      "`cmake --install` and the .deb put it; $FULCRUM_GPUBENCH names another. When it is\n"
      "missing, the skip reason says why (built without CUDA, or built but not installed).\n"
      "Disk: sequential write with fsync to --checkpoint-dir, and the time a checkpoint of\n"
      "--checkpoint-size would take. Without a GPU the GPU part says why and the rest runs.\n\n"
      "Modes: --quick (256 MiB disk, 5 s stability), --standard (2 GiB, 60 s; default),\n"
      "--long (8 GiB, 10 min).\n\n"
      "Acceptance on arrival: --expect plan.json (fulcrum plan --json) or --offer P:I judges the\n"
      "node against what the plan assumed (GPU model and count, GEMM, memory bandwidth,\n"
      "NVLink/PCIe, disk write, stability, driver/CUDA): exit 0 accept, 3 reject. With\n"
      "--release-on-reject a rejected node is released by the agent's idle release command\n"
      "(--agent-config agent.yaml); a dry run unless --arm.\n"
      "--source sim measures a simulated node (--sim-gpu, --sim-gpus, --sim-fraction, ...).\n\n"
      "Examples:\n"
      "  fulcrum bench --quick --checkpoint-dir /data/ckpt --checkpoint-size 98GB\n"
      "  fulcrum bench --json --output today.json && fulcrum bench --compare today.json\n"
      "  fulcrum bench --quick --expect plan.json --release-on-reject --agent-config agent.yaml\n"
      "  fulcrum bench --source sim --sim-gpus 8 --sim-fraction 0.6 --quick --expect plan.json");
  auto* modes = cmd->add_option_group("mode");
  modes->add_flag("--quick", flags->quick, "Short run (about a minute)");
  modes->add_flag("--standard", flags->standard, "Default run (a few minutes)");
  modes->add_flag("--long", flags->long_run, "Long stability run (about 15 minutes)");
  modes->require_option(0, 1);
  cmd->add_flag(
      "--json", flags->json,
      "Print the result object as JSON ({\"gpu\", \"gpu_skipped_reason\", \"disk\", ...})");
  cmd->add_option("--checkpoint-dir", flags->checkpoint_dir,
                  "Directory to measure (where checkpoints go)")
      ->capture_default_str();
  cmd->add_option("--checkpoint-size", flags->checkpoint_size,
                  "Checkpoint size to time, e.g. 98GB (7B model, 14 bytes/param)");
  cmd->add_option("--disk-size", flags->disk_size,
                  "Bytes to write in the disk test (overrides the mode)");
  cmd->add_option("--device", flags->device, "CUDA device index to measure")->capture_default_str();
  cmd->add_flag("--skip-gpu", flags->skip_gpu, "Do not run the GPU part");
  AddBenchSourceOptions(cmd, flags->source);
  cmd->add_flag("--skip-disk", flags->skip_disk, "Do not run the disk part");
  cmd->add_option("--output,-o", flags->output_file, "Also save the JSON result to FILE");
  cmd->add_option("--expect", flags->expect_file,
                  "Acceptance on arrival: judge this node against what a plan assumed of it "
                  "(`fulcrum plan --json` output): GPU model and count, GEMM TFLOP/s, memory "
                  "bandwidth, NVLink/PCIe, disk write, stability, driver/CUDA. Exit 0 accept, "
                  "3 reject")
      ->type_name("PLAN.json");
  cmd->add_option("--pick", flags->pick, "With --expect: the plan's candidate rank (default 1)")
      ->check(CLI::PositiveNumber)
      ->type_name("N");
  cmd->add_option("--offer", flags->offer,
                  "Acceptance against a catalog offer instead of a plan (planned in bf16)")
      ->type_name("PROVIDER:INSTANCE");
  cmd->add_flag("--release-on-reject", flags->release_on_reject,
                "On reject, release the node with the agent's idle release command "
                "(--agent-config); a dry run that prints the argv unless --arm");
  cmd->add_flag("--arm", flags->arm, "With --release-on-reject: really run the release command");
  cmd->add_option("--agent-config", flags->agent_config,
                  "The agent.yaml whose idle.command releases this node (--release-on-reject)")
      ->type_name("FILE");
  cmd->add_option("--compare", flags->compare_file,
                  "Compare with a saved result (from --output or --json)");
  cmd->callback([&ctx, flags] { RunBench(ctx, *flags); });
}

}  // namespace fulcrum::cli
