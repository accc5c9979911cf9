#include "plan/export.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "core/input_error.h"
#include "core/parse.h"
#include "core/row_reader.h"
#include "core/torchrun.h"
#include "plan/cost.h"
#include "plan/frameworks.h"
#include "plan/report.h"

namespace fulcrum::plan {
namespace {

const TableSchema kSchema = {{"kind", "provider", "fulcrum", "instance_prefix", "name", "source"},
                             {"instance_types", "max_nodes"}};

// THE quoting helper: every string value of an export is written through it, as a YAML
// double-quoted scalar (JSON string syntax, which YAML 1.1 and 1.2 both read back verbatim), so
// that nothing can be read as a number ("4090:2" is base 60 in YAML 1.1), a bool, null, a
// flow sequence or a comment.
std::string YamlString(std::string_view text) {
  return nlohmann::json(std::string(text))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A YAML literal block (`key: |`) holding `lines`, each indented by `indent` spaces.
std::string YamlBlock(const std::vector<std::string>& lines, int indent) {
  std::string out = "|\n";
  for (const std::string& line : lines) {
    for (const std::string& part : Split(line, '\n')) {
      out += std::string(static_cast<size_t>(indent), ' ') + part + "\n";
    }
  }
  return out;
}

// fmt's shortest round-trip form of the value rounded to 1e-6: 32.77, 20000, 0.5, 270.648
// (3 x 90.216 is 270.64799999999997 in binary floating point).
std::string Number(double value) { return fmt::format("{}", std::round(value * 1e6) / 1e6); }

// A job name fulcrum run, SkyPilot and dstack all accept: "fulcrum-" + the model's name in
// lower-case letters, digits and '-' (dstack: ^[a-z][a-z0-9-]{1,40}$).
std::string JobName(const std::string& model) {
  std::string name = "fulcrum-";
  for (char ch : model) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c)) {
      name += static_cast<char>(std::tolower(c));
    } else if (name.back() != '-') {
      name += '-';
    }
  }
  while (name.back() == '-') name.pop_back();
  if (name.size() > 40) name.resize(40);
  while (name.back() == '-') name.pop_back();
  return name;
}

// Where a candidate lands in the tool's terms, or why it cannot.
struct Placement {
  std::string cloud, region, accelerator, instance_type;  // instance_type "" = leave it out
  double cluster_usd_per_hour = 0;                        // all nodes
  std::string skip_reason;                                // non-empty: not exportable
};

// Why the tool cannot start offer `o` at all ("" when it can): no cloud, region or accelerator
// name for it in the tool's table.
std::string OfferSkipReason(const catalog::Offer& o, const ExportTables& t) {
  if (t.format == ExportFormat::kSlurm) return "";  // the cluster's nodes: any offer's shape
  const char* tool = ExportToolName(t.format);
  const std::string table = std::string("catalog/export_") + ExportFormatName(t.format) + ".csv";
  if (t.clouds.find(o.provider) == t.clouds.end()) {
    return fmt::format("provider {}: not a {} {} ({} has no row for it)", o.provider, tool,
                       t.format == ExportFormat::kDstack ? "backend" : "cloud", table);
  }
  if (t.regions.find({o.provider, o.region}) == t.regions.end()) {
    return fmt::format("region \"{}\" of {}: no {} spelling in {}", o.region, o.provider, tool,
                       table);
  }
  if (ExportAcceleratorName(t, o.provider, o.gpu, o.instance_type).empty()) {
    return fmt::format("GPU {} on {} ({}): no {} accelerator name in {}", o.gpu, o.provider,
                       o.instance_type, tool, table);
  }
  return "";
}

// The pricing models a Slurm batch script can run on: the nodes of the cluster, bought on demand,
// reserved or as spot (a preempted node ends the job; the script's --requeue and its requeue
// after a notice resume it from the last checkpoint). Not spot_with_fallback: a batch script
// cannot move its job to on-demand capacity near the deadline.
bool SlurmRuns(PricingModel p) { return p != PricingModel::kSpotWithFallback; }

