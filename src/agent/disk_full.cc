#include "agent/disk_full.h"

#include <fmt/format.h>

#include <utility>

namespace fulcrum::agent {

bool IsDiskFull(std::string_view error) {
  return error.find("database or disk is full") != std::string_view::npos ||
         error.find("No space left on device") != std::string_view::npos;
}

DiskFullAlert::DiskFullAlert(std::string hostname, std::string data_dir)
    : hostname_(std::move(hostname)), data_dir_(std::move(data_dir)) {}

std::optional<alert::Transition> DiskFullAlert::Refused(std::string_view error, double now) {
  if (firing() || !IsDiskFull(error)) return std::nullopt;
  fired_at_ = now;
  reason_ = fmt::format(
      "{}: the data disk of {} is full ({}); samples are not stored, alerts are delivered from "
      "memory",
      hostname_, data_dir_, error);
  return Make(alert::AlertStatus::kInactive, alert::AlertStatus::kFiring, now, reason_);
}

std::optional<alert::Transition> DiskFullAlert::Stored(double now) {
  if (!firing()) return std::nullopt;
  alert::Transition t =
      Make(alert::AlertStatus::kFiring, alert::AlertStatus::kResolved, now,
           fmt::format("{}: the data disk of {} takes writes again", hostname_, data_dir_));
  fired_at_ = 0;
  reason_.clear();
  return t;
}

alert::Transition DiskFullAlert::Make(alert::AlertStatus from, alert::AlertStatus to, double now,
                                      const std::string& summary) const {
  alert::Transition t;
  t.rule_name = kDiskFullAlert;
  t.gpu = -1;
  t.from = from;
  t.to = to;
  t.value = to == alert::AlertStatus::kFiring ? 1 : 0;
  t.threshold = 0;
  t.at = now;
  t.started_at = fired_at_;
  t.fired_at = fired_at_;
  t.resolved_at = to == alert::AlertStatus::kResolved ? now : 0;
  t.severity = "critical";
  t.labels = {{"alertname", kDiskFullAlert},
              {"severity", "critical"},
              {"hostname", hostname_},
              {"data_dir", data_dir_}};
  t.annotations = {{"summary", summary}};
  t.fingerprint = alert::Evaluator::Fingerprint(kDiskFullAlert, -1);
  return t;
}

}  // namespace fulcrum::agent
