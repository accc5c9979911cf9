// Spot availability traces in the public format {"metadata": {"gap_seconds": N}, "data":
// [available_count, ...]} (one count per tick of gap_seconds; 0 = no spot capacity in that tick).
// Parsing checks every field and reports "<origin>:<line>:<column>" for JSON syntax errors and
// "<origin>: <field>: expected ..., found ..." for wrong values. A Trace is a plain value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace fulcrum::spot {

struct Trace {
  double gap_seconds = 0;       // length of one tick
  std::vector<int64_t> counts;  // available instances per tick, >= 0, at least one tick
  std::string origin;           // file name (or "<memory>") for messages
};

// Parses `json_text`; `origin` names the source in error messages.
Result<Trace> ParseTrace(std::string_view json_text, std::string_view origin);

// Reads (core ReadTextFile: at most 16 MiB) and parses the file at `path` (NotFound / IoError
// when it cannot be read, InvalidInput with its size when it is larger).
Result<Trace> LoadTrace(const std::string& path);

}  // namespace fulcrum::spot
