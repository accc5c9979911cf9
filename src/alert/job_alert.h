// The supervisor's alerts (crash_loop, restart_limit, budget_warning, budget_exhausted, stall,
// missing_checkpoint, gpu_unhealthy: rows of jobs.db's `alerts` table) as alert transitions, so
// that they take the agent's path: MakeNotifications -> outbox -> delivery worker -> receivers in
// each receiver's format. An agent turns the rows it finds in jobs.db into notifications; a
// `fulcrum run --receiver` turns its own alerts into the same ones, with the same idempotency key
// for the same row. A supervisor alert is an event: it fires once and never resolves. Pure
// functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "alert/evaluator.h"
#include "store/jobs.h"

namespace fulcrum::alert {

// A firing transition of rule `record.name` (host-wide, gpu -1) at `record.at`, with labels
// alertname, severity, job and source=supervisor, the summary as its annotation, and a
// fingerprint of (name, job) so that each row has its own key.
Transition JobAlertTransition(const store::AlertRecord& record);

// A cursor over jobs.db's alerts for the agent: each Poll returns the rows added since the last
// one as transitions. The first Poll also takes the rows raised up to `lookback_seconds` before
// `now` (while no agent ran); the outbox ignores an id it already holds, so an agent restart
// re-reads that window without sending a row twice. Not thread-safe (the sampling thread).
class JobAlertFeed {
 public:
  explicit JobAlertFeed(double lookback_seconds = 3600) : lookback_seconds_(lookback_seconds) {}
  Result<std::vector<Transition>> Poll(store::JobsDb& jobs, double now);

 private:
  double lookback_seconds_;
  std::optional<int64_t> last_id_;
};

}  // namespace fulcrum::alert
