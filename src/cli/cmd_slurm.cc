// `fulcrum slurm`: Slurm-side helpers. `conf` prints the gres.conf / slurm.conf lines that let a
// node's GPUs be shared (shards or MPS) by `submit --slurm --gpu-memory`, or with --cloud the
// power-save part of slurm.conf; `resume`, `suspend` and `resume-fail` are Slurm's
// ResumeProgram, SuspendProgram and ResumeFailProgram (cluster/power.h does the work).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "catalog/catalog.h"
#include "cli/command.h"
#include "cluster/gpu_share_slurm.h"
#include "cluster/power.h"
#include "core/parse.h"
#include "core/paths.h"
#include "core/text_file.h"
#include "store/jobs.h"
#include "supervise/gpu_share.h"

namespace fulcrum::cli {
namespace {

struct ConfArgs {
  // --cloud
  bool cloud = false;
  std::vector<std::string> offers;
  int max_nodes = 0;
  std::string config;
  std::string programs;
  double suspend_time_seconds = 300;
  double resume_timeout_seconds = 600;
  double suspend_timeout_seconds = 30;
  std::string partition = "cloud";
  // sharing
  std::string node = "gpu-node";
  std::string node_gpus;
  std::string shard_size = "10GiB";
  std::string reserve = "10%";
  std::string share = "shard";
  std::string gpu_files;
  bool json = false;
};

std::string SelfExe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "fulcrum" : p.string();
}

Result<cluster::PowerConfig> LoadConfig(const std::string& path) {
  if (path.empty()) {
    return Status::InvalidInput(
        "--config: expected the YAML file with provision: resume/suspend argv (see fulcrum slurm "
        "conf --help)");
  }
  FULCRUM_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, "a fulcrum slurm config (YAML)"));
  return cluster::ParsePowerConfig(text, path);
}

Result<std::vector<cluster::CloudOffer>> Offers(CliContext& ctx,
                                                const std::vector<std::string>& names) {
  if (names.empty()) {
    return Status::InvalidInput(
        "--offer: expected at least one node type, PROVIDER/INSTANCE/REGION (see fulcrum offers)");
  }
  FULCRUM_ASSIGN_OR_RETURN(catalog::Catalog catalog,
                           catalog::Catalog::Load(DefaultCatalogDir(ctx.catalog_dir)));
  return cluster::ResolveCloudOffers(catalog, names);
}

Status CloudConf(CliContext& ctx, const ConfArgs& a) {
  std::optional<cluster::PowerConfig> config;
  if (!a.config.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(config, LoadConfig(a.config));
  }
  const std::vector<std::string> names = !a.offers.empty() ? a.offers
                                         : config          ? config->offers
                                                           : std::vector<std::string>{};
  FULCRUM_ASSIGN_OR_RETURN(auto offers, Offers(ctx, names));
  if (a.programs.empty() || a.config.empty()) {
    return Status::InvalidInput(
        "--cloud: expected --config FILE and --programs DIR (Slurm runs ResumeProgram with the "
        "node list as its only argument, so fulcrum writes three small programs there that call "
        "fulcrum slurm resume|suspend|resume-fail --config FILE)");
  }
  const std::string dir = std::filesystem::absolute(a.programs).lexically_normal().string();
  const std::string config_path = std::filesystem::absolute(a.config).lexically_normal().string();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  cluster::CloudConf conf;
  conf.offers = offers;
  conf.max_nodes = a.max_nodes > 0 ? a.max_nodes : (config ? config->max_nodes : 1);
  conf.suspend_time_seconds = a.suspend_time_seconds;
  conf.resume_timeout_seconds = a.resume_timeout_seconds;
  conf.suspend_timeout_seconds = a.suspend_timeout_seconds;
  const std::string catalog_dir =
      ctx.catalog_dir.empty()
          ? ""
          : std::filesystem::absolute(ctx.catalog_dir).lexically_normal().string();
  conf.partition = a.partition;
  for (const auto& [sub, field] : std::vector<std::pair<std::string, std::string*>>{
           {"resume", &conf.resume_program},
           {"suspend", &conf.suspend_program},
           {"resume-fail", &conf.resume_fail_program}}) {
    *field = dir + "/fulcrum-slurm-" + sub;
    FULCRUM_RETURN_IF_ERROR(
        WriteTextFile(*field, cluster::ProgramWrapper(SelfExe(), config_path, sub, catalog_dir)));
    std::filesystem::permissions(*field, std::filesystem::perms(0755), ec);
  }
  const auto lines = cluster::CloudConfLines(conf);
  if (a.json) {
    nlohmann::json nodes = nlohmann::json::array();
    for (const auto& o : offers) {
      nodes.push_back({{"offer", o.offer},
                       {"node_prefix", cluster::NodePrefix(o)},
                       {"usd_per_hour", o.usd_per_hour},
                       {"weight", std::max<int64_t>(1, std::llround(o.usd_per_hour * 100))},
                       {"billing_seconds", o.billing_seconds}});
    }
    PrintJson(ctx,
              {{"slurm_conf", {{"cloud", true}, {"node_types", nodes}, {"slurm_conf", lines}}}});
    return Status::Ok();
  }
  for (const auto& l : lines) ctx.out << l << "\n";
  return Status::Ok();
}

