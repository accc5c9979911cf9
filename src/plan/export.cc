#include "plan/export.h"

#include <algorithm>
#include <cctype>
#include <cmath>
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
  auto cloud = t.clouds.find(o.provider);
  if (cloud == t.clouds.end()) {
    p.skip_reason = fmt::format("provider {}: not a {} {} ({} has no row for it)", o.provider, tool,
                                t.format == ExportFormat::kDstack ? "backend" : "cloud", table);
    return p;
  }
  auto region = t.regions.find({o.provider, o.region});
  if (region == t.regions.end()) {
    p.skip_reason =
        fmt::format("region \"{}\" of {}: no {} spelling in {}", o.region, o.provider, tool, table);
    return p;
  }
  if (cloud->second.max_nodes && c.nodes > *cloud->second.max_nodes) {
    p.skip_reason = fmt::format("{} nodes on {}: {} runs at most {} node(s) per task there ({})",
                                c.nodes, o.provider, tool, *cloud->second.max_nodes, table);
    return p;
  }
  p.accelerator = ExportAcceleratorName(t, o.provider, o.gpu, o.instance_type);
  if (p.accelerator.empty()) {
    p.skip_reason = fmt::format("GPU {} on {} ({}): no {} accelerator name in {}", o.gpu,
                                o.provider, o.instance_type, tool, table);
    return p;
  }
  std::optional<double> hourly = HourlyPriceUsd(o, catalog.FindProvider(o.provider), c.pricing);
  if (!hourly) {
    p.skip_reason = fmt::format("{} {}: no {} price in the catalog", o.provider, o.instance_type,
                                PricingModelName(c.pricing));
    return p;
  }
  p.cloud = cloud->second.name;
  p.region = region->second;
  if (cloud->second.instance_types) p.instance_type = o.instance_type;
  p.cluster_usd_per_hour = *hourly * c.nodes;
  return p;
}

std::vector<std::string> SetupLines(const ExportOptions& options) {
  return {"command -v fulcrum >/dev/null 2>&1 || { " + options.fulcrum_install +
              "; } || echo \"setup: the --fulcrum-install command failed (exit $?)\" >&2",
          "command -v fulcrum >/dev/null 2>&1 || { echo 'setup: fulcrum is not on PATH after "
          "the --fulcrum-install command' >&2; exit 1; }"};
}

// The environment each tool gives every node of a multi-node task, and the torchrun options
// built from it (static rendezvous on the first node, as both tools' own examples launch it).
// SkyPilot: skypilot-org/skypilot docs/source/running-jobs/distributed-jobs.rst
// ($SKYPILOT_NUM_GPUS_PER_NODE, $SKYPILOT_NUM_NODES, $SKYPILOT_NODE_RANK, the first line of
// $SKYPILOT_NODE_IPS as master_addr, master_port 8008). dstack: dstackai/dstack
// runner/internal/executor/executor.go jobEnvs ($DSTACK_GPUS_PER_NODE, $DSTACK_NODES_NUM,
// $DSTACK_NODE_RANK, $DSTACK_MASTER_NODE_IP) and examples/distributed-training/torchrun.
// The underscore spellings are the ones every torchrun release accepts.
struct NodeEnv {
  const char* nproc_per_node;
  const char* nnodes;
  const char* node_rank;
  const char* master_addr;
  const char* rank_hint;  // how the comment names the variables for a non-torchrun command
};
constexpr NodeEnv kSkypilotEnv = {
    "\"$SKYPILOT_NUM_GPUS_PER_NODE\"", "\"$SKYPILOT_NUM_NODES\"", "\"$SKYPILOT_NODE_RANK\"",
    "\"$(echo \"$SKYPILOT_NODE_IPS\" | head -n1)\"", "$SKYPILOT_NODE_RANK, $SKYPILOT_NODE_IPS"};
constexpr NodeEnv kDstackEnv = {"\"$DSTACK_GPUS_PER_NODE\"", "\"$DSTACK_NODES_NUM\"",
                                "\"$DSTACK_NODE_RANK\"", "\"$DSTACK_MASTER_NODE_IP\"",
                                "$DSTACK_NODE_RANK, $DSTACK_MASTER_NODE_IP"};
constexpr int kMasterPort = 8008;

const NodeEnv& EnvOf(ExportFormat format) {
  return format == ExportFormat::kSkypilot ? kSkypilotEnv : kDstackEnv;
}

// The spec's training command; without one, the placeholder the header asks to replace.
std::string TrainingCommand(const PlanResult& r) {
  return r.spec.command.empty() ? "python train.py" : r.spec.command;
}

// The whitespace-separated words of shell text `command` and where each ends (for recognising
// the launcher only: the text itself is kept as the user wrote it).
std::vector<std::string> CommandWords(const std::string& command, std::vector<size_t>* ends) {
  std::vector<std::string> words;
  for (size_t i = 0; i < command.size();) {
    if (std::isspace(static_cast<unsigned char>(command[i]))) {
      ++i;
      continue;
    }
    const size_t start = i;
    while (i < command.size() && !std::isspace(static_cast<unsigned char>(command[i]))) ++i;
    words.push_back(command.substr(start, i - start));
    if (ends != nullptr) ends->push_back(i);
  }
  return words;
}

