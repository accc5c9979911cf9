#include "spot/trace.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "core/text_file.h"

namespace fulcrum::spot {

namespace {

using nlohmann::json;

// "line L, column C" of a byte offset (1-based), for JSON syntax errors.
std::string LineColumn(std::string_view text, size_t byte_offset) {
  size_t line = 1;
  size_t column = 1;
  for (size_t i = 0; i < byte_offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return std::to_string(line) + ":" + std::to_string(column);
}

// A short rendering of a JSON value for "found ..." (strings quoted, long values cut).
std::string Found(const json& value) {
  std::string text = value.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return std::string(value.type_name()) + " " + text;
}

Status FieldError(std::string_view origin, const std::string& field, const std::string& expected,
                  const json& found) {
  return Status::InvalidInput(std::string(origin) + ": " + field + ": expected " + expected +
                              ", found " + Found(found));
}

Result<double> ParseGap(const json& doc, std::string_view origin) {
  auto metadata = doc.find("metadata");
  if (metadata == doc.end()) {
    return Status::InvalidInput(std::string(origin) +
                                ": metadata: missing (expected {\"gap_seconds\": N})");
  }
  if (!metadata->is_object()) {
    return FieldError(origin, "metadata", "an object {\"gap_seconds\": N}", *metadata);
  }
  auto gap = metadata->find("gap_seconds");
  if (gap == metadata->end()) {
    return Status::InvalidInput(std::string(origin) +
                                ": metadata.gap_seconds: missing (expected a positive number)");
  }
  if (!gap->is_number() || !std::isfinite(gap->get<double>()) || gap->get<double>() <= 0) {
    return FieldError(origin, "metadata.gap_seconds", "a positive number of seconds", *gap);
  }
  return gap->get<double>();
}

Result<std::vector<int64_t>> ParseCounts(const json& doc, std::string_view origin) {
  auto data = doc.find("data");
  if (data == doc.end()) {
    return Status::InvalidInput(std::string(origin) +
                                ": data: missing (expected an array of available counts)");
  }
  if (!data->is_array() || data->empty()) {
    return FieldError(origin, "data", "a non-empty array of available counts", *data);
  }
  std::vector<int64_t> counts;
  counts.reserve(data->size());
  for (size_t i = 0; i < data->size(); ++i) {
    const json& item = (*data)[i];
    bool ok =
        item.is_number_unsigned() || (item.is_number_integer() && item.get<int64_t>() >= 0) ||
        (item.is_number_float() && std::isfinite(item.get<double>()) && item.get<double>() >= 0 &&
         std::floor(item.get<double>()) == item.get<double>() && item.get<double>() < 9e18);
    if (!ok) {
      return FieldError(origin, "data[" + std::to_string(i) + "]", "a non-negative integer count",
                        item);
    }
    counts.push_back(item.is_number_float() ? static_cast<int64_t>(item.get<double>())
                                            : item.get<int64_t>());
  }
  return counts;
}

}  // namespace

Result<Trace> ParseTrace(std::string_view json_text, std::string_view origin) {
  json doc;
  try {
    doc = json::parse(json_text.begin(), json_text.end());
  } catch (const json::parse_error& e) {
    // Library exception turned into a Status at the boundary; e.byte is 1-based.
    size_t offset = e.byte > 0 ? e.byte - 1 : 0;
    std::string what = e.what();
    auto pos = what.find("syntax error");
    return Status::InvalidInput(std::string(origin) + ":" + LineColumn(json_text, offset) +
                                ": not valid JSON (" +
                                (pos == std::string::npos ? what : what.substr(pos)) + ")");
  }
  if (!doc.is_object()) {
    return FieldError(origin, "top level",
                      "an object {\"metadata\": {\"gap_seconds\": N}, \"data\": [...]}", doc);
  }
  Trace trace;
  trace.origin = std::string(origin);
  FULCRUM_ASSIGN_OR_RETURN(trace.gap_seconds, ParseGap(doc, origin));
  FULCRUM_ASSIGN_OR_RETURN(trace.counts, ParseCounts(doc, origin));
  if (!std::isfinite(trace.gap_seconds * static_cast<double>(trace.counts.size()))) {
    return Status::InvalidInput(std::string(origin) +
                                ": metadata.gap_seconds: expected a trace length (ticks x gap) "
                                "that is a finite number of seconds, found " +
                                std::to_string(trace.counts.size()) + " x " +
                                std::to_string(trace.gap_seconds));
  }
  return trace;
}

Result<Trace> LoadTrace(const std::string& path) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, "a spot trace"));
  return ParseTrace(text, path);
}

}  // namespace fulcrum::spot