Status Conf(CliContext& ctx, const ConfArgs& a) {
  if (a.cloud) return CloudConf(ctx, a);
  if (a.node_gpus.empty()) {
    return Status::InvalidInput("--node-gpus: expected NxSIZE, e.g. 8x80GiB (the node's GPUs)");
  }
  FULCRUM_ASSIGN_OR_RETURN(auto gpus, supervise::ParseNodeGpus(a.node_gpus));
  if (gpus.empty() || !gpus.front().memory_bytes) {
    return Status::InvalidInput("--node-gpus: expected NxSIZE with N >= 1, e.g. 8x80GiB, found '" +
                                a.node_gpus + "'")
        .WithDetail({"", std::nullopt, "--node-gpus", "NxSIZE", a.node_gpus, {"8x80GiB"}});
  }
  if (a.share != "shard" && a.share != "mps") {
    return Status::InvalidInput("--share: expected shard or mps, found '" + a.share + "'")
        .WithDetail({"", std::nullopt, "--share", "shard | mps", a.share, {"shard", "mps"}});
  }
  auto shard = ParseBytes(a.shard_size);
  if (!shard.ok() || *shard <= 0) {
    return Status::InvalidInput("--shard-size: expected a size such as 10GiB, found '" +
                                a.shard_size + "'");
  }
  supervise::ShareRequest reserve;
  FULCRUM_RETURN_IF_ERROR(supervise::ParseReserve(a.reserve, reserve));
  cluster::SlurmShareConf conf;
  conf.node = a.node;
  conf.gpus = static_cast<int>(gpus.size());
  conf.gpu_memory_bytes = *gpus.front().memory_bytes;
  conf.shard_bytes = *shard;
  conf.reserve_fraction = reserve.reserve_bytes ? *reserve.reserve_bytes / conf.gpu_memory_bytes
                                                : reserve.reserve_fraction.value_or(0.10);
  conf.mps = a.share == "mps";
  conf.gpu_files = a.gpu_files;
  const cluster::SlurmShareLines lines = cluster::SlurmShareConfLines(conf);
  if (a.json) {
    PrintJson(ctx, {{"slurm_conf",
                     {{"node", a.node},
                      {"share", a.share},
                      {"per_gpu", lines.per_gpu},
                      {"count", lines.count},
                      {"shard_bytes", conf.mps ? nlohmann::json() : nlohmann::json(*shard)},
                      {"gres_conf", lines.gres_conf},
                      {"slurm_conf", lines.slurm_conf}}}});
    return Status::Ok();
  }
  ctx.out << "# gres.conf (" << lines.per_gpu
          << (conf.mps ? " MPS percent per GPU" : " shards of " + FormatBytes(*shard) + " per GPU")
          << ")\n";
  for (const auto& l : lines.gres_conf) ctx.out << l << "\n";
  ctx.out << "# slurm.conf (add the Gres= to the node's existing NodeName line)\n";
  for (const auto& l : lines.slurm_conf) ctx.out << l << "\n";
  return Status::Ok();
}