// `command` (shell text) as each node runs it. One node: unchanged. More: each node starts the
// command once, so a torchrun without its own multi-node options would start `nodes`
// independent single-node jobs; it gets --nnodes, --node_rank and a static rendezvous on the
// first node, after the launcher word(s), unless the user set them (or --standalone, or an
// --rdzv_endpoint of their own); without --nproc_per_node (torchrun's default is one process)
// it gets one process per GPU of the node.
std::string MultiNodeCommand(const std::string& command, int nodes, ExportFormat format) {
  if (nodes <= 1) return command;
  std::vector<size_t> ends;
  const std::vector<std::string> words = CommandWords(command, &ends);
  const size_t at = TorchrunOptionsAt(words);
  if (at == 0) return command;
  const NodeEnv& env = EnvOf(format);
  std::string options;
  if (!HasTorchrunOption(words, "--nproc-per-node")) {
    options += fmt::format(" --nproc_per_node={}", env.nproc_per_node);
  }
  if (!HasTorchrunOption(words, "--nnodes")) options += fmt::format(" --nnodes={}", env.nnodes);
  if (!HasTorchrunRendezvous(words)) {
    if (!HasTorchrunOption(words, "--node-rank")) {
      options += fmt::format(" --node_rank={}", env.node_rank);
    }
    options += fmt::format(" --master_addr={}", env.master_addr);
    if (!HasTorchrunOption(words, "--master-port")) {
      options += fmt::format(" --master_port={}", kMasterPort);
    }
  }
  std::string out = command;
  out.insert(ends[at - 1], options);
  return out;
}

// The `fulcrum run` line. The price is the whole cluster's (every node's supervisor then sees
// the cluster's spend and stops at the same budget).
std::string RunLine(const PlanResult& r, const Candidate& c, const Placement& p,
                    const ExportOptions& options, ExportFormat format) {
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
  return line + " -- " + MultiNodeCommand(TrainingCommand(r), c.nodes, format);
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
                   const Placement& p, ExportFormat format) {
  std::string h = fmt::format(
      "Generated by `fulcrum plan` for {} (rank {}): {} x {} on {} {} ({}), layout {}.\n"
      "Expected {} and {} (P90 {}); the run line bills {}/h for the {} node(s).\n",
      r.model.name, c.rank, c.nodes, o.instance_type, o.provider, o.region,
      PricingModelName(c.pricing), LayoutLabel(c.layout.training),
      FormatDuration(c.run.total_seconds), FormatUsd(c.run.expected_usd), FormatUsd(c.run.p90_usd),
      FormatUsd(p.cluster_usd_per_hour), c.nodes);
  if (r.spec.command.empty()) h += "Replace `python train.py` with your training command.\n";
  if (c.nodes > 1 && TorchrunOptionsAt(CommandWords(TrainingCommand(r), nullptr)) == 0) {
    h += fmt::format(
        "The command runs once on each of the {} nodes: it must join the others itself ({}).\n",
        c.nodes, EnvOf(format).rank_hint);
  }
  return Comment(h);
}

std::string SkypilotTask(const PlanResult& r, const Candidate& c, const catalog::Offer& o,
                         const Placement& p, const ExportOptions& options) {
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
  out += "run: " + YamlBlock({RunLine(r, c, p, options, ExportFormat::kSkypilot)}, 2);
  return out;
}

std::string DstackTask(const PlanResult& r, const Candidate& c, const catalog::Offer& o,
                       const Placement& p, const ExportOptions& options) {
  // Fields as dstack's task configuration names them (dstackai/dstack@511c318c8a76
  // src/dstack/_internal/core/models/configurations.py TaskConfiguration: type, name, nodes,
  // commands, resources; profiles.py ProfileParams: backends, regions, instance_types,
  // spot_policy spot|on-demand|auto; resources.py GPUSpec "name:memory:count").
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
  out += "  - " + YamlString(RunLine(r, c, p, options, ExportFormat::kDstack)) + "\n";
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

Result<ExportResult> ExportCandidates(const PlanResult& r, const catalog::Catalog& catalog,
                                      const ExportTables& tables, const ExportOptions& options,
                                      const std::vector<int>& picks) {
  FULCRUM_RETURN_IF_ERROR(ValidateExportOptions(options));
  std::vector<int> ranks = picks;
  if (ranks.empty()) {
    for (size_t i = 0; i < r.candidates.size(); ++i) ranks.push_back(static_cast<int>(i) + 1);
  }
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
      return PickError(
          fmt::format("a candidate {} can launch", ExportToolName(tables.format)), pick,
          fmt::format("--pick {}: {} cannot launch this candidate: {} (--pick all exports every "
                      "candidate it can)",
                      pick, ExportToolName(tables.format), p.skip_reason));
    }
    if (!p.skip_reason.empty()) {
      out.skipped.push_back({pick, p.skip_reason});
      continue;
    }
    std::string text = Header(r, c, o, p, tables.format);
    text += tables.format == ExportFormat::kSkypilot ? SkypilotTask(r, c, o, p, options)
                                                     : DstackTask(r, c, o, p, options);
    out.tasks.push_back({pick, std::move(text)});
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
