// `fulcrum agent`: the node daemon (see src/agent/agent.h). Flags override --config's YAML.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "agent/agent.h"
#include "alert/notify.h"
#include "cli/command.h"
#include "core/clock.h"
#include "core/input_error.h"
#include "core/parse.h"

namespace fulcrum::cli {
namespace {

// The write end of the stop pipe, for the signal handler (a signal handler can reach nothing
// else; it only writes one byte, which is async-signal-safe).
int g_stop_write_fd = -1;  // NOLINT: the one global a signal handler needs

extern "C" void OnStopSignal(int) {
  if (g_stop_write_fd >= 0) {
    char byte = 1;
    ssize_t ignored = write(g_stop_write_fd, &byte, 1);
    (void)ignored;
  }
}

struct AgentFlags {
  std::string config, source, sim_scenario, listen, data_dir, rules, interval, receiver,
      receiver_format, token, record, metrics_names, fast_interval;
  std::vector<std::string> allowed_hosts;
  int sim_gpus = 0;
  bool json = false;
};

constexpr const char* kFooter = R"(
Examples:
  fulcrum agent                                    # real GPUs (NVML), defaults
  fulcrum agent --source sim --sim-gpus 8 --listen 127.0.0.1:9400 --data-dir /tmp/fulcrum
  fulcrum agent --config /etc/fulcrum/agent.yaml --receiver https://hooks.slack.com/... \
                --receiver-format slack

Every flag can be set in the YAML config under its name (sim-gpus or sim_gpus); flags win.
The config alone holds: receivers (list of {name, url, format, token, secret, routing_key};
formats generic, alertmanager, slack, feishu, dingtalk, wecom, pagerduty, teams, discord,
alertmanager-api), retention ({raw: 48h, rollups: 30d}), hostname, and idle release: {enabled: true, dry_run: true, after: 30m,
warn_before: 5m, utilization_below_pct: 5, memory_below_ratio: 0.05, command: [shutdown, -h,
now]}. Idle release only logs (dry run) until the config sets dry_run: false.
Endpoints: /v1/health /v1/gpus /v1/series /v1/alerts /v1/host /v1/jobs /v1/idle, POST
/v1/idle/cancel (token), /metrics (Prometheus), / (dashboard). See docs/API.md.
SIGTERM or SIGINT stop it after flushing the last samples.)";

std::vector<std::string> ReceiverFormatNames() {
  std::vector<std::string> names;
  for (alert::ReceiverFormat format : alert::AllReceiverFormats()) {
    names.emplace_back(alert::ToString(format));
  }
  return names;
}

Status Apply(const AgentFlags& f, agent::AgentConfig& c) {
  if (!f.config.empty()) FULCRUM_RETURN_IF_ERROR(agent::LoadAgentConfigFile(f.config, c));
  if (!f.source.empty()) c.source = f.source;
  if (f.sim_gpus != 0) c.sim_gpus = f.sim_gpus;
  if (!f.sim_scenario.empty()) c.sim_scenario = f.sim_scenario;
  if (!f.listen.empty()) c.listen = f.listen;
  if (!f.data_dir.empty()) c.data_dir = f.data_dir;
  if (!f.rules.empty()) c.rules = f.rules;
  if (!f.interval.empty()) {
    auto seconds = ParseDurationSeconds(f.interval);
    if (!seconds.ok()) return seconds.status().WithContext("--interval");
    c.interval_seconds = *seconds;
  }
  if (!f.receiver.empty()) {
    agent::ReceiverConfig r;
    r.url = f.receiver;
    if (!f.receiver_format.empty()) r.format = f.receiver_format;
    // --receiver replaces a file receiver of the same name ("default").
    std::erase_if(c.receivers, [](const agent::ReceiverConfig& x) { return x.name == "default"; });
    c.receivers.insert(c.receivers.begin(), r);
  } else if (!f.receiver_format.empty()) {
    if (c.receivers.empty()) return Status::InvalidInput("--receiver-format needs --receiver");
    c.receivers.front().format = f.receiver_format;
  }
  if (!f.token.empty()) c.token = f.token;
  if (!f.record.empty()) c.record = f.record;
  if (!f.metrics_names.empty()) c.metrics_names = f.metrics_names;
  if (!f.fast_interval.empty()) {
    auto seconds = ParseDurationSeconds(f.fast_interval);
    if (!seconds.ok()) return seconds.status().WithContext("--fast-interval");
    c.fast_interval_seconds = *seconds;
  }
  c.allowed_hosts.insert(c.allowed_hosts.end(), f.allowed_hosts.begin(), f.allowed_hosts.end());
  return agent::ValidateAgentConfig(c);
}

void RunAgent(CliContext& ctx, const AgentFlags& flags) {
  agent::AgentConfig config;
  Status st = Apply(flags, config);
  if (!st.ok()) return ReportError(ctx, st);
  if (spdlog::get_level() > spdlog::level::info) spdlog::set_level(spdlog::level::info);
  SystemClock clock;
  auto created = agent::Agent::Create(config, clock);
  if (!created.ok()) return ReportError(ctx, created.status());
  agent::Agent& a = **created;

  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    return ReportError(ctx, Status::IoError("cannot create the stop pipe"));
  }
  g_stop_write_fd = fds[1];
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);

  std::string host = config.listen.substr(0, config.listen.rfind(':'));
  std::string url = "http://" + host + ":" + std::to_string(a.port());
  if (flags.json) {
    // One line (the agent keeps running): what a caller reads to learn the port.
    ctx.out << WithSchemaVersion({{"agent",
                                   {{"url", url},
                                    {"port", a.port()},
                                    {"source", a.source_kind()},
                                    {"gpu_count", a.gpu_count()},
                                    {"data_dir", a.data_dir()}}}})
                   .dump()
            << std::endl;
  } else {
    ctx.out << "fulcrum agent: listening on " << url << " (source " << a.source_kind() << ", "
            << a.gpu_count() << " GPU(s), data dir " << a.data_dir() << ")" << std::endl;
  }
  st = a.Run(fds[0]);
  g_stop_write_fd = -1;
  close(fds[0]);
  close(fds[1]);
  if (!st.ok()) return ReportError(ctx, st);
  if (!flags.json) ctx.out << "fulcrum agent: stopped" << std::endl;
}

}  // namespace