Placement PlaceOnSlurm(const Candidate& c, const catalog::Catalog& catalog) {
  Placement p;
  const catalog::Offer& o = catalog.offers()[static_cast<size_t>(c.offer)];
  if (!SlurmRuns(c.pricing)) {
    p.skip_reason = fmt::format(
        "{} pricing: a Slurm batch script runs on the cluster's nodes and cannot move the job "
        "to on-demand capacity near the deadline",
        PricingModelName(c.pricing));
    return p;
  }
  std::optional<double> hourly = HourlyPriceUsd(o, catalog.FindProvider(o.provider), c.pricing);
  if (!hourly) {
    p.skip_reason = fmt::format("{} {}: no {} price in the catalog", o.provider, o.instance_type,
                                PricingModelName(c.pricing));
    return p;
  }
  p.cluster_usd_per_hour = *hourly * c.nodes;
  return p;
}

Placement Place(const Candidate& c, const catalog::Catalog& catalog, const ExportTables& t) {
  Placement p;
  const catalog::Offer& o = catalog.offers()[static_cast<size_t>(c.offer)];
  const char* tool = ExportToolName(t.format);
  const std::string table = std::string("catalog/export_") + ExportFormatName(t.format) + ".csv";
  if (t.format == ExportFormat::kSlurm) return PlaceOnSlurm(c, catalog);
  if (c.pricing != PricingModel::kOnDemand && c.pricing != PricingModel::kSpot) {
    p.skip_reason = fmt::format("{} pricing: {} launches on-demand or spot capacity only",
                                PricingModelName(c.pricing), tool);
    return p;
  }
  p.skip_reason = OfferSkipReason(o, t);
  if (!p.skip_reason.empty()) return p;
  const ExportTables::Cloud& cloud = t.clouds.at(o.provider);
  if (cloud.max_nodes && c.nodes > *cloud.max_nodes) {
    p.skip_reason = fmt::format("{} nodes on {}: {} runs at most {} node(s) per task there ({})",
                                c.nodes, o.provider, tool, *cloud.max_nodes, table);
    return p;
  }
  p.accelerator = ExportAcceleratorName(t, o.provider, o.gpu, o.instance_type);
  std::optional<double> hourly = HourlyPriceUsd(o, catalog.FindProvider(o.provider), c.pricing);
  if (!hourly) {
    p.skip_reason = fmt::format("{} {}: no {} price in the catalog", o.provider, o.instance_type,
                                PricingModelName(c.pricing));
    return p;
  }
  p.cloud = cloud.name;
  p.region = t.regions.at({o.provider, o.region});
  if (cloud.instance_types) p.instance_type = o.instance_type;
  p.cluster_usd_per_hour = *hourly * c.nodes;
  return p;
}

std::vector<std::string> SetupLines(const ExportOptions& options) {
  return {"command -v fulcrum >/dev/null 2>&1 || { " + options.fulcrum_install +
              "; } || echo \"setup: the --fulcrum-install command failed (exit $?)\" >&2",
          "command -v fulcrum >/dev/null 2>&1 || { echo 'setup: fulcrum is not on PATH after "
          "the --fulcrum-install command' >&2; exit 1; }"};
}

// The environment each tool gives every node of a task, and the launcher options and variables
// built from it (static rendezvous on the first node, as both tools' own examples launch it).
// SkyPilot: skypilot-org/skypilot docs/source/running-jobs/distributed-jobs.rst
// ($SKYPILOT_NUM_GPUS_PER_NODE, $SKYPILOT_NUM_NODES, $SKYPILOT_NODE_RANK, the first line of
// $SKYPILOT_NODE_IPS as master_addr, master_port 8008). dstack: dstackai/dstack
// runner/internal/executor/executor.go jobEnvs ($DSTACK_GPUS_PER_NODE, $DSTACK_NODES_NUM,
// $DSTACK_NODE_RANK, $DSTACK_MASTER_NODE_IP) and examples/distributed-training/torchrun.
// Process counts are written as the picked offer's numbers; what only the node knows (its
// rank, the first node's address) from the tool's variables.
struct NodeEnv {
  const char* node_count;
  const char* node_rank;
  const char* master_addr;
  const char* gpus_per_node_var;
  const char* rank_hint;  // how the comment names the variables for a non-launcher command
};
constexpr NodeEnv kSkypilotEnv = {"\"$SKYPILOT_NUM_NODES\"", "\"$SKYPILOT_NODE_RANK\"",
                                  "\"$(echo \"$SKYPILOT_NODE_IPS\" | head -n1)\"",
                                  "SKYPILOT_NUM_GPUS_PER_NODE",
                                  "$SKYPILOT_NODE_RANK, $SKYPILOT_NODE_IPS"};