void RegisterConf(CLI::App& parent, CliContext& ctx) {
  auto* cmd = parent.add_subcommand(
      "conf", "Print the gres.conf and slurm.conf lines that share a node's GPUs");
  cmd->footer(
      "Shards (Slurm's shard plugin, 22.05 and later): each GPU gets floor((memory - reserve) /\n"
      "shard size) shards, so that `fulcrum submit --slurm --gpu-memory SIZE` (--gres=shard:N,\n"
      "N = SIZE / --shard-size rounded up) never reserves more than a GPU holds. MPS (--share\n"
      "mps): 100 per GPU, so that --gres=mps:P is P percent of one GPU's compute.\n"
      "Source: https://slurm.schedmd.com/gres.html (Sharding; MPS Management).\n\n"
      "Examples:\n"
      "  fulcrum slurm conf --node gpu1 --node-gpus 8x80GiB\n"
      "  fulcrum slurm conf --node gpu1 --node-gpus 8x80GiB --share mps --json");
  auto a = std::make_shared<ConfArgs>();
  cmd->add_option("--node", a->node, "NodeName the lines are for (default gpu-node)")
      ->type_name("NAME");
  cmd->add_option("--node-gpus", a->node_gpus, "The node's GPUs, NxSIZE (e.g. 8x80GiB)")
      ->type_name("NxSIZE");
  cmd->add_option("--shard-size", a->shard_size, "Memory one shard stands for (default 10GiB)")
      ->type_name("SIZE");
  cmd->add_option("--reserve", a->reserve,
                  "Memory of each GPU no shard stands for: P% or SIZE (default 10%)")
      ->type_name("P%|SIZE");
  cmd->add_option("--share", a->share, "shard (default) or mps")->type_name("shard|mps");
  cmd->add_option("--gpu-files", a->gpu_files,
                  "gres.conf File= of the GPUs (default /dev/nvidia[0-N-1])")
      ->type_name("PATHS");
  cmd->add_flag("--cloud", a->cloud,
                "Print the power-save part of slurm.conf instead: State=CLOUD nodes per --offer, "
                "Weight = price in cents per hour, and the Resume/Suspend/ResumeFail programs")
      ->group("Power saving");
  cmd->add_option("--offer", a->offers, "A node type, PROVIDER/INSTANCE/REGION (repeatable)")
      ->type_name("P/I/R")
      ->group("Power saving");
  cmd->add_option("--max-nodes", a->max_nodes, "Nodes per node type (default: the config's, 1)")
      ->type_name("N")
      ->group("Power saving");
  cmd->add_option("--config", a->config,
                  "The fulcrum slurm config (YAML: provision resume/suspend argv, budget_usd)")
      ->type_name("FILE")
      ->group("Power saving");
  cmd->add_option("--programs", a->programs,
                  "Where to write fulcrum-slurm-resume, -suspend and -resume-fail (0755)")
      ->type_name("DIR")
      ->group("Power saving");
  cmd->add_option("--suspend-time", a->suspend_time_seconds,
                  "SuspendTime: idle seconds before Slurm powers a node down (default 300)")
      ->type_name("S")
      ->group("Power saving");
  cmd->add_option("--resume-timeout", a->resume_timeout_seconds,
                  "ResumeTimeout: seconds a node may take to register (default 600)")
      ->type_name("S")
      ->group("Power saving");
  cmd->add_option("--suspend-timeout", a->suspend_timeout_seconds,
                  "SuspendTimeout: seconds a node takes to power down (default 30)")
      ->type_name("S")
      ->group("Power saving");
  cmd->add_option("--partition", a->partition, "Partition of the cloud nodes (default cloud)")
      ->type_name("NAME")
      ->group("Power saving");
  cmd->add_flag("--json", a->json,
                "Print {\"slurm_conf\": {node, share, per_gpu, count, shard_bytes, gres_conf, "
                "slurm_conf}} (with --cloud: {cloud, node_types: [{offer, node_prefix, "
                "usd_per_hour, weight, billing_seconds}], slurm_conf})");
  cmd->callback([&ctx, a] {
    Status s = Conf(ctx, *a);
    if (!s.ok()) ReportError(ctx, s);
  });
}

