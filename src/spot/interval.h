// Checkpoint interval economics: Young's and Daly's optimum intervals, the expected overhead
// fraction, the checkpoint write time of a model, and whether a preemption notice is long
// enough to save a checkpoint. All durations are seconds; bandwidths bytes per second. Pure
// functions, thread-safe. Formulas are cited next to their definitions in interval.cc.
#pragma once

#include "core/status.h"

namespace fulcrum::spot {

// Young (1974): tau = sqrt(2 * delta * M). delta = checkpoint write time, M = mean time between
// failures (here: between preemptions).
double YoungIntervalSeconds(double checkpoint_cost_seconds, double mtbf_seconds);

// Daly (2006, FGCS 22:303, eq. 37): tau = sqrt(2 delta M) [1 + sqrt(delta / 2M) / 3 +
// (delta / 2M) / 9] - delta for delta < 2M, else tau = M.
double DalyIntervalSeconds(double checkpoint_cost_seconds, double mtbf_seconds);

// First-order expected overhead per unit of useful work with interval tau:
// delta / tau + (tau / 2 + R) / M (checkpoint writes, half an interval lost per failure, restart).
double OverheadFraction(double interval_seconds, double checkpoint_cost_seconds,
                        double restart_cost_seconds, double mtbf_seconds);

// Time to write one checkpoint: parameter_count * bytes_per_parameter / write bandwidth.
// InvalidInput when a value is not positive and finite (names the value).
Result<double> CheckpointCostSeconds(double parameter_count, double bytes_per_parameter,
                                     double write_bytes_per_second);

// The preemption notice as the job sees it: the notice, less the polling lag before the job
// sees it, less a safety margin.
struct NoticeSettings {
  double notice_seconds = 0;         // 0 = no notice
  double poll_interval_seconds = 0;  // worst-case lag between the notice and the job seeing it
  double margin_seconds = 0;         // kept free at the end of the notice
};

// Seconds of the notice usable for writing a checkpoint (never negative).
double UsableNoticeSeconds(const NoticeSettings& notice);

// True when a checkpoint fits in the usable notice: a notified preemption then loses no work
// (only the compute between the notice and the preemption), and periodic checkpoints are only
// needed for failures that come without notice.
bool NoticeCoversCheckpoint(const NoticeSettings& notice, double checkpoint_cost_seconds);

}  // namespace fulcrum::spot