constexpr NodeEnv kDstackEnv = {"\"$DSTACK_NODES_NUM\"", "\"$DSTACK_NODE_RANK\"",
                                "\"$DSTACK_MASTER_NODE_IP\"", "DSTACK_GPUS_PER_NODE",
                                "$DSTACK_NODE_RANK, $DSTACK_MASTER_NODE_IP"};
constexpr int kMasterPort = 8008;
// Slurm: core/torchrun.h SlurmNodeLaunch (srun's task variables and the batch script's
// MASTER_ADDR/MASTER_PORT, the first host of the job's node list).
constexpr NodeEnv kSlurmEnv = {"\"$SLURM_JOB_NUM_NODES\"", "\"$SLURM_NODEID\"", "\"$MASTER_ADDR\"",
                               "SLURM_GPUS_ON_NODE", "$SLURM_NODEID, $MASTER_ADDR"};

const NodeEnv& EnvOf(ExportFormat format) {
  switch (format) {
    case ExportFormat::kSkypilot:
      return kSkypilotEnv;
    case ExportFormat::kDstack:
      return kDstackEnv;
    case ExportFormat::kSlurm:
      break;
  }
  return kSlurmEnv;
}

// What a node of candidate `c` (on offer `o`) knows, in the tool's terms.
NodeLaunch NodeOf(const Candidate& c, const catalog::Offer& o, ExportFormat format) {
  if (format == ExportFormat::kSlurm) return SlurmNodeLaunch(c.nodes, o.gpu_count);
  const NodeEnv& env = EnvOf(format);
  NodeLaunch node;
  node.gpus_per_node = o.gpu_count;
  node.nodes = c.nodes;
  node.shell[NodeQuantity::kNodeCount] = env.node_count;
  node.shell[NodeQuantity::kNodeRank] = env.node_rank;
  node.shell[NodeQuantity::kMasterAddr] = env.master_addr;
  node.shell[NodeQuantity::kMasterPort] = std::to_string(kMasterPort);
  node.shell[NodeQuantity::kGpusPerNode] = std::to_string(o.gpu_count);
  node.shell[NodeQuantity::kWorldSize] = std::to_string(o.gpu_count * c.nodes);
  const std::string count = env.node_count, rank = env.node_rank;
  node.own_variables[count.substr(2, count.size() - 3)] = NodeQuantity::kNodeCount;
  node.own_variables[rank.substr(2, rank.size() - 3)] = NodeQuantity::kNodeRank;
  node.own_variables[env.gpus_per_node_var] = NodeQuantity::kGpusPerNode;
  return node;
}

// The spec's training command; without one, the placeholder the header asks to replace.
std::string TrainingCommand(const PlanResult& r) {
  return r.spec.command.empty() ? "python train.py" : r.spec.command;
}

// The training command as a node of `c` runs it, and what changed (core/torchrun.h
// RewriteShellCommand).
struct NodeCommand {
  std::string text;
  LaunchRewrite rewrite;
  NodeLaunch node;
};
NodeCommand CommandOnNode(const PlanResult& r, const Candidate& c, const catalog::Offer& o,
                          ExportFormat format) {
  NodeCommand out;
  out.node = NodeOf(c, o, format);
  // Megatron-LM, NeMo and Megatron-Bridge take the layout as arguments: without them
  // pretrain_gpt.py would run tp 1, pp 1, micro-batch 1 in fp32, and NeMo or a Bridge recipe
  // their config's layout (and NeMo's Lightning trainer one node), whatever was planned; an HF
  // Trainer script takes the micro-batch and the accumulation.
  out.node.script_options = ScriptLayoutOptions(r.layout_arguments, r.model, c.layout.training,
                                                out.node.nodes, out.node.gpus_per_node);
  ShellCommandRewrite rewritten = RewriteShellCommand(TrainingCommand(r), out.node);
  out.text = std::move(rewritten.text);
  out.rewrite = std::move(rewritten.rewrite);
  return out;
}

// `export NAME=...` for each variable the command names for the job's shape, from the tool's
// own; the shell expands the command's $NAME after these lines.
std::vector<std::string> VariableLines(const PlanResult& r, const NodeLaunch& node) {
  return NodeVariableExports(TrainingCommand(r), node);
}

