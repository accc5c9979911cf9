#include "agent/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "alert/delivery.h"
#include "alert/notify.h"
#include "core/parse.h"

namespace fulcrum::agent {
namespace {

std::string Key(std::string key) {
  for (char& c : key) {
    if (c == '-') c = '_';
  }
  return key;
}

std::string Where(const std::string& origin, const YAML::Node& node, const std::string& key) {
  return origin + ":" + std::to_string(node.Mark().line + 1) + ": field '" + key + "'";
}

Result<std::string> Scalar(const std::string& where, const YAML::Node& node) {
  if (!node.IsScalar()) return Status::InvalidInput(where + ": expected a single value");
  return node.as<std::string>();
}

Result<double> Duration(const std::string& where, const YAML::Node& node) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, Scalar(where, node));
  auto seconds = ParseDurationSeconds(text);
  if (!seconds.ok()) return seconds.status().WithContext(where);
  return *seconds;
}

Result<double> Number(const std::string& where, const YAML::Node& node) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, Scalar(where, node));
  auto value = ParseDouble(text);
  if (!value.ok()) return value.status().WithContext(where);
  return *value;
}

Result<bool> Bool(const std::string& where, const YAML::Node& node) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, Scalar(where, node));
  std::string lower = ToLower(text);
  if (lower == "true" || lower == "yes" || lower == "on") return true;
  if (lower == "false" || lower == "no" || lower == "off") return false;
  return Status::InvalidInput(where + ": expected true or false, found '" + text + "'");
}

Status ParseReceiver(const std::string& origin, const YAML::Node& node, ReceiverConfig& r) {
  if (!node.IsMap()) {
    return Status::InvalidInput(origin + ":" + std::to_string(node.Mark().line + 1) +
                                ": a receiver is {name, url, format, token}");
  }
  for (const auto& item : node) {
    std::string key = Key(item.first.as<std::string>());
    std::string where = Where(origin, item.first, key);
    FULCRUM_ASSIGN_OR_RETURN(std::string value, Scalar(where, item.second));
    if (key == "name") {
      r.name = value;
    } else if (key == "url") {
      r.url = value;
    } else if (key == "format") {
      r.format = value;
    } else if (key == "token") {
      r.token = value;
    } else {
      return Status::InvalidInput(where +
                                  ": unknown receiver field (expected name, url, format, token)");
    }
  }
  if (r.url.empty()) return Status::InvalidInput(origin + ": a receiver needs a url");
  return Status::Ok();
}

Status ParseIdle(const std::string& origin, const YAML::Node& node, IdleConfig& idle) {
  if (!node.IsMap()) return Status::InvalidInput(origin + ": 'idle' must be a mapping");
  for (const auto& item : node) {
    std::string key = Key(item.first.as<std::string>());
    std::string where = Where(origin, item.first, "idle." + key);
    if (key == "enabled") {
      FULCRUM_ASSIGN_OR_RETURN(idle.enabled, Bool(where, item.second));
    } else if (key == "dry_run") {
      FULCRUM_ASSIGN_OR_RETURN(idle.dry_run, Bool(where, item.second));
    } else if (key == "after") {
      FULCRUM_ASSIGN_OR_RETURN(idle.after_seconds, Duration(where, item.second));
    } else if (key == "warn_before") {
      FULCRUM_ASSIGN_OR_RETURN(idle.warn_before_seconds, Duration(where, item.second));
    } else if (key == "utilization_below_pct") {
      FULCRUM_ASSIGN_OR_RETURN(idle.utilization_below_pct, Number(where, item.second));
    } else if (key == "memory_below_ratio") {
      FULCRUM_ASSIGN_OR_RETURN(idle.memory_below_ratio, Number(where, item.second));
    } else if (key == "heartbeat_max_age") {
      FULCRUM_ASSIGN_OR_RETURN(idle.heartbeat_max_age_seconds, Duration(where, item.second));
    } else if (key == "command") {
      if (!item.second.IsSequence() || item.second.size() == 0) {
        return Status::InvalidInput(where +
                                    ": expected a non-empty list (argv, no shell), e.g. "
                                    "[shutdown, -h, now]");
      }
      idle.command.clear();
      for (const auto& arg : item.second) idle.command.push_back(arg.as<std::string>());
    } else {
      return Status::InvalidInput(where +
                                  ": unknown idle field (expected enabled, dry_run, after, "
                                  "warn_before, utilization_below_pct, memory_below_ratio, "
                                  "heartbeat_max_age, command)");
    }
  }
  return Status::Ok();
}

}  // namespace

