// Writes a planned candidate as a launch file for the tools teams already use: a SkyPilot task
// YAML (resources: cloud, region, instance_type, accelerators, use_spot; num_nodes; setup; run)
// or a dstack task configuration (nodes, backends, regions, instance_types, spot_policy,
// resources.gpu, commands). Names are each tool's own spellings, read from the sourced tables
// catalog/export_skypilot.csv and catalog/export_dstack.csv; a candidate a tool cannot express
// (no such cloud, region or accelerator name, reserved pricing) is skipped with the reason.
// Every string value is written YAML-quoted; the run line carries what `fulcrum run` needs (the
// price, budget, checkpoint dir and interval, job name) and the setup makes `fulcrum` available
// on the node. A Slurm export is what a batch script of the candidate holds (SlurmTask), written
// by the Slurm script writer (cluster/slurm.h). Pure text generation over immutable inputs;
// thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "catalog/catalog.h"
#include "core/status.h"
#include "plan/search.h"

namespace fulcrum::plan {

enum class ExportFormat { kSkypilot, kDstack, kSlurm };

// "skypilot" | "dstack" | "slurm"
Result<ExportFormat> ParseExportFormat(std::string_view text);
const char* ExportFormatName(ExportFormat format);
// "SkyPilot" | "dstack" | "Slurm", for messages.
const char* ExportToolName(ExportFormat format);

// One tool's spellings (catalog/export_<format>.csv: kind,provider,fulcrum,instance_prefix,name,
// instance_types,max_nodes,source).
struct ExportTables {
  ExportFormat format = ExportFormat::kSkypilot;
  std::string file;  // where the rows came from, for messages
  struct Cloud {
    std::string name;              // the tool's cloud / backend ("vastai")
    bool instance_types = false;   // fulcrum's instance type names are the tool's for this cloud
    std::optional<int> max_nodes;  // the most nodes of one task there; nullopt = no limit
  };
  std::map<std::string, Cloud> clouds;  // by fulcrum provider
  // (fulcrum provider, fulcrum region) -> the tool's region.
  std::map<std::pair<std::string, std::string>, std::string> regions;
  struct Accelerator {
    std::string provider;         // "" = every provider
    std::string gpu;              // fulcrum's canonical GPU name
    std::string instance_prefix;  // "" = every instance type
    std::string name;             // SkyPilot: "H100-MEGA"; dstack: a GPU spec "A100:80GB"
  };
  std::vector<Accelerator> accelerators;
};

// `file` names the text in messages. Unknown kinds, a cloud row without a name, a repeated
// cloud or region row: InvalidInput "file:line: column: expected ..., found ...".
Result<ExportTables> ParseExportTables(std::string_view text, const std::string& file,
                                       ExportFormat format);
// catalog_dir/export_<format>.csv; for Slurm, tables without rows (a Slurm script names no
// cloud, region or accelerator: it runs on the cluster's nodes, of any offer's shape).
Result<ExportTables> LoadExportTables(const std::string& catalog_dir, ExportFormat format);

// The tool's accelerator name for `gpu` in an offer of `provider` with `instance_type`: the
// row of that provider (else of every provider) with the longest matching instance prefix;
// "" when the table has none.
std::string ExportAcceleratorName(const ExportTables& tables, const std::string& provider,
                                  const std::string& gpu, const std::string& instance_type);

// What the tool can start, for plan --launcher (Constraints::launcher): the offers whose
// provider, region and accelerator the tables name, up to the cloud's max_nodes, on-demand or
// spot. Slurm: every offer at any node count (a batch script asks for N identical nodes of G
// GPUs, --nodes and --gres=gpu:G, and srun starts one launcher per node), in every pricing model
// but spot_with_fallback. Holds its own copy of `tables`.
LauncherFilter LauncherFilterOf(const ExportTables& tables);

struct ExportOptions {
  // Shell command that installs fulcrum on the node (run by the setup when `fulcrum` is not on
  // PATH). Required: without it the export is refused.
  std::string fulcrum_install;
  // Where the job writes its checkpoints on the node (relative to the task's working directory).
  std::string checkpoint_dir = "checkpoints";
  // With no picks: export only the best candidate the tool can launch (its header names the
  // ranks before it and why), instead of every candidate.
  bool best_launchable = false;
  // Refuse (InvalidInput on --keep-command; skipped with --pick all) a candidate on which the
  // command would not start one process per GPU, instead of rewriting the launcher's options.
  bool keep_command = false;
};

// Refuses options the export cannot use (no install command, a checkpoint dir with characters
// that would need shell quoting): InvalidInput naming the flag.
Status ValidateExportOptions(const ExportOptions& options);

// A Slurm export: what the batch script holds, for the Slurm script writer
// (cluster/slurm.h GenerateSbatch; plan does not include cluster/).
struct SlurmTask {
  std::string job_name;
  int nodes = 1;
  int gpus_per_node = 1;
  std::string header;                 // comment text (lines without "# ")
  std::vector<std::string> setup;     // shell lines on the batch host: install fulcrum if needed
  std::vector<std::string> run_args;  // `fulcrum run` options (before --)
  std::string node_command;           // shell text each node runs: exports, then the command
};
struct ExportedTask {
  int rank = 0;
  std::string text;                // SkyPilot / dstack: the task file
  std::optional<SlurmTask> slurm;  // Slurm: rendered by GenerateSbatch
};
struct SkippedCandidate {
  int rank = 0;
  std::string reason;
};
struct ExportResult {
  ExportFormat format = ExportFormat::kSkypilot;
  std::vector<ExportedTask> tasks;
  std::vector<SkippedCandidate> skipped;
};

// Renders the candidates of ranks `picks` (1-based; empty = every candidate, or with
// options.best_launchable the first the tool can launch: InvalidInput when there is none). A
// rank outside the plan is InvalidInput. A candidate the tool cannot express goes to `skipped`
// when exporting every candidate; a picked one is InvalidInput with the reason. The training
// command is rewritten for the candidate's node (core/torchrun.h RewriteLaunch: process count,
// node count, rank, rendezvous), each change stated in the task's header, and the variables it
// names for the job's shape are exported from the tool's own before the run line.
Result<ExportResult> ExportCandidates(const PlanResult& result, const catalog::Catalog& catalog,
                                      const ExportTables& tables, const ExportOptions& options,
                                      const std::vector<int>& picks);

// FILE for one pick; for every candidate, FILE with "-<rank>" before its extension
// ("task.yaml" -> "task-3.yaml").
std::string ExportFileName(const std::string& file, int rank, bool every_candidate);

// {"format", "written": [{"rank", "file"}], "skipped": [{"rank", "reason"}]}; files[i] is where
// tasks[i] was written.
nlohmann::json ExportJson(const ExportResult& result, const std::vector<std::string>& files);

}  // namespace fulcrum::plan
