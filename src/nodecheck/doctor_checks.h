// The checks of `fulcrum doctor`: RunChecks() is pure and turns the facts gathered about a
// machine (doctor_facts.h) and the driver table (driver_table.h) into checks, each with a
// status, a finding and a fix. Thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "nodecheck/doctor_facts.h"
#include "nodecheck/driver_table.h"

namespace fulcrum::nodecheck {

enum class CheckStatus { kOk, kWarn, kFail, kSkipped };
const char* CheckStatusName(CheckStatus status);  // "ok", "warn", "fail", "skipped"

struct DoctorCheck {
  std::string name;
  CheckStatus status = CheckStatus::kSkipped;
  std::string finding;
  std::string fix;  // empty when nothing to do
};

std::vector<DoctorCheck> RunChecks(const SystemFacts& facts, const DriverTable& table,
                                   const DoctorOptions& options);

}  // namespace fulcrum::nodecheck
