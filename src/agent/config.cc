#include "agent/config.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "alert/delivery.h"
#include "alert/notify.h"
#include "core/input_error.h"
#include "core/parse.h"
#include "core/text_file.h"
#include "core/yaml.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "telemetry/nccl_ras.h"

namespace fulcrum::agent {
namespace {

// Settings may be spelled with dashes like the flags ("data-dir" = "data_dir").
std::string Key(std::string key) {
  for (char& c : key) {
    if (c == '-') c = '_';
  }
  return key;
}

// `s` (an error of a value parsed from `node`'s text) at node's file:line and field.
Status AtLine(const YamlNode& node, const Status& s) {
  if (s.ok() || s.detail() == nullptr) return s;
  ErrorDetail detail = *s.detail();
  detail.file = node.origin();
  detail.line = node.line();
  detail.field = node.field();
  return InputError(std::move(detail));
}

// `s` (a check of a value from `node` that knows no place) at node's file:line.
Status At(const YamlNode& node, const Status& s) {
  if (s.ok() || s.detail() != nullptr) return AtLine(node, s);
  return Status(s.code(), node.Where() + ": " + s.message());
}

bool IsSource(const std::string& source) {
  return source == "nvml" || source == "sim" ||
         (source.rfind("replay:", 0) == 0 && source.size() > 7);
}

bool IsHostName(const std::string& host) {
  return !host.empty() && std::all_of(host.begin(), host.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-' || ch == ':';
  });
}

constexpr const char* kHostNameExpected =
    "a host name or IP address (letters, digits, '.', '-', ':'), without port";

// What is wrong with receiver `r` (Ok when nothing) and the key it concerns ("" = the receiver as
// a whole): one check for a file (at that key's line) and the flags (ValidateAgentConfig). The
// URL is never quoted: it may hold a secret.
std::pair<std::string, Status> CheckReceiver(const ReceiverConfig& r) {
  auto format = alert::ParseReceiverFormat(r.format);
  if (!format.ok()) return {"format", format.status().WithContext("receiver '" + r.name + "'")};
  if (r.url.rfind("http://", 0) != 0 && r.url.rfind("https://", 0) != 0) {
    return {"url", Status::InvalidInput("receiver '" + r.name +
                                        "': URL must start with http:// or https://")};
  }
  if (Status url = alert::ValidateReceiverUrl(r.name, r.url); !url.ok()) return {"url", url};
  // A key the format would ignore is a mistake (a bot left unsigned), said at start-up.
  const bool signs =
      *format == alert::ReceiverFormat::kFeishu || *format == alert::ReceiverFormat::kDingTalk;
  if (!r.secret.empty() && !signs) {
    return {"secret", Status::InvalidInput("receiver '" + r.name +
                                           "': 'secret' signs feishu and dingtalk bots only, "
                                           "found format '" +
                                           r.format + "'")};
  }
  const bool pagerduty = *format == alert::ReceiverFormat::kPagerDuty;
  if (pagerduty && r.routing_key.empty()) {
    return {"", Status::InvalidInput("receiver '" + r.name +
                                     "': format pagerduty needs 'routing_key' (the integration "
                                     "key of an Events API v2 integration)")};
  }
  if (!pagerduty && !r.routing_key.empty()) {
    return {"routing_key", Status::InvalidInput("receiver '" + r.name +
                                                "': 'routing_key' is for format pagerduty only, "
                                                "found format '" +
                                                r.format + "'")};
  }
  return {"", Status::Ok()};
}

// CheckReceiver of the receiver read from `node` (a mapping), at the line of the key it concerns.
Status CheckReceiverAt(const YamlNode& node, const ReceiverConfig& r) {
  auto [key, status] = CheckReceiver(r);
  if (status.ok()) return status;
  std::optional<YamlNode> at = key.empty() ? std::nullopt : node.Find(key);
  if (!at && key == "routing_key") at = node.Find("routing-key");
  return At(at.value_or(node), status);
}

Status ParseReceiver(const YamlNode& node, ReceiverConfig& r) {
  static const std::vector<std::string> kKnown = {"name",  "url",    "format",
                                                  "token", "secret", "routing_key"};
  FULCRUM_ASSIGN_OR_RETURN(auto entries, node.Entries());
  for (const auto& [raw_key, v] : entries) {
    const std::string key = Key(raw_key);
    if (key == "name") {
      FULCRUM_ASSIGN_OR_RETURN(r.name, v.Text());
    } else if (key == "url") {
      FULCRUM_ASSIGN_OR_RETURN(r.url, v.Text());
    } else if (key == "format") {
      FULCRUM_ASSIGN_OR_RETURN(r.format, v.Text());
      FULCRUM_RETURN_IF_ERROR(AtLine(v, alert::ParseReceiverFormat(r.format).status()));
    } else if (key == "token") {
      FULCRUM_ASSIGN_OR_RETURN(r.token, v.Text());
    } else if (key == "secret") {
      FULCRUM_ASSIGN_OR_RETURN(r.secret, v.Text());
    } else if (key == "routing_key") {
      FULCRUM_ASSIGN_OR_RETURN(r.routing_key, v.Text());
    } else {
      return v.UnknownFieldError(kKnown);
    }
  }
  if (r.url.empty() && r.format == "pagerduty") r.url = kPagerDutyEventsUrl;
  if (r.url.empty()) return node.MissingError("url", "a receiver url");
  return CheckReceiverAt(node, r);
}

Status ParseIdle(const YamlNode& node, IdleConfig& idle) {
  static const std::vector<std::string> kKnown = {"enabled",
                                                  "dry_run",
                                                  "after",
                                                  "warn_before",
                                                  "utilization_below_pct",
                                                  "memory_below_ratio",
                                                  "heartbeat_max_age",
                                                  "command"};
  FULCRUM_ASSIGN_OR_RETURN(auto entries, node.Entries());
  for (const auto& [raw_key, v] : entries) {
    const std::string key = Key(raw_key);
    if (key == "enabled") {
      FULCRUM_ASSIGN_OR_RETURN(idle.enabled, v.Bool());
    } else if (key == "dry_run") {
      FULCRUM_ASSIGN_OR_RETURN(idle.dry_run, v.Bool());
    } else if (key == "after") {
      FULCRUM_ASSIGN_OR_RETURN(idle.after_seconds,
                               v.Duration("a duration above 0, e.g. 30m", YamlNode::kAboveZero));
    } else if (key == "warn_before") {
      FULCRUM_ASSIGN_OR_RETURN(idle.warn_before_seconds, v.Duration());
    } else if (key == "utilization_below_pct") {
      FULCRUM_ASSIGN_OR_RETURN(idle.utilization_below_pct,
                               v.Number("a percentage from 0 to 100", 0, 100));
    } else if (key == "memory_below_ratio") {
      FULCRUM_ASSIGN_OR_RETURN(idle.memory_below_ratio, v.Number("a ratio from 0 to 1", 0, 1));
    } else if (key == "heartbeat_max_age") {
      FULCRUM_ASSIGN_OR_RETURN(idle.heartbeat_max_age_seconds, v.Duration());
    } else if (key == "command") {
      const std::string expected = "a non-empty list (argv, no shell), e.g. [shutdown, -h, now]";
      if (!v.IsSequence()) return v.Error(expected);
      FULCRUM_ASSIGN_OR_RETURN(std::vector<std::string> argv, v.StringList());
      if (argv.empty()) return v.Error(expected);
      idle.command = std::move(argv);
    } else {
      return v.UnknownFieldError(kKnown);
    }
  }
  return Status::Ok();
}

}  // namespace

