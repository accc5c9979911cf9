// Reading a `fulcrum run` job log (<data-dir>/logs/NAME.log) in end-to-end tests: the time
// stamp of the first line that contains a text. The supervisor stamps each of its lines with
// local time to the millisecond ("2026-12-02T06:03:33.123 fulcrum ..."). Header-only; pure.
#pragma once

#include <chrono>
#include <ctime>
#include <optional>
#include <string>

namespace fulcrum::testing {

// Unix seconds of the first line of `log` containing `needle`; nullopt when there is none or
// its stamp does not parse.
inline std::optional<double> LogLineTime(const std::string& log, const std::string& needle) {
  const size_t at = log.find(needle);
  if (at == std::string::npos) return std::nullopt;
  const size_t newline = log.rfind('\n', at);
  const size_t line = newline == std::string::npos ? 0 : newline + 1;
  std::tm tm{};
  const char* rest = strptime(log.c_str() + line, "%Y-%m-%dT%H:%M:%S", &tm);
  if (rest == nullptr || *rest != '.') return std::nullopt;
  tm.tm_isdst = -1;
  return static_cast<double>(std::mktime(&tm)) + std::stod(std::string(rest, 4));
}

// The wall clock now, unix seconds.
inline double UnixSecondsNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace fulcrum::testing