// The `fulcrum run` options. The price is the whole cluster's (every node's supervisor then
// sees the cluster's spend and stops at the same budget).
std::vector<std::string> RunArgs(const PlanResult& r, const Candidate& c, const Placement& p,
                                 const ExportOptions& options) {
  std::vector<std::string> args = {"--name", JobName(r.model.name)};
  if (r.spec.checkpointing) {
    args.insert(args.end(), {"--checkpoint-dir", options.checkpoint_dir});
    if (c.run.checkpoint_interval_seconds > 0) {
      args.insert(args.end(),
                  {"--checkpoint-every",
                   fmt::format("{:.0f}s", std::ceil(c.run.checkpoint_interval_seconds))});
    }
  }
  args.insert(args.end(), {"--price-per-hour", Number(p.cluster_usd_per_hour)});
  if (r.spec.constraints.budget_usd) {
    args.insert(args.end(), {"--budget-usd", Number(*r.spec.constraints.budget_usd)});
  }
  return args;
}

// The `fulcrum run` line (the options are plain words: no quoting needed).
std::string RunLine(const PlanResult& r, const Candidate& c, const Placement& p,
                    const ExportOptions& options, const NodeCommand& command) {
  std::string line = "fulcrum run";
  for (const std::string& arg : RunArgs(r, c, p, options)) line += " " + arg;
  return line + " -- " + command.text;
}

// `text` as YAML comment lines: each line "# "-prefixed, so that no name from the catalog or the
// model can end the comment.
std::string Comment(const std::string& text) {
  std::string out;
  for (const std::string& line : Split(text, '\n')) {
    std::string clean = line;
    std::replace(clean.begin(), clean.end(), '\r', ' ');
    if (!clean.empty()) out += "# " + clean + "\n";
  }
  return out;
}

std::string Header(const PlanResult& r, const Candidate& c, const catalog::Offer& o,
                   const Placement& p, ExportFormat format, const NodeCommand& command,
                   const std::string& pick_note) {
  std::string h = fmt::format(
      "Generated by `fulcrum plan` for {} (rank {}): {} x {} on {} {} ({}), layout {}.\n"
      "Expected {} and {} (P90 {}); the run line bills {}/h for the {} node(s).\n",
      r.model.name, c.rank, c.nodes, o.instance_type, o.provider, o.region,
      PricingModelName(c.pricing), LayoutLabel(c.layout.training),
      FormatDuration(c.run.total_seconds), FormatUsd(c.run.expected_usd), FormatUsd(c.run.p90_usd),
      FormatUsd(p.cluster_usd_per_hour), c.nodes);
  h += pick_note;
  if (r.spec.command.empty()) h += "Replace `python train.py` with your training command.\n";
  const LaunchRewrite& rw = command.rewrite;
  if (!rw.changes.empty()) {
    h += fmt::format(
        "The command is changed for {} GPU(s) per node x {} node(s) (--keep-command "
        "refuses instead):\n",
        o.gpu_count, c.nodes);
    for (const std::string& change : rw.changes) h += "  " + change + "\n";
  }
  for (const std::string& line : VariableLines(r, command.node)) {
    h += "The command's $" + line.substr(7, line.find('=') - 7) + " is set before it (" +
         line.substr(7) + ").\n";
  }
  // Whatever the framework: the plan's memory and time are of this layout (an unknown
  // `torchrun train.py` planned as FSDP SHARD_GRAD_OP at micro-batch 2 runs out of memory as plain
  // DDP), so a command the export could not give it to is told what to run.
  if (command.node.script_options.empty() && !r.spec.command.empty()) {
    const workload::Training& t = c.layout.training;
    h += fmt::format(
        "fulcrum does not know how this command's script takes its layout: give it {} {} and "
        "global batch {} yourself ({} accumulation step(s) of micro-batch {}); the plan's memory "
        "and time assume it.\n",
        workload::FrameworkName(t.framework), LayoutLabel(t), t.global_batch,
        workload::MicroBatchesPerStep(t), t.micro_batch);
  }
  if (rw.launcher == Launcher::kNone && o.gpu_count > 1) {
    h += fmt::format(
        "The command is not a launcher fulcrum reads (torchrun, accelerate launch, deepspeed, "
        "python SCRIPT): it must start {} processes, one per GPU, itself.\n",
        o.gpu_count);
  }
  if (rw.launcher == Launcher::kNone && c.nodes > 1) {
    h += fmt::format(
        "The command runs once on each of the {} nodes: it must join the others itself ({}).\n",
        c.nodes, EnvOf(format).rank_hint);
  }
  return h;
}

