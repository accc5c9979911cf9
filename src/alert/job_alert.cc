#include "alert/job_alert.h"

namespace fulcrum::alert {

Transition JobAlertTransition(const store::AlertRecord& record) {
  Transition t;
  t.rule_name = record.name;
  t.gpu = -1;
  t.from = AlertStatus::kInactive;
  t.to = AlertStatus::kFiring;
  t.at = record.at;
  t.started_at = record.at;
  t.fired_at = record.at;
  t.severity = record.severity;
  t.labels = {{"alertname", record.name},
              {"severity", record.severity},
              {"job", record.job_id},
              {"source", "supervisor"}};
  t.annotations = {{"summary", "job " + record.job_id + ": " + record.summary}};
  t.fingerprint = Evaluator::Fingerprint(record.name + "/job/" + record.job_id, -1);
  return t;
}

Result<std::vector<Transition>> JobAlertFeed::Poll(store::JobsDb& jobs, double now) {
  std::vector<Transition> out;
  if (!last_id_) {
    FULCRUM_ASSIGN_OR_RETURN(int64_t last, jobs.LastAlertId());
    FULCRUM_ASSIGN_OR_RETURN(auto recent, jobs.ListAlerts(now - lookback_seconds_));
    for (auto it = recent.rbegin(); it != recent.rend(); ++it) {
      if (it->id <= last) out.push_back(JobAlertTransition(*it));
    }
    last_id_ = last;
  }
  constexpr size_t kBatch = 256;
  while (true) {
    FULCRUM_ASSIGN_OR_RETURN(auto rows, jobs.ListAlertsAfter(*last_id_, kBatch));
    for (const store::AlertRecord& row : rows) {
      out.push_back(JobAlertTransition(row));
      last_id_ = row.id;
    }
    if (rows.size() < kBatch) break;
  }
  return out;
}

}  // namespace fulcrum::alert