struct PowerArgs {
  std::string config;
  std::optional<double> budget_usd;
  std::string hostlist;
  std::optional<double> at;  // suspend's timer
  int64_t row = 0;
  bool json = false;
};

Status Power(CliContext& ctx, const std::string& sub, const PowerArgs& a) {
  FULCRUM_ASSIGN_OR_RETURN(cluster::PowerConfig config, LoadConfig(a.config));
  if (a.budget_usd) config.budget_usd = *a.budget_usd;
  FULCRUM_ASSIGN_OR_RETURN(auto offers, Offers(ctx, config.offers));
  std::string hostlist = a.hostlist;
  if (const char* file = std::getenv("SLURM_RESUME_FILE"); sub == "resume" && file && *file) {
    FULCRUM_ASSIGN_OR_RETURN(std::string text, ReadTextFile(file, "Slurm's resume file (JSON)"));
    FULCRUM_ASSIGN_OR_RETURN(hostlist, cluster::ResumeFileHostlist(text));
  }
  FULCRUM_ASSIGN_OR_RETURN(auto nodes, cluster::ExpandHostlist(hostlist));
  const std::string data_dir = store::ResolveDataDir(config.data_dir);
  FULCRUM_ASSIGN_OR_RETURN(store::JobsDb db, store::JobsDb::OpenInDataDir(data_dir));
  std::vector<std::string> self = {SelfExe(), "slurm", "suspend", "--config", a.config};
  cluster::PowerEnv env = cluster::SystemPowerEnv(data_dir + "/logs/slurm-power.log", self);
  std::error_code ec;
  std::filesystem::create_directories(data_dir + "/logs", ec);
  std::vector<cluster::NodeOutcome> out;
  if (sub == "resume") {
    out = cluster::ResumeNodes(config, offers, nodes, db.db(), env);
  } else if (sub == "resume-fail") {
    out = cluster::ResumeFailNodes(config, offers, nodes, db.db(), env);
  } else if (a.at) {
    // The timer of an hourly-billed node: sleep until `at`, then end it unless resumed since.
    const double wait = *a.at - env.now();
    if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    for (const auto& node : nodes)
      out.push_back(cluster::EndNodeAt(config, offers, node, a.row, db.db(), env));
  } else {
    out = cluster::SuspendNodes(config, offers, nodes, db.db(), env);
  }
  if (a.json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& o : out)
      rows.push_back({{"node", o.node}, {"result", o.result}, {"detail", o.detail}});
    PrintJson(ctx, {{"nodes", rows}});
  } else {
    for (const auto& o : out) ctx.out << o.node << ": " << o.result << ": " << o.detail << "\n";
  }
  // Slurm logs a non-zero exit; the nodes that failed are already DOWN with their reason.
  return Status::Ok();
}