Status ParseAgentConfigYaml(const std::string& text, const std::string& origin, AgentConfig& c) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidInput(origin + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (root.IsNull()) return Status::Ok();
  if (!root.IsMap()) return Status::InvalidInput(origin + ": expected a mapping of settings");
  std::optional<std::string> receiver_url, receiver_format;
  try {
    for (const auto& item : root) {
      std::string key = Key(item.first.as<std::string>());
      std::string where = Where(origin, item.first, key);
      const YAML::Node& v = item.second;
      if (key == "source") {
        FULCRUM_ASSIGN_OR_RETURN(c.source, Scalar(where, v));
      } else if (key == "sim_gpus") {
        FULCRUM_ASSIGN_OR_RETURN(double n, Number(where, v));
        c.sim_gpus = static_cast<int>(n);
      } else if (key == "sim_scenario") {
        FULCRUM_ASSIGN_OR_RETURN(c.sim_scenario, Scalar(where, v));
      } else if (key == "listen") {
        FULCRUM_ASSIGN_OR_RETURN(c.listen, Scalar(where, v));
      } else if (key == "data_dir") {
        FULCRUM_ASSIGN_OR_RETURN(c.data_dir, Scalar(where, v));
      } else if (key == "rules") {
        FULCRUM_ASSIGN_OR_RETURN(c.rules, Scalar(where, v));
      } else if (key == "interval") {
        FULCRUM_ASSIGN_OR_RETURN(c.interval_seconds, Duration(where, v));
      } else if (key == "receiver") {
        FULCRUM_ASSIGN_OR_RETURN(receiver_url, Scalar(where, v));
      } else if (key == "receiver_format") {
        FULCRUM_ASSIGN_OR_RETURN(receiver_format, Scalar(where, v));
      } else if (key == "receivers") {
        if (!v.IsSequence()) return Status::InvalidInput(where + ": expected a list of receivers");
        c.receivers.clear();
        for (const auto& r : v) {
          ReceiverConfig receiver;
          FULCRUM_RETURN_IF_ERROR(ParseReceiver(origin, r, receiver));
          c.receivers.push_back(receiver);
        }
      } else if (key == "token") {
        FULCRUM_ASSIGN_OR_RETURN(c.token, Scalar(where, v));
      } else if (key == "record") {
        FULCRUM_ASSIGN_OR_RETURN(c.record, Scalar(where, v));
      } else if (key == "hostname") {
        FULCRUM_ASSIGN_OR_RETURN(c.hostname, Scalar(where, v));
      } else if (key == "allowed_hosts") {
        if (!v.IsSequence()) return Status::InvalidInput(where + ": expected a list of host names");
        c.allowed_hosts.clear();
        for (const auto& h : v) {
          FULCRUM_ASSIGN_OR_RETURN(std::string name, Scalar(where, h));
          c.allowed_hosts.push_back(name);
        }
      } else if (key == "retention") {
        if (!v.IsMap()) return Status::InvalidInput(where + ": expected {raw: 48h, rollups: 30d}");
        for (const auto& r : v) {
          std::string rkey = Key(r.first.as<std::string>());
          std::string rwhere = Where(origin, r.first, "retention." + rkey);
          if (rkey == "raw") {
            FULCRUM_ASSIGN_OR_RETURN(c.raw_retention_seconds, Duration(rwhere, r.second));
          } else if (rkey == "rollups") {
            FULCRUM_ASSIGN_OR_RETURN(c.rollup_retention_seconds, Duration(rwhere, r.second));
          } else {
            return Status::InvalidInput(rwhere + ": unknown (expected raw, rollups)");
          }
        }
      } else if (key == "idle") {
        FULCRUM_RETURN_IF_ERROR(ParseIdle(origin, v, c.idle));
      } else {
        return Status::InvalidInput(
            where +
            ": unknown setting (expected source, sim_gpus, sim_scenario, listen, "
            "data_dir, rules, interval, receiver, receiver_format, receivers, token, "
            "record, hostname, allowed_hosts, retention, idle)");
      }
    }
  } catch (const YAML::Exception& e) {
    return Status::InvalidInput(origin + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (receiver_url) {
    ReceiverConfig r;
    r.url = *receiver_url;
    if (receiver_format) r.format = *receiver_format;
    c.receivers.insert(c.receivers.begin(), r);
  } else if (receiver_format) {
    return Status::InvalidInput(origin + ": 'receiver_format' needs 'receiver'");
  }
  return Status::Ok();
}

Status LoadAgentConfigFile(const std::string& path, AgentConfig& config) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot read agent config " + path);
  std::stringstream text;
  text << in.rdbuf();
  return ParseAgentConfigYaml(text.str(), path, config);
}

Status ValidateAgentConfig(const AgentConfig& c) {
  if (c.source != "nvml" && c.source != "sim" && c.source.rfind("replay:", 0) != 0) {
    return Status::InvalidInput("source '" + c.source + "': expected nvml, sim or replay:FILE");
  }
  if (c.source == "replay:") return Status::InvalidInput("source 'replay:' needs a FILE");
  if (c.sim_gpus < 1 || c.sim_gpus > 64) {
    return Status::InvalidInput("sim-gpus " + std::to_string(c.sim_gpus) + ": expected 1-64");
  }
  if (!(c.interval_seconds >= 0.05 && c.interval_seconds <= 3600)) {
    return Status::InvalidInput("interval: expected 50ms to 1h");
  }
  for (const ReceiverConfig& r : c.receivers) {
    auto format = alert::ParseReceiverFormat(r.format);
    if (!format.ok()) return format.status().WithContext("receiver '" + r.name + "'");
    if (r.url.rfind("http://", 0) != 0 && r.url.rfind("https://", 0) != 0) {
      return Status::InvalidInput("receiver '" + r.name +
                                  "': URL must start with http:// or https://");
    }
    FULCRUM_RETURN_IF_ERROR(alert::ValidateReceiverUrl(r.name, r.url));
  }
  for (const std::string& host : c.allowed_hosts) {
    bool name_chars = !host.empty() && std::all_of(host.begin(), host.end(), [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-' || ch == ':';
    });
    if (!name_chars) {
      return Status::InvalidInput("allowed-host '" + host +
                                  "': expected a host name or IP address (letters, digits, "
                                  "'.', '-', ':'), without port");
    }
  }
  if (c.idle.after_seconds <= 0) return Status::InvalidInput("idle.after: expected > 0");
  if (c.idle.command.empty()) return Status::InvalidInput("idle.command: expected an argv list");
  if (c.raw_retention_seconds <= 0 || c.rollup_retention_seconds <= 0) {
    return Status::InvalidInput("retention: expected durations > 0");
  }
  return Status::Ok();
}

}  // namespace fulcrum::agent
