#include "core/parse.h"

#include <cctype>
#include <cerrno>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

namespace fulcrum {
namespace {

// Parses the longest numeric prefix of `text` into `value`; returns characters consumed (0 = none).
size_t ParseNumberPrefix(std::string_view text, double& value) {
  size_t i = 0;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
  size_t digits_start = i;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E') && i + 1 < text.size() &&
      (std::isdigit(static_cast<unsigned char>(text[i + 1])) || text[i + 1] == '-' ||
       text[i + 1] == '+')) {
    size_t j = i + 1;
    if (text[j] == '-' || text[j] == '+') ++j;
    if (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) {
      i = j;
      while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    }
  }
  if (i == digits_start) return 0;
  std::string number(text.substr(0, i));
  char* end = nullptr;
  errno = 0;
  value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(value)) return 0;  // 1e400
  // Underflow: strtod sets ERANGE when the result is subnormal or rounds to 0 (C11 7.22.1.3;
  // glibc strtod(3)): 1e-320 and 1e-400 are out of range, not a tiny number or 0.
  if (errno == ERANGE || (value != 0 && std::fabs(value) < DBL_MIN)) return 0;
  return i;
}

Status Expected(std::string_view what, std::string_view text) {
  return Status::InvalidInput("expected " + std::string(what) + ", found '" + std::string(text) +
                              "'");
}

}  // namespace

std::string_view Trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return text;
}

std::vector<std::string> Split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t pos = text.find(separator, start);
    if (pos == std::string_view::npos) {
      parts.emplace_back(text.substr(start));
      return parts;
    }
    parts.emplace_back(text.substr(start, pos - start));
    start = pos + 1;
  }
}

std::string ToLower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

Result<double> ParseDouble(std::string_view text) {
  std::string_view t = Trim(text);
  double value = 0;
  size_t used = ParseNumberPrefix(t, value);
  if (used == 0 || used != t.size() || !std::isfinite(value)) return Expected("a number", text);
  return value;
}

Result<int64_t> ParseInt(std::string_view text) {
  std::string_view t = Trim(text);
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (t.empty() || ec != std::errc() || ptr != t.data() + t.size())
    return Expected("an integer", text);
  return value;
}

Result<double> ParseDurationSeconds(std::string_view text) {
  std::string_view t = Trim(text);
  if (t.empty()) return Expected("a duration such as 90s, 30m, 1h30m or 7d", text);
  double total = 0;
  size_t pos = 0;
  while (pos < t.size()) {
    double value = 0;
    size_t used = ParseNumberPrefix(t.substr(pos), value);
    if (used == 0 || value < 0) return Expected("a duration such as 90s, 30m, 1h30m or 7d", text);
    pos += used;
    size_t unit_start = pos;
    while (pos < t.size() && std::isalpha(static_cast<unsigned char>(t[pos]))) ++pos;
    std::string unit = ToLower(t.substr(unit_start, pos - unit_start));
    double scale = 0;
    if (unit.empty() || unit == "s" || unit == "sec" || unit == "secs")
      scale = 1;
    else if (unit == "ms")
      scale = 1e-3;
    else if (unit == "m" || unit == "min" || unit == "mins")
      scale = 60;
    else if (unit == "h" || unit == "hr" || unit == "hrs")
      scale = 3600;
    else if (unit == "d" || unit == "day" || unit == "days")
      scale = 86400;
    else if (unit == "w")
      scale = 7 * 86400;
    else
      return Expected("a duration unit ms, s, m, h, d or w", text);
    if (unit.empty() && pos != t.size())
      return Expected("a duration such as 90s, 30m, 1h30m or 7d", text);
    total += value * scale;
  }
  if (!std::isfinite(total)) return Expected("a finite duration", text);
  return total;
}

Result<double> ParseCount(std::string_view text) {
  std::string_view t = Trim(text);
  double value = 0;
  size_t used = ParseNumberPrefix(t, value);
  if (used == 0) return Expected("a count such as 20B, 1.5M or 3000", text);
  std::string suffix = ToLower(Trim(t.substr(used)));
  double scale = 1;
  if (suffix.empty())
    scale = 1;
  else if (suffix == "k")
    scale = 1e3;
  else if (suffix == "m")
    scale = 1e6;
  else if (suffix == "b" || suffix == "g")
    scale = 1e9;
  else if (suffix == "t")
    scale = 1e12;
  else
    return Expected("a count suffix K, M, B or T", text);
  if (value < 0) return Expected("a non-negative count", text);
  if (!std::isfinite(value * scale)) return Expected("a finite count", text);
  return value * scale;
}

Result<double> ParseBytes(std::string_view text) {
  std::string_view t = Trim(text);
  double value = 0;
  size_t used = ParseNumberPrefix(t, value);
  if (used == 0 || value < 0) return Expected("a size such as 512MB or 80GiB", text);
  std::string suffix = ToLower(Trim(t.substr(used)));
  double scale = 0;
  if (suffix.empty() || suffix == "b")
    scale = 1;
  else if (suffix == "kb" || suffix == "k")
    scale = 1e3;
  else if (suffix == "mb" || suffix == "m")
    scale = 1e6;
  else if (suffix == "gb" || suffix == "g")
    scale = 1e9;
  else if (suffix == "tb" || suffix == "t")
    scale = 1e12;
  else if (suffix == "kib")
    scale = 1024.0;
  else if (suffix == "mib")
    scale = 1024.0 * 1024;
  else if (suffix == "gib")
    scale = 1024.0 * 1024 * 1024;
  else if (suffix == "tib")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else
    return Expected("a size unit B, kB, MB, GB, TB, KiB, MiB, GiB or TiB", text);
  if (!std::isfinite(value * scale)) return Expected("a finite size", text);
  return value * scale;
}

std::string FormatDuration(double seconds) {
  char buf[64];
  if (!std::isfinite(seconds)) return "-";
  if (seconds < 60)
    std::snprintf(buf, sizeof buf, "%.0f s", seconds);
  else if (seconds < 3600)
    std::snprintf(buf, sizeof buf, "%.1f min", seconds / 60);
  else if (seconds < 2 * 86400)
    std::snprintf(buf, sizeof buf, "%.1f h", seconds / 3600);
  else
    std::snprintf(buf, sizeof buf, "%.1f d", seconds / 86400);
  return buf;
}

std::string FormatBytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  while (std::fabs(bytes) >= 1024 && unit < 5) {
    bytes /= 1024;
    ++unit;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[unit]);
  return buf;
}

std::string FormatUsd(double usd) {
  if (!std::isfinite(usd)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", std::fabs(usd));
  std::string digits(buf);
  size_t dot = digits.find('.');
  std::string whole = digits.substr(0, dot);
  std::string grouped;
  for (size_t i = 0; i < whole.size(); ++i) {
    if (i > 0 && (whole.size() - i) % 3 == 0) grouped += ',';
    grouped += whole[i];
  }
  return std::string(usd < 0 ? "-$" : "$") + grouped + digits.substr(dot);
}

}  // namespace fulcrum