Status ParseAgentConfigYaml(const std::string& text, const std::string& origin, AgentConfig& c) {
  static const std::vector<std::string> kKnown = {
      "source", "sim_gpus",      "sim_scenario",  "listen",          "data_dir",
      "rules",  "interval",      "receiver",      "receiver_format", "receivers",
      "token",  "record",        "hostname",      "allowed_hosts",   "retention",
      "idle",   "metrics_names", "fast_interval", "nccl_ras",        "nccl_ras_interval"};
  FULCRUM_ASSIGN_OR_RETURN(YamlNode root, LoadYaml(text, origin));
  if (root.IsNull()) return Status::Ok();
  if (!root.IsMap()) return root.Error("a mapping of settings");
  std::optional<std::string> receiver_url, receiver_format;
  FULCRUM_ASSIGN_OR_RETURN(auto entries, root.Entries());
  for (const auto& [raw_key, v] : entries) {
    const std::string key = Key(raw_key);
    if (key == "source") {
      FULCRUM_ASSIGN_OR_RETURN(c.source, v.Text());
      if (!IsSource(c.source)) return v.Error("nvml, sim or replay:FILE");
    } else if (key == "sim_gpus") {
      FULCRUM_ASSIGN_OR_RETURN(int64_t n, v.Integer(1, kMaxSimGpus));
      c.sim_gpus = static_cast<int>(n);
    } else if (key == "sim_scenario") {
      FULCRUM_ASSIGN_OR_RETURN(c.sim_scenario, v.Text());
    } else if (key == "listen") {
      FULCRUM_ASSIGN_OR_RETURN(c.listen, v.Text());
      if (!server::ParseListen(c.listen).ok()) {
        return v.Error("HOST:PORT with a port from 0 to 65535, e.g. 127.0.0.1:9400");
      }
    } else if (key == "data_dir") {
      FULCRUM_ASSIGN_OR_RETURN(c.data_dir, v.Text());
    } else if (key == "rules") {
      FULCRUM_ASSIGN_OR_RETURN(c.rules, v.Text());
    } else if (key == "interval") {
      FULCRUM_ASSIGN_OR_RETURN(c.interval_seconds,
                               v.Duration("a duration from 50ms to 1h", 0.05, 3600));
    } else if (key == "fast_interval") {
      const std::string expected = "0 (off) or a duration from 20ms to 1h";
      FULCRUM_ASSIGN_OR_RETURN(c.fast_interval_seconds, v.Duration(expected, 0, 3600));
      if (c.fast_interval_seconds != 0 && c.fast_interval_seconds < 0.02) return v.Error(expected);
    } else if (key == "receiver") {
      FULCRUM_ASSIGN_OR_RETURN(receiver_url, v.Text());
    } else if (key == "receiver_format") {
      FULCRUM_ASSIGN_OR_RETURN(receiver_format, v.Text());
    } else if (key == "receivers") {
      FULCRUM_ASSIGN_OR_RETURN(std::vector<YamlNode> items, v.Items("a list of receivers"));
      c.receivers.clear();
      for (const YamlNode& item : items) {
        ReceiverConfig receiver;
        FULCRUM_RETURN_IF_ERROR(ParseReceiver(item, receiver));
        c.receivers.push_back(receiver);
      }
    } else if (key == "token") {
      FULCRUM_ASSIGN_OR_RETURN(c.token, v.Text());
    } else if (key == "record") {
      FULCRUM_ASSIGN_OR_RETURN(c.record, v.Text());
    } else if (key == "hostname") {
      FULCRUM_ASSIGN_OR_RETURN(c.hostname, v.Text());
    } else if (key == "metrics_names") {
      FULCRUM_ASSIGN_OR_RETURN(c.metrics_names, v.Text());
      if (!server::ParseMetricsNames(c.metrics_names).ok()) {
        return v.Error("fulcrum, dcgm or both");
      }
    } else if (key == "allowed_hosts") {
      FULCRUM_ASSIGN_OR_RETURN(std::vector<YamlNode> hosts, v.Items("a list of host names"));
      c.allowed_hosts.clear();
      for (const YamlNode& h : hosts) {
        FULCRUM_ASSIGN_OR_RETURN(std::string name, h.Text());
        if (!IsHostName(name)) return h.Error(kHostNameExpected);
        c.allowed_hosts.push_back(name);
      }
    } else if (key == "retention") {
      if (!v.IsMap()) return v.Error("{raw: 48h, rollups: 30d}");
      FULCRUM_ASSIGN_OR_RETURN(auto retention, v.Entries());
      for (const auto& [rkey, r] : retention) {
        if (Key(rkey) == "raw") {
          FULCRUM_ASSIGN_OR_RETURN(
              c.raw_retention_seconds,
              r.Duration("a duration above 0, e.g. 48h", YamlNode::kAboveZero));
        } else if (Key(rkey) == "rollups") {
          FULCRUM_ASSIGN_OR_RETURN(
              c.rollup_retention_seconds,
              r.Duration("a duration above 0, e.g. 30d", YamlNode::kAboveZero));
        } else {
          return r.UnknownFieldError({"raw", "rollups"});
        }
      }
    } else if (key == "nccl_ras") {
      FULCRUM_ASSIGN_OR_RETURN(c.nccl_ras, v.Text());
      if (c.nccl_ras != "off" && !telemetry::ValidateNcclRasAddress(c.nccl_ras).ok()) {
        return v.Error("off or IPV4:PORT (e.g. 127.0.0.1:28028)");
      }
    } else if (key == "nccl_ras_interval") {
      FULCRUM_ASSIGN_OR_RETURN(c.nccl_ras_interval_seconds,
                               v.Duration("a duration from 1s to 1h", 1, 3600));
    } else if (key == "idle") {
      if (!v.IsMap()) return v.Error("a mapping");
      FULCRUM_RETURN_IF_ERROR(ParseIdle(v, c.idle));
    } else {
      return v.UnknownFieldError(kKnown);
    }
  }
  if (receiver_url) {
    ReceiverConfig r;
    r.url = *receiver_url;
    if (receiver_format) r.format = *receiver_format;
    if (auto [key, status] = CheckReceiver(r); !status.ok()) {
      std::optional<YamlNode> at = root.Find(key == "format" ? "receiver_format" : "receiver");
      if (!at && key == "format") at = root.Find("receiver-format");
      return At(at.value_or(root), status);
    }
    c.receivers.insert(c.receivers.begin(), r);
  } else if (receiver_format) {
    std::optional<YamlNode> format = root.Find("receiver_format");
    if (!format) format = root.Find("receiver-format");
    if (format) return format->Error("'receiver' given too (receiver_format sets its format)");
    return Status::InvalidInput(origin + ": 'receiver_format' needs 'receiver'");
  }
  return Status::Ok();
}

