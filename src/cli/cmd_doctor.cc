// `fulcrum doctor`: checks the server's software stack (see nodecheck/doctor.h).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "catalog/catalog.h"
#include "cli/bench_source_options.h"
#include "cli/cmd_doctor_compat.h"
#include "cli/command.h"
#include "core/clock.h"
#include "core/parse.h"
#include "core/paths.h"
#include "nodecheck/doctor.h"
#include "nodecheck/topology.h"
#include "store/repair.h"

namespace fulcrum::cli {
namespace {

struct DoctorFlags {
  bool json = false;
  std::string checkpoint_dir = ".";
  std::string checkpoint_size;
  int keep = 3;
  std::string repair_db;
  std::string topo_file;  // a saved `nvidia-smi topo -m` (nodecheck/topology.h)
  BenchSourceFlags source;
  CompatFlags compat;
};

// `--repair-db PATH`: the repair (store/repair.h) instead of the checks.
void RepairDb(CliContext& ctx, const DoctorFlags& flags) {
  SystemClock clock;
  auto report = store::RepairDatabase(flags.repair_db, clock.UnixSeconds());
  if (!report.ok()) return ReportError(ctx, report.status());
  const store::RepairReport& r = *report;
  if (flags.json) {
    nlohmann::json rows = nlohmann::json::object();
    for (const auto& [table, count] : r.rows) rows[table] = count;
    PrintJson(ctx, {{"repair_db",
                     {{"path", r.path},
                      {"healthy", r.healthy},
                      {"kind", r.healthy ? nlohmann::json() : nlohmann::json(r.kind)},
                      {"backup", r.healthy ? nlohmann::json() : nlohmann::json(r.backup_path)},
                      {"header_rebuilt", r.header_rebuilt},
                      {"recover_error", r.recover_error.empty() ? nlohmann::json()
                                                                : nlohmann::json(r.recover_error)},
                      {"rows", rows},
                      {"incomplete_tables", r.incomplete}}}});
    return;
  }
  if (r.healthy) {
    ctx.out << r.path << ": not damaged (PRAGMA quick_check: ok); nothing done\n";
    return;
  }
  ctx.out << r.path << ": damaged\n  backed up to " << r.backup_path << "\n";
  if (r.header_rebuilt) {
    ctx.out << "  its header (the first 100 bytes) was overwritten; rebuilt before recovery\n";
  }
  if (!r.recover_error.empty()) ctx.out << "  nothing recovered: " << r.recover_error << "\n";
  int64_t total = 0;
  std::string counts;
  for (const auto& [table, count] : r.rows) {
    total += count;
    counts += (counts.empty() ? "" : ", ") + table + " " + std::to_string(count);
  }
  ctx.out << "  recovered " << total << " row(s): " << counts << "\n";
  for (const std::string& table : r.incomplete) {
    ctx.out << "  " << table << ": damaged pages; the rows on them are in the backup only\n";
  }
  ctx.out << "  " << r.path << " is now a fresh " << r.kind << " holding the recovered rows\n";
}

void RunDoctor(CliContext& ctx, const DoctorFlags& flags) {
  if (!flags.repair_db.empty()) return RepairDb(ctx, flags);
  nodecheck::DoctorOptions options;
  options.checkpoint_dir = flags.checkpoint_dir;
  options.checkpoints_kept = flags.keep;
  if (!flags.checkpoint_size.empty()) {
    auto bytes = ParseBytes(flags.checkpoint_size);
    if (!bytes.ok()) return ReportError(ctx, bytes.status().WithContext("--checkpoint-size"));
    options.checkpoint_bytes = *bytes;
  }
  auto tables = nodecheck::LoadCompatTables(DefaultCatalogDir(ctx.catalog_dir));
  if (!tables.ok()) return ReportError(ctx, tables.status());
  const nodecheck::CompatOptions compat_options =
      ToCompatOptions(flags.compat, flags.source.source == "sim");
  if (flags.compat.offline()) {  // the verdict alone: nothing of this machine is probed
    auto report = nodecheck::CheckCompat(*tables, compat_options, {});
    if (!report.ok()) return ReportError(ctx, report.status());
    if (flags.json)
      PrintJson(ctx, {{"compat", CompatJson(*report)}});
    else
      PrintCompat(ctx, *report);
    ctx.exit_code = CompatExitCode(*report);
    return;
  }
  auto cat = catalog::Catalog::Load(DefaultCatalogDir(ctx.catalog_dir));
  if (!cat.ok()) return ReportError(ctx, cat.status());
  auto source = MakeBenchSource(flags.source, *cat);
  if (!source.ok()) return ReportError(ctx, source.status());
  nodecheck::SystemFacts facts = (*source)->GatherFacts(options);
  std::vector<nodecheck::DoctorCheck> checks = nodecheck::RunChecks(facts, tables->driver, options);
  auto topology = nodecheck::ProbeTopologyChecks(flags.topo_file, (*source)->kind(), facts.env);
  if (!topology.ok()) return ReportError(ctx, topology.status());
  checks.insert(checks.end(), topology->begin(), topology->end());
  auto compat = nodecheck::CheckCompat(*tables, compat_options, facts);
  if (!compat.ok()) return ReportError(ctx, compat.status());
  ctx.exit_code = CompatExitCode(*compat);

  if (flags.json) {
    nlohmann::json out = {{"checks", nlohmann::json::array()}, {"compat", CompatJson(*compat)}};
    if (!compat->verdict) out["compat_notes"] = compat->notes;
    for (const auto& c : checks) {
      out["checks"].push_back(
          {{"name", c.name},
           {"status", nodecheck::CheckStatusName(c.status)},
           {"finding", c.finding},
           {"fix", c.fix.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.fix)}});
    }
    PrintJson(ctx, out);
    return;
  }
  int counts[4] = {0, 0, 0, 0};
  for (const auto& c : checks) {
    ++counts[static_cast<int>(c.status)];
    char head[64];
    std::snprintf(head, sizeof head, "%-7s %-18s ", nodecheck::CheckStatusName(c.status),
                  c.name.c_str());
    ctx.out << head << c.finding << "\n";
    if (!c.fix.empty() && c.status != nodecheck::CheckStatus::kOk)
      ctx.out << std::string(27, ' ') << "fix: " << c.fix << "\n";
  }
  ctx.out << "\n"
          << counts[0] << " ok, " << counts[1] << " warn, " << counts[2] << " fail, " << counts[3]
          << " skipped\n\n";
  PrintCompat(ctx, *compat);
}

}  // namespace