std::string SkypilotTask(const PlanResult& r, const Candidate& c, const catalog::Offer& o,
                         const Placement& p, const ExportOptions& options,
                         const NodeCommand& command) {
  // Fields as SkyPilot's task schema names them (skypilot-org/skypilot@00052dfe0d13
  // sky/utils/schemas.py: get_task_schema has name, resources, num_nodes, setup, run;
  // _get_single_resources_schema has cloud, region, instance_type, accelerators, use_spot).
  std::string out = "name: " + YamlString(JobName(r.model.name)) + "\n";
  out += "resources:\n";
  out += "  cloud: " + YamlString(p.cloud) + "\n";
  out += "  region: " + YamlString(p.region) + "\n";
  if (!p.instance_type.empty()) out += "  instance_type: " + YamlString(p.instance_type) + "\n";
  out += "  accelerators: " + YamlString(fmt::format("{}:{}", p.accelerator, o.gpu_count)) + "\n";
  out += std::string("  use_spot: ") + (c.pricing == PricingModel::kSpot ? "true" : "false") + "\n";
  out += fmt::format("num_nodes: {}\n", c.nodes);
  out += "setup: " + YamlBlock(SetupLines(options), 2);
  std::vector<std::string> run = VariableLines(r, command.node);
  run.push_back(RunLine(r, c, p, options, command));
  out += "run: " + YamlBlock(run, 2);
  return out;
}

std::string DstackTask(const PlanResult& r, const Candidate& c, const catalog::Offer& o,
                       const Placement& p, const ExportOptions& options,
                       const NodeCommand& command) {
  // Fields as dstack's task configuration names them (dstackai/dstack@511c318c8a76
  // src/dstack/_internal/core/models/configurations.py TaskConfiguration: type, name, nodes,
  // commands, resources; profiles.py ProfileParams: backends, regions, instance_types,
  // spot_policy spot|on-demand|auto; resources.py GPUSpec "name:memory:count"). The commands
  // run in one shell, joined by " && " (dstackai/dstack@01fda0fcd0c3
  // src/dstack/_internal/server/services/jobs/configurators/base.py _join_shell_commands), so
  // an `export` holds for the run line.
  std::string out = "type: task\n";
  out += "name: " + YamlString(JobName(r.model.name)) + "\n";
  out += fmt::format("nodes: {}\n", c.nodes);
  out += "backends: [" + YamlString(p.cloud) + "]\n";
  out += "regions: [" + YamlString(p.region) + "]\n";
  if (!p.instance_type.empty()) out += "instance_types: [" + YamlString(p.instance_type) + "]\n";
  out +=
      "spot_policy: " + YamlString(c.pricing == PricingModel::kSpot ? "spot" : "on-demand") + "\n";
  out += "resources:\n";
  out += "  gpu: " + YamlString(fmt::format("{}:{}", p.accelerator, o.gpu_count)) + "\n";
  out += "commands:\n";
  for (const std::string& line : SetupLines(options)) out += "  - " + YamlString(line) + "\n";
  for (const std::string& line : VariableLines(r, command.node)) {
    out += "  - " + YamlString(line) + "\n";
  }
  out += "  - " + YamlString(RunLine(r, c, p, options, command)) + "\n";
  return out;
}

// What the Slurm script of candidate `c` holds (cluster/slurm.h GenerateSbatch writes it): the
// batch host installs fulcrum if needed and runs one `fulcrum run`; each node runs the exports
// of the command's variables and the command rewritten for it (exec'd when it is a launcher
// fulcrum reads, so that Slurm's signals reach it).
SlurmTask SlurmTaskOf(const PlanResult& r, const Candidate& c, const catalog::Offer& o,
                      const Placement& p, const ExportOptions& options, const NodeCommand& command,
                      const std::string& header) {
  SlurmTask t;
  t.job_name = JobName(r.model.name);
  t.nodes = c.nodes;
  t.gpus_per_node = o.gpu_count;
  t.header = header;
  t.setup = SetupLines(options);
  t.run_args = RunArgs(r, c, p, options);
  for (const std::string& line : VariableLines(r, command.node)) t.node_command += line + "\n";
  t.node_command += (command.rewrite.launcher == Launcher::kNone ? "" : "exec ") + command.text;
  return t;
}

// An InvalidInput on --pick with its ErrorDetail.
Status PickError(const std::string& expected, int pick, const std::string& message) {
  ErrorDetail detail;
  detail.field = "--pick";
  detail.expected = expected;
  detail.found = std::to_string(pick);
  return Status::InvalidInput(message).WithDetail(detail);
}

const char* KindNames() { return "cloud, region or accelerator"; }

}  // namespace

