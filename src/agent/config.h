// The agent's configuration: every `fulcrum agent` flag, also settable in a YAML file
// (`--config agent.yaml`; keys are the flag names without dashes, `-` or `_` alike, e.g.
// `sim-gpus: 8` or `sim_gpus: 8`), plus the settings only the file has (several receivers,
// retention, idle release). Flags given on the command line override the file. Plain values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace fulcrum::agent {

struct ReceiverConfig {
  std::string name = "default";
  std::string url;  // SECRET (never logged); pagerduty defaults to kPagerDutyEventsUrl
  std::string format = "generic";
  std::string token;          // SECRET: bearer token sent to the receiver
  std::string secret{};       // SECRET: signing secret of a feishu or dingtalk bot
  std::string routing_key{};  // SECRET: PagerDuty integration key (pagerduty only, required)
};

// PagerDuty Events API v2 endpoint (developer.pagerduty.com/docs/events-API-v2/trigger-events).
inline constexpr const char* kPagerDutyEventsUrl = "https://events.pagerduty.com/v2/enqueue";

struct IdleConfig {
  bool enabled = true;
  // Until the config sets `dry_run: false`, the release command is only logged.
  bool dry_run = true;
  double after_seconds = 30 * 60.0;        // idle this long -> release (default 30 min)
  double warn_before_seconds = 5 * 60.0;   // warning webhook this long before the release
  double utilization_below_pct = 5;        // a GPU is idle under this utilization...
  double memory_below_ratio = 0.05;        // ...and under this fraction of its memory in use
  double heartbeat_max_age_seconds = 120;  // a supervised job heartbeating within counts as busy
  std::vector<std::string> command = {"shutdown", "-h", "now"};  // argv, no shell
};

struct AgentConfig {
  std::string source = "nvml";  // "nvml" | "sim" | "replay:FILE"
  int sim_gpus = 2;
  std::string sim_scenario;  // "" = no faults
  std::string listen = "127.0.0.1:9400";
  std::string data_dir;         // "" = store::ResolveDataDir default
  std::string rules;            // "" = the shipped defaults (examples/rules.yaml)
  double interval_seconds = 1;  // full samples, stored (1 s aggregates of the fast ticks)
  // Fast ticks between full samples: the cheap fields (utilization, temperature, power, XID
  // events) read and alerted on at this cadence; 0 = off.
  double fast_interval_seconds = 0.1;
  std::vector<ReceiverConfig> receivers;
  std::string token;   // SECRET: bearer token for mutating /v1 endpoints
  std::string record;  // "" = no recording
  double raw_retention_seconds = 48 * 3600.0;
  double rollup_retention_seconds = 30 * 86400.0;
  std::string hostname;  // "" = gethostname()
  // Host header names the HTTP API accepts besides loopback names and the listen address
  // (--allowed-host, repeatable; e.g. the name a fleet's Prometheus scrapes this node by).
  std::vector<std::string> allowed_hosts;
  // Names on /metrics: "fulcrum", "dcgm" (dcgm-exporter's names, labels and units) or "both".
  std::string metrics_names = "fulcrum";
  // NCCL's RAS status socket polled for the rank behind a hang (src/telemetry/nccl_ras_poller.h):
  // IPV4:PORT, or "off". NCCL serves it on localhost:28028 unless NCCL_RAS_ADDR moves it.
  std::string nccl_ras = "127.0.0.1:28028";
  double nccl_ras_interval_seconds = 10;
  IdleConfig idle;
};

// The most GPUs the sim source simulates (--sim-gpus, sim_gpus).
inline constexpr int kMaxSimGpus = 64;

// Reads `path` over `config` (only keys present change it). Unknown keys and bad values are
// errors naming path:line and the key. A file that holds secrets (SecretFields) and that its
// group or every user can read is refused (InvalidInput naming the mode, the fields and the
// `chmod 600 PATH` to run).
Status LoadAgentConfigFile(const std::string& path, AgentConfig& config);

// The dotted names of the secrets `config` holds: token, receivers[i].url (a webhook URL is the
// credential), .token, .secret, .routing_key.
std::vector<std::string> SecretFields(const AgentConfig& config);
Status ParseAgentConfigYaml(const std::string& text, const std::string& origin,
                            AgentConfig& config);

// Consistency checks after flags and file are merged (interval > 0, known source, formats...).
Status ValidateAgentConfig(const AgentConfig& config);

}  // namespace fulcrum::agent