void RegisterDoctor(CLI::App* cmd, CliContext& ctx) {
  auto flags = std::make_shared<DoctorFlags>();
  cmd->description(
      "Check the GPU software stack of this server: NVIDIA driver vs the CUDA toolkit and the "
      "CUDA\n"
      "builds of PyTorch / TensorFlow / JAX (minimum drivers from catalog/cuda_driver.csv, "
      "NVIDIA's\n"
      "release notes), GPU visibility (CUDA_VISIBLE_DEVICES, container runtime), persistence "
      "mode,\n"
      "ECC, application clocks, free disk in the checkpoint directory, /dev/shm, NCCL variables.\n"
      "Each check prints ok / warn / fail / skipped, what was found and how to fix it. Runs on a\n"
      "machine without a GPU and says what it could not check.\n\n"
      "Then the compatibility verdict (docs/COMPAT.md): can this driver run the CUDA of the\n"
      "job's PyTorch wheel (--python, default python3) or image (--image), and does the wheel\n"
      "carry code for this GPU? ok; minor-version (runs under CUDA minor-version compatibility,\n"
      "no PTX JIT); forward-compat (runs with the cuda-compat package: data-center GPUs only);\n"
      "fail, with the fix: the wheel index to use, the minimum driver, the compat package. The\n"
      "rules and tables are catalog/cuda_*.csv and catalog/torch_wheels.csv, each row sourced.\n"
      "Offline, without probing this machine: --driver VER --torch VER[+cuXYZ] --gpu NAME\n"
      "(any of them). A version newer than the tables is \"not in the table (data as of "
      "DATE)\".\n\n"
      "Exit 0 when the checks ran, whatever they found, and the verdict is not fail; 3 when the\n"
      "verdict is fail; 2 on bad input (unknown driver/torch/GPU names, with the nearest "
      "known).\n\n"
      "--source sim reports a simulated node's GPU stack (see bench --sim-*).\n\n"
      "--repair-db PATH repairs a damaged agent.db or jobs.db instead (stop the agent or job\n"
      "using it first): backs the file up to PATH.damaged-<UTC time>, recovers what SQLite's\n"
      "recovery gets (the sqlite3 tool's .recover), and replaces it with a fresh file holding\n"
      "the recovered rows.\n\n"
      "Examples:\n  fulcrum doctor --checkpoint-dir /data/ckpt --checkpoint-size 98GB\n"
      "  fulcrum doctor --source sim --sim-gpus 8\n"
      "  fulcrum doctor --python /opt/venv/bin/python --image nvcr.io/nvidia/pytorch:24.05-py3\n"
      "  fulcrum doctor --driver 470.182.03 --torch 2.1.0+cu121 --gpu A100 --json\n"
      "  fulcrum doctor --repair-db ~/.local/share/fulcrum/jobs.db");
  cmd->add_flag("--json", flags->json,
                "Print {\"checks\": [{name, status, finding, fix}], \"compat\": {verdict, driver, "
                "cuda_runtime, wheel_cuda, gpu_arch, reasons, fix}} (offline: compat only)");
  cmd->add_option("--checkpoint-dir", flags->checkpoint_dir,
                  "Directory checkpoints go to (disk check)")
      ->capture_default_str();
  cmd->add_option(
      "--checkpoint-size", flags->checkpoint_size,
      "Size of one checkpoint (e.g. 98GB for a 7B model at 14 bytes/param); the disk check "
      "then asks for room for --keep + 1 of them");
  cmd->add_option("--keep", flags->keep, "Checkpoints kept (disk check)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--repair-db", flags->repair_db,
                  "Repair this damaged agent.db or jobs.db (back up, recover, fresh file) "
                  "instead of checking the stack");
  cmd->add_option("--topo-file", flags->topo_file,
                  "The GPUs' wiring (checks gpu-interconnect: NVLink or PCIe per pair, "
                  "numa-affinity, nccl-topology: NCCL_P2P/NCCL_IB hints) from this saved "
                  "`nvidia-smi topo -m` output instead of running it")
      ->type_name("FILE");
  AddBenchSourceOptions(cmd, flags->source);
  AddCompatOptions(cmd, flags->compat);
  cmd->callback([&ctx, flags] { RunDoctor(ctx, *flags); });
}

}  // namespace fulcrum::cli