void RegisterAgent(CLI::App* cmd, CliContext& ctx) {
  cmd->description(
      "Run the node agent: sample every GPU (NVML, sim or a recording), store the samples, "
      "evaluate alert rules and deliver webhooks, release idle machines, and serve /v1, "
      "/metrics and the dashboard. Runs in the foreground (systemd: "
      "packaging/fulcrum-agent.service).");
  cmd->footer(kFooter);
  auto f = std::make_shared<AgentFlags>();
  cmd->add_option("--config", f->config, "YAML file with any of these settings (flags win)")
      ->type_name("FILE");
  cmd->add_option("--source", f->source,
                  "GPU source: nvml (the driver's libnvidia-ml.so.1), sim (synthetic GPUs) or "
                  "replay:FILE (a --record file). Default nvml")
      ->type_name("nvml|sim|replay:FILE");
  cmd->add_option("--sim-gpus", f->sim_gpus, "Number of simulated GPUs (sim source; default 2)")
      ->type_name("N");
  cmd->add_option(
         "--sim-scenario", f->sim_scenario,
         "Fault scenario YAML for the sim source: - {at: 5s, gpu: 0, fault: overheat}; "
         "faults: overheat, heat-ramp, thermal-slowdown, power-cap, xid:N, "
         "ecc-uncorrectable, utilization-collapse, memory-leak, process-exit, hang, recover")
      ->type_name("FILE");
  cmd->add_option("--listen", f->listen, "HTTP address (default 127.0.0.1:9400; port 0 = any)")
      ->type_name("HOST:PORT");
  cmd->add_option("--data-dir", f->data_dir,
                  "Directory of agent.db and jobs.db (default $FULCRUM_DATA_DIR, else "
                  "/var/lib/fulcrum as root, else ~/.local/share/fulcrum)")
      ->type_name("DIR");
  cmd->add_option("--rules", f->rules,
                  "Alert rules YAML (default: the shipped examples/rules.yaml, compiled in)")
      ->type_name("FILE");
  cmd->add_option("--interval", f->interval, "Sampling interval (default 1s; 50ms to 1h)")
      ->type_name("DURATION");
  cmd->add_option("--receiver", f->receiver,
                  "Webhook URL for alert notifications (secret: never logged)")
      ->type_name("URL");
  cmd->add_option(
         "--receiver-format", f->receiver_format,
         "Payload format of --receiver (default generic): " + JoinNames(ReceiverFormatNames()))
      ->check(CLI::IsMember(ReceiverFormatNames()).description(""))
      ->type_name("FORMAT");
  cmd->add_option("--token", f->token,
                  "Bearer token required by state-changing endpoints (POST /v1/idle/cancel); "
                  "better set in the config file than on the command line")
      ->type_name("TOKEN");
  cmd->add_option("--record", f->record,
                  "Append every sample to FILE (JSON Lines) for --source replay:FILE")
      ->type_name("FILE");
  cmd->add_option("--allowed-host", f->allowed_hosts,
                  "Also accept requests whose Host header names NAME (repeatable; loopback names "
                  "and the --listen address are always accepted; others get 403, a defence "
                  "against DNS rebinding)")
      ->type_name("NAME");
  cmd->add_option("--fast-interval", f->fast_interval,
                  "Between full samples, read and alert on the cheap fields (utilization, "
                  "temperature, power, XID events) this often; stored as 1 s aggregates "
                  "(default 100ms; 0 = off)")
      ->type_name("DURATION");
  cmd->add_option("--metrics-names", f->metrics_names,
                  "Names on /metrics: fulcrum (fulcrum_gpu_*), dcgm (NVIDIA dcgm-exporter's "
                  "DCGM_FI_* names, labels and units, for its dashboards and alert rules) or "
                  "both. Default fulcrum")
      ->type_name("fulcrum|dcgm|both");
  cmd->add_flag("--json", f->json, "Print the startup line as {\"agent\": {url, port, ...}}");
  cmd->callback([&ctx, f] { RunAgent(ctx, *f); });
}

}  // namespace fulcrum::cli
