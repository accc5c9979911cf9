// ShortNumber: a double as "%g" for error messages ("0", "1.5e+06", "nan") instead of
// std::to_string's "0.000000". Pure, thread-safe.
#pragma once

#include <cstdio>
#include <string>

namespace fulcrum::spot {

inline std::string ShortNumber(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  return buffer;
}

}  // namespace fulcrum::spot