Result<ExportFormat> ParseExportFormat(std::string_view text) {
  const std::string t = ToLower(Trim(text));
  if (t == "skypilot" || t == "sky") return ExportFormat::kSkypilot;
  if (t == "dstack") return ExportFormat::kDstack;
  if (t == "slurm") return ExportFormat::kSlurm;
  ErrorDetail detail;
  detail.field = "--export";
  detail.expected = "skypilot, dstack or slurm";
  detail.found = std::string(text);
  detail.nearest = NearestNames(t, {"skypilot", "dstack", "slurm"});
  return Status::InvalidInput("--export: expected skypilot, dstack or slurm, found \"" +
                              std::string(text) + "\"")
      .WithDetail(detail);
}

const char* ExportFormatName(ExportFormat format) {
  switch (format) {
    case ExportFormat::kSkypilot:
      return "skypilot";
    case ExportFormat::kDstack:
      return "dstack";
    case ExportFormat::kSlurm:
      break;
  }
  return "slurm";
}

const char* ExportToolName(ExportFormat format) {
  switch (format) {
    case ExportFormat::kSkypilot:
      return "SkyPilot";
    case ExportFormat::kDstack:
      return "dstack";
    case ExportFormat::kSlurm:
      break;
  }
  return "Slurm";
}

namespace {

Result<ExportTables> TablesFrom(const CsvTable& table, ExportFormat format) {
  ExportTables t;
  t.format = format;
  t.file = table.file;
  for (size_t i = 0; i < table.size(); ++i) {
    RowReader row = table.Row(i);
    FULCRUM_ASSIGN_OR_RETURN(std::string kind, row.RequiredText("kind"));
    FULCRUM_ASSIGN_OR_RETURN(std::string name, row.RequiredText("name"));
    FULCRUM_RETURN_IF_ERROR(row.RequiredText("source").status());
    const std::string provider = row.Text("provider");
    const std::string fulcrum = row.Text("fulcrum");
    if (kind == "cloud") {
      if (provider.empty()) return row.Error("provider", "the fulcrum provider of the cloud");
      FULCRUM_ASSIGN_OR_RETURN(std::optional<bool> instance_types,
                               row.OptionalBool("instance_types"));
      FULCRUM_ASSIGN_OR_RETURN(std::optional<int> max_nodes,
                               row.OptionalInt("max_nodes", 1, 1000000));
      if (!t.clouds
               .emplace(provider,
                        ExportTables::Cloud{name, instance_types.value_or(false), max_nodes})
               .second) {
        return row.Error("provider", "one cloud row per provider");
      }
    } else if (kind == "region") {
      if (provider.empty()) return row.Error("provider", "the fulcrum provider of the region");
      if (fulcrum.empty()) return row.Error("fulcrum", "fulcrum's spelling of the region");
      if (!t.regions.emplace(std::make_pair(provider, fulcrum), name).second) {
        return row.Error("fulcrum", "one row per provider and region");
      }
    } else if (kind == "accelerator") {
      if (fulcrum.empty()) return row.Error("fulcrum", "fulcrum's canonical GPU name");
      t.accelerators.push_back({provider, fulcrum, row.Text("instance_prefix"), name});
    } else {
      return row.Error("kind", KindNames(), NearestNames(kind, {"cloud", "region", "accelerator"}));
    }
  }
  return t;
}

}  // namespace

Result<ExportTables> ParseExportTables(std::string_view text, const std::string& file,
                                       ExportFormat format) {
  FULCRUM_ASSIGN_OR_RETURN(CsvTable table, ParseTable(text, file, kSchema));
  return TablesFrom(table, format);
}

Result<ExportTables> LoadExportTables(const std::string& catalog_dir, ExportFormat format) {
  if (format == ExportFormat::kSlurm) {
    ExportTables slurm;  // no spellings: the script names no cloud, region or accelerator
    slurm.format = format;
    return slurm;
  }
  const std::string path = catalog_dir + "/export_" + ExportFormatName(format) + ".csv";
  FULCRUM_ASSIGN_OR_RETURN(CsvTable table, LoadTableFile(path, kSchema));
  return TablesFrom(table, format);
}

