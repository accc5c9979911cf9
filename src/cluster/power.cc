#include "cluster/power.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <iostream>
#include <thread>

#include "cluster/slurm.h"
#include "core/clock.h"
#include "core/input_error.h"
#include "core/parse.h"
#include "core/yaml.h"
#include "store/cloud_nodes.h"
#include "store/sqlite.h"
#include "supervise/process.h"

namespace fulcrum::cluster {
namespace {

std::string Usd(double usd) { return FormatUsd(usd); }

// "2026-12-02T13:20:05Z".
std::string UtcTime(double unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

const CloudOffer* OfferOfNode(const std::vector<CloudOffer>& offers, const std::string& node) {
  for (const CloudOffer& o : offers) {
    const std::string prefix = NodePrefix(o) + "-";
    if (node.rfind(prefix, 0) != 0) continue;
    const std::string rest = node.substr(prefix.size());
    if (!rest.empty() &&
        std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return &o;
  }
  return nullptr;
}

// Where a node that never started is said to be. Slurm sends the jobs it requeues from a DOWN
// node a kill RPC even when the node never booted (deallocate_nodes in slurmctld's
// node_scheduler.c: "Issue the KILL RPC, but don't verify response"), to the node's NodeAddr,
// which for a cloud node not yet started is its name. A name no resolver knows froze Debian's
// slurmctld 22.05.8 for 10 s per node (it retries getaddrinfo ten times a second apart; seen in
// its log as "getaddrinfo() failed: Name or service not known ... attempt number" and "Note
// very large processing time" for every other RPC), and no job was scheduled meanwhile. A
// numeric address needs no resolver: 192.0.2.1 is TEST-NET-1, reserved for documentation and
// never a real host (RFC 5737, https://www.rfc-editor.org/rfc/rfc5737), so the RPC just fails.
// cloud_reg_addrs sets the real address when a node registers, and resets it to the node's name
// when it powers off (slurm.conf(5)); a provider's NodeAddr= output replaces it on the next
// resume.
constexpr const char* kNoHostAddr = "192.0.2.1";

// `scontrol update nodename=X state=down reason=... nodeaddr=192.0.2.1`: Slurm requeues the
// node's jobs at once instead of waiting for ResumeTimeout
// (https://slurm.schedmd.com/power_save.html); slurmctld applies the address before the state
// (update_node in node_mgr.c), so its kill RPC goes nowhere at once.
void MarkDown(PowerEnv& env, const std::string& node, const std::string& reason) {
  std::string why = reason.substr(0, 200);
  std::replace(why.begin(), why.end(), '\n', ' ');
  auto r = env.run({"scontrol", "update", "nodename=" + node, "state=down", "reason=" + why,
                    std::string("nodeaddr=") + kNoHostAddr},
                   30);
  if (!r.ok() || r->exit_code != 0) {
    env.log(node + ": scontrol update state=down failed: " +
            (r.ok() ? std::string(Trim(r->err + r->out)) : r.status().message()));
  }
}

// The jobs Slurm gave `node`: they wait (CONFIGURING) for it to boot.
std::vector<std::string> JobsOnNode(PowerEnv& env, const std::string& node) {
  std::vector<std::string> jobs;
  auto r = env.run({"squeue", "-h", "-w", node, "-o", "%i"}, 30);
  if (!r.ok() || r->exit_code != 0) return jobs;
  for (const std::string& line : Split(r->out, '\n')) {
    const std::string id(Trim(line));
    if (!id.empty()) jobs.push_back(id);
  }
  return jobs;
}

// Marking a node DOWN requeues its jobs, and Slurm holds a requeued job back for AuthInfo's
// cred_expire ("This also controls how long a requeued job must wait before starting again. The
// default value is 120 seconds.", slurm.conf(5), https://slurm.schedmd.com/slurm.conf.html), after
// which it waits for the next backfill pass (bf_interval, default 30 s): two minutes and more
// before the next node type is tried. These jobs never started (their node never came up), so
// the hold protects nothing: once Slurm shows them PENDING (squeue shows REQUEUED or COMPLETING
// until the requeue, which sets the hold, is done), fulcrum sets their earliest start to now
// (`scontrol update jobid=J starttime=now`, scontrol(1) StartTime), and the update makes Slurm
// schedule them at once, on the next node type.
void ReleaseRequeued(PowerEnv& env, const std::string& node, const std::vector<std::string>& jobs) {
  for (const std::string& job : jobs) {
    bool held = false;
    for (int attempt = 0; attempt < 25; ++attempt) {  // up to 5 s for the requeue to land
      auto r = env.run({"squeue", "-h", "-j", job, "-o", "%T"}, 30);
      held = r.ok() && r->exit_code == 0 && Trim(r->out) == "PENDING";
      if (held || !env.sleep) break;
      env.sleep(0.2);
    }
    if (!held) continue;
    auto r = env.run({"scontrol", "update", "jobid=" + job, "starttime=now"}, 30);
    const bool ok = r.ok() && r->exit_code == 0;
    env.log(node + ": job " + job + (ok ? " released" : " not released") +
            " (requeued by the DOWN mark before it started; Slurm would hold it for cred_expire)");
  }
}

// A provider that prints "NodeAddr=ADDRESS" tells Slurm where the node is (elastic computing:
// "scontrol update nodename=... nodeaddr=..."; https://slurm.schedmd.com/elastic_computing.html).
void SetNodeAddr(PowerEnv& env, const std::string& node, const std::string& out) {
  const size_t at = out.find("NodeAddr=");
  if (at == std::string::npos) return;
  const size_t start = at + std::string("NodeAddr=").size();
  const std::string addr(Trim(out.substr(start, out.find_first_of(" \n", start) - start)));
  if (addr.empty()) return;
  auto set = env.run(
      {"scontrol", "update", "nodename=" + node, "nodeaddr=" + addr, "nodehostname=" + node}, 30);
  if (!set.ok() || set->exit_code != 0) env.log(node + ": scontrol update nodeaddr failed");
}

double RunningSpend(store::Database& db, double now) {
  double spend = 0;
  auto rows = store::ListCloudNodes(db);
  if (!rows.ok()) return spend;
  for (const auto& row : *rows) spend += store::BilledUsd(row, now);
  return spend;
}

bool IsCapacityError(const PowerConfig& config, const CaptureResult& r) {
  if (std::find(config.capacity_exit_codes.begin(), config.capacity_exit_codes.end(),
                r.exit_code) != config.capacity_exit_codes.end())
    return true;
  for (const std::string& text : config.capacity_errors) {
    if (r.out.find(text) != std::string::npos || r.err.find(text) != std::string::npos) return true;
  }
  return false;
}

std::string LastLine(const CaptureResult& r) {
  std::string text = std::string(Trim(r.err.empty() ? r.out : r.err));
  const size_t nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

NodeOutcome ResumeOne(const PowerConfig& config, const CloudOffer& offer, const std::string& node,
                      store::Database& db, PowerEnv& env) {
  const double now = env.now();
  auto latest = store::LatestCloudNode(db, node);
  if (latest.ok() && latest->has_value() && (*latest)->state == "ending") {
    // The instance still runs (an hourly timer would end it): use it again.
    store::CloudNodeRecord row = **latest;
    row.state = "running";
    row.ended_at.reset();
    row.reason = "resumed before its timer";
    (void)store::UpdateCloudNode(db, row);
    return {node, "reused", "the instance was still up (its hourly timer is cancelled)"};
  }
  if (latest.ok() && latest->has_value() && (*latest)->state == "running") {
    return {node, "running",
            "already up since " + UtcTime((*latest)->started_at) + " (nothing started)"};
  }
  if (config.budget_usd) {
    const double spend = RunningSpend(db, now);
    if (spend + offer.usd_per_hour > *config.budget_usd) {
      const std::string detail = "spend " + Usd(spend) + " + " + Usd(offer.usd_per_hour) +
                                 " for an hour of " + offer.offer + " would pass --budget-usd " +
                                 Usd(*config.budget_usd);
      MarkDown(env, node, "fulcrum: budget: " + detail);
      return {node, "refused-budget", detail};
    }
  }
  const auto argv = ExpandArgv(config.resume_argv, node, offer);
  auto r = env.run(argv, config.timeout_seconds);
  if (!r.ok() || r->exit_code != 0) {
    const bool capacity = r.ok() && IsCapacityError(config, *r);
    const std::string detail =
        r.ok() ? (r->timed_out ? "timed out" : "exit " + std::to_string(r->exit_code)) + ": " +
                     LastLine(*r)
               : r.status().message();
    const std::string what = offer.offer + ": " + detail;
    const std::string why =
        std::string(capacity ? "fulcrum: capacity: " : "fulcrum: resume failed: ") + what;
    const std::vector<std::string> jobs = JobsOnNode(env, node);
    MarkDown(env, node, why);
    ReleaseRequeued(env, node, jobs);
    store::CloudNodeRecord failed{
        0, node, offer.offer, offer.usd_per_hour, offer.billing_seconds, now, now, "failed", why};
    (void)store::AddCloudNode(db, failed);
    return {node, capacity ? "capacity" : "failed", what};
  }
  SetNodeAddr(env, node, r->out);
  store::CloudNodeRecord row{
      0,         node, offer.offer, offer.usd_per_hour, offer.billing_seconds, now, std::nullopt,
      "running", ""};
  (void)store::AddCloudNode(db, row);
  return {node, "started", offer.offer + " at " + Usd(offer.usd_per_hour) + "/h"};
}

NodeOutcome EndNow(const PowerConfig& config, const CloudOffer& offer, store::CloudNodeRecord row,
                   PowerEnv& env, store::Database& db, const std::string& state) {
  auto r = env.run(ExpandArgv(config.suspend_argv, row.node, offer), config.timeout_seconds);
  row.ended_at = env.now();
  row.state = state;
  if (!r.ok() || r->exit_code != 0) {
    row.reason = "suspend command failed: " + (r.ok() ? LastLine(*r) : r.status().message());
    (void)store::UpdateCloudNode(db, row);
    return {row.node, "failed", row.reason};
  }
  (void)store::UpdateCloudNode(db, row);
  return {row.node, "ended", offer.offer + ", " + Usd(store::BilledUsd(row, *row.ended_at))};
}

std::optional<store::CloudNodeRecord> Latest(store::Database& db, const std::string& node) {
  auto latest = store::LatestCloudNode(db, node);
  if (!latest.ok() || !latest->has_value()) return std::nullopt;
  return **latest;
}

}  // namespace

Result<std::vector<CloudOffer>> ResolveCloudOffers(const catalog::Catalog& catalog,
                                                   const std::vector<std::string>& names) {
  std::vector<CloudOffer> out;
  std::vector<std::string> known;
  for (const catalog::Offer& o : catalog.offers()) {
    if (o.on_demand_usd_per_hour)
      known.push_back(o.provider + "/" + o.instance_type + "/" + o.region);
  }
  for (const std::string& name : names) {
    const catalog::Offer* found = nullptr;
    for (const catalog::Offer& o : catalog.offers()) {
      if (o.on_demand_usd_per_hour &&
          EqualsIgnoreCase(o.provider + "/" + o.instance_type + "/" + o.region, name))
        found = &o;
    }
    if (found == nullptr) {
      const auto nearest = NearestNames(name, known);
      return Status::InvalidInput("--offer: no on-demand offer '" + name +
                                  "' in the catalog (PROVIDER/INSTANCE/REGION, see fulcrum "
                                  "offers)" +
                                  (nearest.empty() ? "" : "; nearest: " + JoinNames(nearest)))
          .WithDetail({"", std::nullopt, "--offer", "PROVIDER/INSTANCE/REGION", name, nearest});
    }
    CloudOffer c;
    c.offer = found->provider + "/" + found->instance_type + "/" + found->region;
    c.provider = found->provider;
    c.instance_type = found->instance_type;
    c.region = found->region;
    c.gpu = found->gpu;
    c.gpus = found->gpu_count;
    c.vcpus = found->vcpus;
    c.memory_gib = found->memory_gib;
    c.usd_per_hour = *found->on_demand_usd_per_hour;
    if (const catalog::Provider* p = catalog.FindProvider(found->provider)) {
      c.billing_seconds = p->billing_granularity_seconds.value_or(1);
    }
    out.push_back(std::move(c));
  }
  return out;
}

PowerEnv SystemPowerEnv(const std::string& log_path, std::vector<std::string> self_argv) {
  PowerEnv env;
  env.run = [](const std::vector<std::string>& argv, double timeout) {
    CaptureOptions options;
    options.timeout_seconds = timeout;
    return RunCapture(argv, options);
  };
  env.now = [] { return SystemClock().UnixSeconds(); };
  env.sleep = [](double seconds) {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  };
  env.log = [log_path](const std::string& line) {
    (void)store::CreateDataFile(log_path);
    const double now = SystemClock().UnixSeconds();
    std::ofstream(log_path, std::ios::app) << UtcTime(now) << " " << line << "\n";
    std::cerr << "fulcrum slurm: " << line << "\n";
  };
  env.start_detached = [log_path](const std::vector<std::string>& argv) {
    supervise::PosixProcessRunner runner;
    supervise::ChildSpec spec;
    spec.argv = argv;
    spec.output_file = log_path;
    spec.detached = true;
    return runner.Start(spec);
  };
  env.self_argv = std::move(self_argv);
  return env;
}

std::string NodePrefix(const CloudOffer& offer) {
  std::string out;
  for (char c : offer.provider + "-" + offer.instance_type) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const bool keep = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (keep) {
      out += c;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

Result<PowerConfig> ParsePowerConfig(std::string_view text, const std::string& origin) {
  FULCRUM_ASSIGN_OR_RETURN(YamlNode root, LoadYaml(text, origin));
  FULCRUM_RETURN_IF_ERROR(
      root.CheckKeys({"data_dir", "budget_usd", "offers", "max_nodes", "provision"}));
  PowerConfig c;
  c.origin = origin;
  if (auto n = root.Find("data_dir")) {
    FULCRUM_ASSIGN_OR_RETURN(c.data_dir, n->Text());
  }
  if (auto n = root.Find("budget_usd")) {
    FULCRUM_ASSIGN_OR_RETURN(double budget, n->Number("a budget in USD above 0", 0.01));
    c.budget_usd = budget;
  }
  if (auto n = root.Find("offers")) {
    FULCRUM_ASSIGN_OR_RETURN(c.offers, n->StringList(true));
  }
  if (auto n = root.Find("max_nodes")) {
    FULCRUM_ASSIGN_OR_RETURN(int64_t max, n->Integer(1, 1000));
    c.max_nodes = static_cast<int>(max);
  }
  FULCRUM_ASSIGN_OR_RETURN(YamlNode p, root.Required("provision"));
  FULCRUM_RETURN_IF_ERROR(p.CheckKeys({"resume", "suspend", "capacity_errors",
                                       "capacity_exit_codes", "timeout", "end_before_hour"}));
  FULCRUM_ASSIGN_OR_RETURN(YamlNode resume, p.Required("resume"));
  FULCRUM_ASSIGN_OR_RETURN(c.resume_argv, resume.StringList());
  FULCRUM_ASSIGN_OR_RETURN(YamlNode suspend, p.Required("suspend"));
  FULCRUM_ASSIGN_OR_RETURN(c.suspend_argv, suspend.StringList());
  if (c.resume_argv.empty()) return resume.Error("an argv list such as [my-cloud, up, \"{node}\"]");
  if (c.suspend_argv.empty())
    return suspend.Error("an argv list such as [my-cloud, down, \"{node}\"]");
  if (auto n = p.Find("capacity_errors")) {
    FULCRUM_ASSIGN_OR_RETURN(c.capacity_errors, n->StringList());
  }
  if (auto n = p.Find("capacity_exit_codes")) {
    FULCRUM_ASSIGN_OR_RETURN(auto items, n->Items());
    for (const YamlNode& item : items) {
      FULCRUM_ASSIGN_OR_RETURN(int64_t code, item.Integer(1, 255));
      c.capacity_exit_codes.push_back(static_cast<int>(code));
    }
  }
  if (auto n = p.Find("timeout")) {
    FULCRUM_ASSIGN_OR_RETURN(c.timeout_seconds, n->Duration());
  }
  if (auto n = p.Find("end_before_hour")) {
    FULCRUM_ASSIGN_OR_RETURN(c.end_before_hour_seconds,
                             n->Duration("a duration under an hour such as 2m", 0, 3599));
  }
  return c;
}

Result<std::vector<std::string>> ExpandHostlist(std::string_view hostlist) {
  std::vector<std::string> out;
  const std::string text(Trim(hostlist));
  const auto bad = [&](const std::string& why) {
    return Status::InvalidInput("hostlist: expected names such as gpu-[1-3,5],cpu-1 (" + why +
                                "), found '" + text + "'");
  };
  size_t i = 0;
  while (i < text.size()) {
    size_t end = i;
    int depth = 0;
    while (end < text.size() && (depth > 0 || text[end] != ',')) {
      if (text[end] == '[') ++depth;
      if (text[end] == ']') --depth;
      if (depth < 0 || depth > 1) return bad("unbalanced brackets");
      ++end;
    }
    if (depth != 0) return bad("unbalanced brackets");
    const std::string item = text.substr(i, end - i);
    i = end + 1;
    if (item.empty()) continue;
    const size_t open = item.find('[');
    if (open == std::string::npos) {
      out.push_back(item);
      continue;
    }
    const size_t close = item.find(']', open);
    const std::string head = item.substr(0, open), tail = item.substr(close + 1);
    if (tail.find('[') != std::string::npos) return bad("one bracket group per name");
    for (const std::string& range : Split(item.substr(open + 1, close - open - 1), ',')) {
      const auto dash = range.find('-');
      const std::string lo = range.substr(0, dash);
      const std::string hi = dash == std::string::npos ? lo : range.substr(dash + 1);
      auto a = ParseInt(lo), b = ParseInt(hi);
      if (!a.ok() || !b.ok() || *a > *b || *a < 0 || *b - *a > 100000) return bad("a range");
      for (int64_t n = *a; n <= *b; ++n) {
        std::string digits = std::to_string(n);
        if (digits.size() < lo.size()) digits.insert(0, lo.size() - digits.size(), '0');
        out.push_back(head + digits + tail);
      }
    }
  }
  return out;
}

Result<std::string> ResumeFileHostlist(std::string_view json_text) {
  // Slurm 22.05 writes {"all_nodes": "...", "jobs": [{"job_id", "nodes"}]} (seen from
  // slurmctld 22.05.8); the power_save page of later releases names it "all_nodes_resume".
  auto doc = nlohmann::json::parse(json_text, nullptr, false);
  if (doc.is_object()) {
    for (const char* key : {"all_nodes_resume", "all_nodes"}) {
      if (doc.contains(key) && doc[key].is_string()) return doc[key].get<std::string>();
    }
  }
  return Status::InvalidInput(
      "$SLURM_RESUME_FILE: expected JSON with a string all_nodes (Slurm 22.05) or "
      "all_nodes_resume, found " +
      std::string(json_text.substr(0, 120)));
}

std::vector<std::string> ExpandArgv(const std::vector<std::string>& templ, const std::string& node,
                                    const CloudOffer& offer) {
  const std::vector<std::pair<std::string, std::string>> fields = {
      {"{node}", node},
      {"{instance_type}", offer.instance_type},
      {"{region}", offer.region},
      {"{provider}", offer.provider}};
  std::vector<std::string> out;
  for (std::string word : templ) {
    for (const auto& [key, value] : fields) {
      for (size_t at = word.find(key); at != std::string::npos;
           at = word.find(key, at + value.size()))
        word.replace(at, key.size(), value);
    }
    out.push_back(std::move(word));
  }
  return out;
}

std::vector<NodeOutcome> ResumeNodes(const PowerConfig& config,
                                     const std::vector<CloudOffer>& offers,
                                     const std::vector<std::string>& nodes, store::Database& db,
                                     PowerEnv& env) {
  std::vector<NodeOutcome> out;
  for (const std::string& node : nodes) {
    const CloudOffer* offer = OfferOfNode(offers, node);
    if (offer == nullptr) {
      const std::string why = "fulcrum: no offer of " + config.origin + " names node " + node;
      MarkDown(env, node, why);
      out.push_back({node, "failed", why});
    } else {
      out.push_back(ResumeOne(config, *offer, node, db, env));
    }
    env.log("resume " + out.back().node + ": " + out.back().result + ": " + out.back().detail);
  }
  return out;
}

std::vector<NodeOutcome> SuspendNodes(const PowerConfig& config,
                                      const std::vector<CloudOffer>& offers,
                                      const std::vector<std::string>& nodes, store::Database& db,
                                      PowerEnv& env) {
  std::vector<NodeOutcome> out;
  for (const std::string& node : nodes) {
    const CloudOffer* offer = OfferOfNode(offers, node);
    std::optional<store::CloudNodeRecord> row = Latest(db, node);
    if (offer == nullptr || !row || row->state != "running") {
      out.push_back({node, "ended", "not started by fulcrum (nothing to end)"});
    } else if (offer->billing_seconds >= 3600) {
      // The hour is paid: keep the instance until just before the next billed hour.
      const double now = env.now();
      const double unit = offer->billing_seconds;
      const double next = row->started_at + std::ceil((now - row->started_at) / unit + 1e-9) * unit;
      const double at = std::max(now, next - config.end_before_hour_seconds);
      row->state = "ending";
      row->ended_at = at;
      (void)store::UpdateCloudNode(db, *row);
      std::vector<std::string> argv = env.self_argv;
      argv.insert(argv.end(), {"--at", std::to_string(static_cast<int64_t>(at)), "--row",
                               std::to_string(row->id), node});
      Status started = env.start_detached(argv);
      out.push_back({node, started.ok() ? "timer" : "failed",
                     started.ok() ? "ends " + FormatDuration(at - now) +
                                        " from now, before its next billed hour"
                                  : started.message()});
    } else {
      out.push_back(EndNow(config, *offer, *row, env, db, "ended"));
    }
    env.log("suspend " + out.back().node + ": " + out.back().result + ": " + out.back().detail);
  }
  return out;
}

NodeOutcome EndNodeAt(const PowerConfig& config, const std::vector<CloudOffer>& offers,
                      const std::string& node, int64_t row_id, store::Database& db, PowerEnv& env) {
  std::optional<store::CloudNodeRecord> row = Latest(db, node);
  const CloudOffer* offer = OfferOfNode(offers, node);
  NodeOutcome out{node, "reused", "resumed before its timer: the instance stays"};
  if (row && offer != nullptr && row->id == row_id && row->state == "ending") {
    out = EndNow(config, *offer, *row, env, db, "ended");
  }
  env.log("timer " + node + ": " + out.result + ": " + out.detail);
  return out;
}

std::vector<NodeOutcome> ResumeFailNodes(const PowerConfig& config,
                                         const std::vector<CloudOffer>& offers,
                                         const std::vector<std::string>& nodes, store::Database& db,
                                         PowerEnv& env) {
  std::vector<NodeOutcome> out;
  for (const std::string& node : nodes) {
    const CloudOffer* offer = OfferOfNode(offers, node);
    std::optional<store::CloudNodeRecord> row = Latest(db, node);
    if (offer == nullptr || !row || (row->state != "running" && row->state != "ending")) {
      out.push_back({node, "failed", "did not come up; nothing of fulcrum's to end"});
    } else {
      row->reason = "did not register with Slurm within ResumeTimeout";
      out.push_back(EndNow(config, *offer, *row, env, db, "failed"));
    }
    env.log("resume-fail " + out.back().node + ": " + out.back().result + ": " + out.back().detail);
  }
  return out;
}

std::vector<std::string> CloudConfLines(const CloudConf& c) {
  std::vector<std::string> lines = {
      "# Power saving (https://slurm.schedmd.com/power_save.html): Slurm starts nodes through",
      "# ResumeProgram when jobs wait, and stops them after SuspendTime idle.",
      "ResumeProgram=" + c.resume_program,
      "SuspendProgram=" + c.suspend_program,
      "ResumeFailProgram=" + c.resume_fail_program,
      "SuspendTime=" + std::to_string(static_cast<int64_t>(c.suspend_time_seconds)),
      "ResumeTimeout=" + std::to_string(static_cast<int64_t>(c.resume_timeout_seconds)),
      "SuspendTimeout=" + std::to_string(static_cast<int64_t>(c.suspend_timeout_seconds)),
      "ResumeRate=0",
      "SuspendRate=0",
      "# cloud_reg_addrs: a node registers with the address it has today (slurm.conf(5)).",
      "SlurmctldParameters=idle_on_node_suspend,cloud_reg_addrs",
      "# cloud: sinfo and squeue show powered-down cloud nodes too (slurm.conf(5) PrivateData).",
      "PrivateData=cloud",
      "# Weight = price in cents per hour: Slurm fills the lowest weight first (slurm.conf(5))."};
  std::string nodes;
  for (const CloudOffer& o : c.offers) {
    const std::string names =
        NodePrefix(o) + "-" + (c.max_nodes == 1 ? "1" : "[1-" + std::to_string(c.max_nodes) + "]");
    std::string line = "NodeName=" + names + " State=CLOUD";
    if (o.vcpus) line += " CPUs=" + std::to_string(*o.vcpus);
    if (o.memory_gib) {
      line += " RealMemory=" + std::to_string(static_cast<int64_t>(*o.memory_gib * 1024 * 0.95));
    }
    if (o.gpus > 0) line += " Gres=gpu:" + std::to_string(o.gpus);
    if (!o.gpu.empty()) line += " Features=" + o.gpu;
    line += " Weight=" + std::to_string(std::max<int64_t>(1, std::llround(o.usd_per_hour * 100)));
    line += "  # " + o.offer + " " + FormatUsd(o.usd_per_hour) + "/h";
    lines.push_back(line);
    nodes += (nodes.empty() ? "" : ",") + names;
  }
  lines.push_back("PartitionName=" + c.partition + " Nodes=" + nodes +
                  " Default=YES MaxTime=INFINITE State=UP");
  return lines;
}

std::string ProgramWrapper(const std::string& fulcrum_binary, const std::string& config_path,
                           const std::string& subcommand, const std::string& catalog_dir) {
  return "#!/bin/sh\n# Written by fulcrum slurm conf --cloud: Slurm runs this with the node list.\n"
         "exec " +
         ShellQuote(fulcrum_binary) +
         (catalog_dir.empty() ? "" : " --catalog " + ShellQuote(catalog_dir)) + " slurm " +
         subcommand + " --config " + ShellQuote(config_path) + " \"$@\"\n";
}

}  // namespace fulcrum::cluster
