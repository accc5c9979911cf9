// Parsing of the human-written quantities fulcrum reads from flags, YAML and CSV: durations
// ("90s", "30m", "1h30m", "7d"), counts with a metric suffix ("20B" tokens, "1.5M"), byte sizes
// ("80GiB", "500MB"), plain numbers. Each returns a Status that quotes the text and says what
// form was expected. Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace fulcrum {

// Seconds in a duration such as "45s", "30m", "1.5h", "7d", "1h30m", "250ms" or a bare number
// of seconds ("120"). Negative durations are refused.
Result<double> ParseDurationSeconds(std::string_view text);

// A count with an optional metric suffix: K=1e3, M=1e6, B or G=1e9, T=1e12 ("20B" -> 2e10).
Result<double> ParseCount(std::string_view text);

// Bytes: "512", "4KiB", "80GiB", "500MB", "1.5TB" (decimal for kB/MB/GB/TB, binary for KiB..).
Result<double> ParseBytes(std::string_view text);

// Whole string must be a finite number / an integer.
Result<double> ParseDouble(std::string_view text);
Result<int64_t> ParseInt(std::string_view text);

// Small string helpers.
std::string_view Trim(std::string_view text);
std::vector<std::string> Split(std::string_view text, char separator);
std::string ToLower(std::string_view text);
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// Human formatting: "1h 30m", "2.5 d", "45 s"; "80.0 GiB"; "$1,234.56".
std::string FormatDuration(double seconds);
std::string FormatBytes(double bytes);
std::string FormatUsd(double usd);

}  // namespace fulcrum
