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

Placement Place(const Candidate& c, const catalog::Catalog& catalog, const ExportTables& t) {
  Placement p;
  const catalog::Offer& o = catalog.offers()[static_cast<size_t>(c.offer)];
  const char* tool = ExportToolName(t.format);
  const std::string table = std::string("catalog/export_") + ExportFormatName(t.format) + ".csv";
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

const NodeEnv& EnvOf(ExportFormat format) {
  return format == ExportFormat::kSkypilot ? kSkypilotEnv : kDstackEnv;
}

// What a node of candidate `c` (on offer `o`) knows, in the tool's terms.
NodeLaunch NodeOf(const Candidate& c, const catalog::Offer& o, ExportFormat format) {
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

// The whitespace-separated words of shell text `command` and where each starts (for reading
// the launcher only: the text itself is kept as the user wrote it).
std::vector<std::string> CommandWords(const std::string& command, std::vector<size_t>* starts) {
  std::vector<std::string> words;
  for (size_t i = 0; i < command.size();) {
    if (std::isspace(static_cast<unsigned char>(command[i]))) {
      ++i;
      continue;
    }
    const size_t start = i;
    while (i < command.size() && !std::isspace(static_cast<unsigned char>(command[i]))) ++i;
    words.push_back(command.substr(start, i - start));
    if (starts != nullptr) starts->push_back(start);
  }
  return words;
}

// The training command as a node of `c` runs it, and what changed (core/torchrun.h
// RewriteLaunch): the edits applied to the user's text from the last, so that each word's
// position still holds (at one position RewriteLaunch orders the insertion first).
struct NodeCommand {
  std::string text;
  LaunchRewrite rewrite;
  NodeLaunch node;
};
NodeCommand CommandOnNode(const PlanResult& r, const Candidate& c, const catalog::Offer& o,
                          ExportFormat format) {
  NodeCommand out;
  out.text = TrainingCommand(r);
  out.node = NodeOf(c, o, format);
  std::vector<size_t> starts;
  const std::vector<std::string> words = CommandWords(out.text, &starts);
  out.rewrite = RewriteLaunch(words, out.node);
  for (auto it = out.rewrite.edits.rbegin(); it != out.rewrite.edits.rend(); ++it) {
    std::string joined;
    for (const std::string& w : it->words) joined += (joined.empty() ? "" : " ") + w;
    if (it->at >= words.size()) {
      out.text += " " + joined;
    } else if (it->replace) {
      out.text.replace(starts[it->at], words[it->at].size(), joined);
    } else {
      out.text.insert(starts[it->at], joined + " ");
    }
  }
  return out;
}

// `export NAME=...` for each variable the command names for the job's shape (NUM_NODES,
// NODE_RANK, MASTER_ADDR, WORLD_SIZE, ...: core/torchrun.h CommonVariableQuantity), from the
// tool's own; the shell expands the command's $NAME after these lines.
std::vector<std::string> VariableLines(const PlanResult& r, const NodeLaunch& node) {
  std::vector<std::string> lines;
  for (const std::string& name : ShellVariablesIn(TrainingCommand(r))) {
    const std::optional<NodeQuantity> q = CommonVariableQuantity(name);
    if (q) lines.push_back("export " + name + "=" + node.shell.at(*q));
  }
  return lines;
}

// The `fulcrum run` line. The price is the whole cluster's (every node's supervisor then sees
// the cluster's spend and stops at the same budget).
std::string RunLine(const PlanResult& r, const Candidate& c, const Placement& p,
                    const ExportOptions& options, const NodeCommand& command) {
  std::string line = "fulcrum run --name " + JobName(r.model.name);
  if (r.spec.checkpointing) {
    line += " --checkpoint-dir " + options.checkpoint_dir;
    if (c.run.checkpoint_interval_seconds > 0) {
      line +=
          fmt::format(" --checkpoint-every {:.0f}s", std::ceil(c.run.checkpoint_interval_seconds));
    }
  }
  line += " --price-per-hour " + Number(p.cluster_usd_per_hour);
  if (r.spec.constraints.budget_usd) {
    line += " --budget-usd " + Number(*r.spec.constraints.budget_usd);
  }
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
  return Comment(h);
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
  ErrorDetail detail;
  detail.field = "--export";
  detail.expected = "skypilot or dstack";
  detail.found = std::string(text);
  detail.nearest = NearestNames(t, {"skypilot", "dstack"});
  return Status::InvalidInput("--export: expected skypilot or dstack, found \"" +
                              std::string(text) + "\"")
      .WithDetail(detail);
}

const char* ExportFormatName(ExportFormat format) {
  return format == ExportFormat::kSkypilot ? "skypilot" : "dstack";
}

const char* ExportToolName(ExportFormat format) {
  return format == ExportFormat::kSkypilot ? "SkyPilot" : "dstack";
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
    return shared->clouds.at(o.provider).max_nodes;
  };
  // Place(): both tools launch on-demand or spot capacity only.
  filter.pricing = {PricingModel::kOnDemand, PricingModel::kSpot};
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
      "--keep-command: the command does not start {} process(es) per node on {} "
      "GPU(s) x {} node(s): {}",
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
    std::string text = Header(r, c, o, p, tables.format, command, note);
    text += tables.format == ExportFormat::kSkypilot ? SkypilotTask(r, c, o, p, options, command)
                                                     : DstackTask(r, c, o, p, options, command);
    out.tasks.push_back({pick, std::move(text)});
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