std::vector<std::string> SecretFields(const AgentConfig& c) {
  std::vector<std::string> fields;
  if (!c.token.empty()) fields.push_back("token");
  for (size_t i = 0; i < c.receivers.size(); ++i) {
    const ReceiverConfig& r = c.receivers[i];
    const std::string at = "receivers[" + std::to_string(i) + "].";
    // A webhook URL is itself the credential (Slack, Feishu, DingTalk, WeCom: anyone holding it
    // can post); the shipped default is a placeholder the user replaces.
    if (!r.url.empty() && r.url != kPagerDutyEventsUrl) fields.push_back(at + "url");
    if (!r.token.empty()) fields.push_back(at + "token");
    if (!r.secret.empty()) fields.push_back(at + "secret");
    if (!r.routing_key.empty()) fields.push_back(at + "routing_key");
  }
  return fields;
}

Status CheckConfigPrivate(const std::string& path, const AgentConfig& config) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Status::Ok();  // read a moment ago: a race
  const mode_t readable_by_others = S_IRGRP | S_IROTH;
  if ((st.st_mode & readable_by_others) == 0) return Status::Ok();
  const std::vector<std::string> secrets = SecretFields(config);
  if (secrets.empty()) return Status::Ok();
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return InputError(
      {path,
       std::nullopt,
       "",
       "a file only its owner can read, as it holds secrets (" + JoinNames(secrets) +
           "); run: chmod 600 " + path,
       std::string("mode ") + mode + " (" +
           ((st.st_mode & S_IROTH) ? "readable by every user" : "group-readable") + ")",
       {}},
      FoundIs::kDescription);
}