void RegisterPower(CLI::App& parent, CliContext& ctx, const std::string& sub,
                   const std::string& help) {
  auto* cmd = parent.add_subcommand(sub, help);
  cmd->footer(
      "Slurm runs it with a hostlist (gpu-[1-3]) as its only argument; `fulcrum slurm conf\n"
      "--cloud --programs DIR` writes the programs that call it with --config. resume reads\n"
      "$SLURM_RESUME_FILE when Slurm sets it. Per node: the node type from its name (the\n"
      "config's offers), then the provider's argv with {node}, {instance_type}, {region} and\n"
      "{provider} filled in (never a shell). resume refuses a node whose hour would take the\n"
      "running spend (jobs.db) past budget_usd, and marks a node DOWN at once on a capacity\n"
      "error or a failure (scontrol update nodename=X state=down reason=... nodeaddr=192.0.2.1:\n"
      "an address Slurm's kill RPC to a node that never started needs no resolver for), then\n"
      "releases the jobs Slurm requeues from it from their cred_expire hold (scontrol update\n"
      "jobid=J starttime=now), so that Slurm moves them to the next node type within seconds.\n"
      "suspend returns at once; for a provider that bills by the hour a timer ends the\n"
      "instance end_before_hour before its next billed hour.\n"
      "Each decision goes to <data-dir>/logs/slurm-power.log and stderr.\n"
      "Source: https://slurm.schedmd.com/power_save.html\n\n"
      "Example:\n"
      "  fulcrum slurm " +
      sub + " --config /etc/fulcrum/slurm.yaml 'aws-p4d-24xlarge-[1-2]'");
  auto a = std::make_shared<PowerArgs>();
  cmd->add_option("--config", a->config, "The fulcrum slurm config (YAML)")
      ->type_name("FILE")
      ->required();
  if (sub == "resume") {
    cmd->add_option("--budget-usd", a->budget_usd,
                    "Refuse a node when the running spend plus its hour would pass this "
                    "(default: the config's budget_usd)")
        ->type_name("USD");
  }
  if (sub == "suspend") {
    cmd->add_option("--at", a->at, "Internal: the hourly timer's end (Unix seconds)")->group("");
    cmd->add_option("--row", a->row, "Internal: the node's jobs.db row the timer ends")->group("");
  }
  cmd->add_flag("--json", a->json, "Print {\"nodes\": [{node, result, detail}]}");
  cmd->add_option("hostlist", a->hostlist, "The nodes, as Slurm gives them (gpu-[1-3])")
      ->type_name("HOSTLIST");
  cmd->callback([&ctx, a, sub] {
    Status s = Power(ctx, sub, *a);
    if (!s.ok()) ReportError(ctx, s);
  });
}

}  // namespace

void RegisterSlurm(CLI::App* cmd, CliContext& ctx) {
  cmd->description(
      "Slurm-side helpers: the gres lines that share a node's GPUs (conf), and power saving\n"
      "that follows the queue: conf --cloud prints the slurm.conf part, and resume, suspend\n"
      "and resume-fail are the programs Slurm runs (ResumeProgram, SuspendProgram,\n"
      "ResumeFailProgram).");
  cmd->footer(
      "Examples:\n"
      "  fulcrum slurm conf --node gpu1 --node-gpus 8x80GiB\n"
      "  fulcrum slurm conf --cloud --config /etc/fulcrum/slurm.yaml --programs /etc/slurm/fulcrum "
      "\\\n"
      "      --offer lambda/gpu_8x_h100_sxm5/us-east-1 --offer aws/p5.48xlarge/us-east-1 "
      "--max-nodes 2\n"
      "  fulcrum slurm resume --config /etc/fulcrum/slurm.yaml 'lambda-gpu-8x-h100-sxm5-[1-2]'");
  cmd->require_subcommand(1);
  RegisterConf(*cmd, ctx);
  RegisterPower(*cmd, ctx, "resume",
                "Slurm's ResumeProgram: start each node through the provider's resume argv");
  RegisterPower(
      *cmd, ctx, "suspend",
      "Slurm's SuspendProgram: end each node (hourly billing: just before its next hour)");
  RegisterPower(*cmd, ctx, "resume-fail",
                "Slurm's ResumeFailProgram: end what did not come up and record the failure");
}

}  // namespace fulcrum::cli