std::string ExportAcceleratorName(const ExportTables& tables, const std::string& provider,
                                  const std::string& gpu, const std::string& instance_type) {
  const ExportTables::Accelerator* best = nullptr;
  auto score = [&](const ExportTables::Accelerator& a) {
    return static_cast<int>(a.instance_prefix.size()) * 2 + (a.provider.empty() ? 0 : 1);
  };
  for (const ExportTables::Accelerator& a : tables.accelerators) {
    if (a.gpu != gpu || (!a.provider.empty() && a.provider != provider)) continue;
    if (instance_type.compare(0, a.instance_prefix.size(), a.instance_prefix) != 0) continue;
    if (best == nullptr || score(a) > score(*best)) best = &a;
  }
  return best == nullptr ? "" : best->name;
}

LauncherFilter LauncherFilterOf(const ExportTables& tables) {
  LauncherFilter filter;
  filter.name = ExportToolName(tables.format);
  auto shared = std::make_shared<const ExportTables>(tables);
  filter.max_nodes = [shared](const catalog::Offer& o) -> std::optional<std::optional<int>> {
    if (!OfferSkipReason(o, *shared).empty()) return std::nullopt;
    if (shared->format == ExportFormat::kSlurm) return std::optional<int>();  // no node limit
    return shared->clouds.at(o.provider).max_nodes;
  };
  // Place(): both tools launch on-demand or spot capacity only; Slurm runs every pricing model
  // but spot_with_fallback (SlurmRuns).
  filter.pricing = {PricingModel::kOnDemand, PricingModel::kSpot};
  if (tables.format == ExportFormat::kSlurm) {
    filter.pricing.clear();
    for (int i = 0; i < kPricingModelCount; ++i) {
      const auto p = static_cast<PricingModel>(i);
      if (SlurmRuns(p)) filter.pricing.push_back(p);
    }
  }
  return filter;
}

Status ValidateExportOptions(const ExportOptions& options) {
  if (Trim(options.fulcrum_install).empty()) {
    ErrorDetail detail;
    detail.field = "--fulcrum-install";
    detail.expected = "a shell command that installs fulcrum on the node";
    detail.found = "";
    return Status::InvalidInput(
               "--export: the node needs fulcrum and nothing would install it: give "
               "--fulcrum-install COMMAND (run by the task's setup when fulcrum is not on PATH), "
               "e.g. --fulcrum-install 'sudo apt-get install -y ./fulcrum_0.1.0_amd64.deb' "
               "(the .deb uploaded with the workdir) or 'git clone URL fulcrum && sudo "
               "fulcrum/scripts/setup.sh && sudo cmake --install fulcrum/build'")
        .WithDetail(detail);
  }
  const std::string& dir = options.checkpoint_dir;
  const bool plain = !dir.empty() && std::all_of(dir.begin(), dir.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return std::isalnum(c) || ch == '.' || ch == '_' || ch == '/' || ch == '-' || ch == '~';
  });
  if (!plain) {
    ErrorDetail detail;
    detail.field = "--checkpoint-dir";
    detail.expected = "a path of letters, digits and . _ / - ~";
    detail.found = dir;
    return Status::InvalidInput(
               "--checkpoint-dir: expected a path of letters, digits and . _ / "
               "- ~ (it goes unquoted into the task's shell), found \"" +
               dir + "\"")
        .WithDetail(detail);
  }
  return Status::Ok();
}

namespace {

// The --keep-command refusal for a command that would start the wrong processes on `c`.
std::string KeepCommandReason(const Candidate& c, const catalog::Offer& o,
                              const LaunchRewrite& rewrite) {
  std::string changes;
  for (const std::string& change : rewrite.changes) {
    changes += (changes.empty() ? "" : "; ") + change;
  }
  return fmt::format(
      "--keep-command: the command does not run the planned layout with {} process(es) per "
      "node on {} GPU(s) x {} node(s): {}",
      o.gpu_count, o.gpu_count, c.nodes, changes);
}

// "--pick" for a rank picked by the user; "--keep-command" for a command kept as written.
Status RefuseCandidate(const std::string& flag, int pick, const std::string& expected,
                       const std::string& message) {
  if (flag == "--pick") return PickError(expected, pick, message);
  ErrorDetail detail;
  detail.field = flag;
  detail.expected = expected;
  detail.found = std::to_string(pick);
  return Status::InvalidInput(message).WithDetail(detail);
}

// The header line of a candidate exported as the best one the tool can launch.
std::string BestPickNote(const ExportResult& so_far, int pick, const char* tool) {
  if (so_far.skipped.empty()) return "";
  std::string reasons;
  for (const SkippedCandidate& s : so_far.skipped) {
    if (reasons.size() > 400) {
      reasons += "; ...";
      break;
    }
    reasons += fmt::format("{}rank {}: {}", reasons.empty() ? "" : "; ", s.rank, s.reason);
  }
  return fmt::format("Rank {} is the best candidate {} can launch ({}).\n", pick, tool, reasons);
}

}  // namespace