Status LoadAgentConfigFile(const std::string& path, AgentConfig& config) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, "an agent config (YAML)"));
  FULCRUM_RETURN_IF_ERROR(ParseAgentConfigYaml(text, path, config));
  return CheckConfigPrivate(path, config);
}

Status ValidateAgentConfig(const AgentConfig& c) {
  if (c.source == "replay:") return Status::InvalidInput("source 'replay:' needs a FILE");
  if (!IsSource(c.source)) {
    return Status::InvalidInput("source '" + c.source + "': expected nvml, sim or replay:FILE");
  }
  if (c.sim_gpus < 1 || c.sim_gpus > kMaxSimGpus) {
    return Status::InvalidInput("sim-gpus " + std::to_string(c.sim_gpus) + ": expected 1-64");
  }
  if (!(c.interval_seconds >= 0.05 && c.interval_seconds <= 3600)) {
    return Status::InvalidInput("interval: expected 50ms to 1h");
  }
  FULCRUM_RETURN_IF_ERROR(server::ParseMetricsNames(c.metrics_names).status());
  if (c.fast_interval_seconds != 0 &&
      !(c.fast_interval_seconds >= 0.02 && c.fast_interval_seconds <= 3600)) {
    return Status::InvalidInput("fast-interval: expected 0 (off) or 20ms to 1h");
  }
  for (const ReceiverConfig& r : c.receivers) {
    FULCRUM_RETURN_IF_ERROR(CheckReceiver(r).second);
  }
  for (const std::string& host : c.allowed_hosts) {
    if (!IsHostName(host)) {
      return Status::InvalidInput("allowed-host '" + host + "': expected " + kHostNameExpected);
    }
  }
  if (c.nccl_ras != "off") {
    FULCRUM_RETURN_IF_ERROR(
        telemetry::ValidateNcclRasAddress(c.nccl_ras).WithContext("nccl-ras (or \"off\")"));
  }
  if (!(c.nccl_ras_interval_seconds >= 1 && c.nccl_ras_interval_seconds <= 3600)) {
    return Status::InvalidInput("nccl-ras-interval: expected 1s to 1h");
  }
  if (c.idle.after_seconds <= 0) return Status::InvalidInput("idle.after: expected > 0");
  if (c.idle.command.empty()) return Status::InvalidInput("idle.command: expected an argv list");
  if (c.raw_retention_seconds <= 0 || c.rollup_retention_seconds <= 0) {
    return Status::InvalidInput("retention: expected durations > 0");
  }
  return Status::Ok();
}

}  // namespace fulcrum::agent
