#include "spot/interval.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "spot/short_number.h"

namespace fulcrum::spot {

// Young, "A first order approximation to the optimum checkpoint interval", CACM 17(9), 1974.
double YoungIntervalSeconds(double checkpoint_cost_seconds, double mtbf_seconds) {
  return std::sqrt(2.0 * checkpoint_cost_seconds * mtbf_seconds);
}

// Daly, "A higher order estimate of the optimum checkpoint interval for restart dumps",
// Future Generation Computer Systems 22(3):303-312, 2006, eq. 37.
double DalyIntervalSeconds(double checkpoint_cost_seconds, double mtbf_seconds) {
  const double delta = checkpoint_cost_seconds;
  const double m = mtbf_seconds;
  if (delta >= 2.0 * m) return m;
  const double ratio = delta / (2.0 * m);
  return std::sqrt(2.0 * delta * m) * (1.0 + std::sqrt(ratio) / 3.0 + ratio / 9.0) - delta;
}

// First-order expansion of the expected wall time per unit work (Young 1974; the form quoted in
// the calibration README):
// each interval pays delta; each failure (rate 1/M) loses tau/2 on average plus the restart R.
double OverheadFraction(double interval_seconds, double checkpoint_cost_seconds,
                        double restart_cost_seconds, double mtbf_seconds) {
  return checkpoint_cost_seconds / interval_seconds +
         (interval_seconds / 2.0 + restart_cost_seconds) / mtbf_seconds;
}

namespace {

Status RequirePositive(double value, const char* name) {
  if (std::isfinite(value) && value > 0) return Status::Ok();
  return Status::InvalidInput(std::string(name) + ": expected a positive number, found " +
                              ShortNumber(value));
}

}  // namespace

Result<double> CheckpointCostSeconds(double parameter_count, double bytes_per_parameter,
                                     double write_bytes_per_second) {
  FULCRUM_RETURN_IF_ERROR(RequirePositive(parameter_count, "parameter count"));
  FULCRUM_RETURN_IF_ERROR(RequirePositive(bytes_per_parameter, "bytes per parameter"));
  FULCRUM_RETURN_IF_ERROR(RequirePositive(write_bytes_per_second, "write bandwidth"));
  return parameter_count * bytes_per_parameter / write_bytes_per_second;
}

double UsableNoticeSeconds(const NoticeSettings& notice) {
  return std::max(0.0,
                  notice.notice_seconds - notice.poll_interval_seconds - notice.margin_seconds);
}

bool NoticeCoversCheckpoint(const NoticeSettings& notice, double checkpoint_cost_seconds) {
  return notice.notice_seconds > 0 && checkpoint_cost_seconds <= UsableNoticeSeconds(notice);
}

}  // namespace fulcrum::spot