Result<ExportResult> ExportCandidates(const PlanResult& r, const catalog::Catalog& catalog,
                                      const ExportTables& tables, const ExportOptions& options,
                                      const std::vector<int>& picks) {
  FULCRUM_RETURN_IF_ERROR(ValidateExportOptions(options));
  std::vector<int> ranks = picks;
  if (ranks.empty()) {
    for (size_t i = 0; i < r.candidates.size(); ++i) ranks.push_back(static_cast<int>(i) + 1);
  }
  const bool best = picks.empty() && options.best_launchable;
  const char* tool = ExportToolName(tables.format);
  ExportResult out;
  out.format = tables.format;
  for (int pick : ranks) {
    if (pick < 1 || pick > static_cast<int>(r.candidates.size())) {
      return PickError(
          fmt::format("a rank from 1 to {}", r.candidates.size()), pick,
          fmt::format("--pick: expected a rank from 1 to {}, found {}", r.candidates.size(), pick));
    }
    const Candidate& c = r.candidates[static_cast<size_t>(pick) - 1];
    const catalog::Offer& o = catalog.offers()[static_cast<size_t>(c.offer)];
    const Placement p = Place(c, catalog, tables);
    if (!p.skip_reason.empty() && !picks.empty()) {
      return PickError(fmt::format("a candidate {} can launch", tool), pick,
                       fmt::format("--pick {}: {} cannot launch this candidate: {} (--pick all "
                                   "exports every candidate it can)",
                                   pick, tool, p.skip_reason));
    }
    if (!p.skip_reason.empty()) {
      out.skipped.push_back({pick, p.skip_reason});
      continue;
    }
    const NodeCommand command = CommandOnNode(r, c, o, tables.format);
    if (options.keep_command && !command.rewrite.changes.empty()) {
      const std::string reason = KeepCommandReason(c, o, command.rewrite);
      if (!picks.empty() || best) {
        return RefuseCandidate("--keep-command", pick,
                               "a command that starts the planned processes",
                               fmt::format("rank {}: {}", pick, reason));
      }
      out.skipped.push_back({pick, reason});
      continue;
    }
    const std::string note = best ? BestPickNote(out, pick, tool) : "";
    const std::string header = Header(r, c, o, p, tables.format, command, note);
    if (tables.format == ExportFormat::kSlurm) {
      out.tasks.push_back({pick, "", SlurmTaskOf(r, c, o, p, options, command, header)});
    } else {
      out.tasks.push_back({pick,
                           Comment(header) + (tables.format == ExportFormat::kSkypilot
                                                  ? SkypilotTask(r, c, o, p, options, command)
                                                  : DstackTask(r, c, o, p, options, command)),
                           std::nullopt});
    }
    if (best) return out;
  }
  if (best) {
    return RefuseCandidate(
        "--export", 0, fmt::format("a plan with a candidate {} can launch", tool),
        fmt::format(
            "--export {}: {} can launch none of the plan's {} candidate(s){}",
            ExportFormatName(tables.format), tool, r.candidates.size(),
            out.skipped.empty() ? std::string() : " (rank 1: " + out.skipped.front().reason + ")"));
  }
  return out;
}

std::string ExportFileName(const std::string& file, int rank, bool every_candidate) {
  if (!every_candidate) return file;
  const size_t slash = file.find_last_of('/');
  const size_t dot = file.find_last_of('.');
  const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash + 1);
  const std::string suffix = "-" + std::to_string(rank);
  return has_ext ? file.substr(0, dot) + suffix + file.substr(dot) : file + suffix;
}

nlohmann::json ExportJson(const ExportResult& result, const std::vector<std::string>& files) {
  nlohmann::json j;
  j["format"] = ExportFormatName(result.format);
  j["written"] = nlohmann::json::array();
  for (size_t i = 0; i < result.tasks.size(); ++i) {
    j["written"].push_back(
        {{"rank", result.tasks[i].rank}, {"file", i < files.size() ? files[i] : ""}});
  }
  j["skipped"] = nlohmann::json::array();
  for (const SkippedCandidate& s : result.skipped) {
    j["skipped"].push_back({{"rank", s.rank}, {"reason", s.reason}});
  }
  return j;
}

}  // namespace fulcrum::plan
