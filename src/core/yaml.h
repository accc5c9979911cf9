// The one YAML front-end for user files (plan specs, model presets, alert rules, agent configs,
// sim scenarios): LoadYaml parses a text with yaml-cpp, refuses duplicate keys (which yaml-cpp
// accepts silently) and wraps the document in a YamlNode that knows its file, line and dotted
// field path ("constraints.deadline", "rules[0].when[1].metric"). Typed access refuses what does
// not fit with the error format of every input parser (core/input_error.h):
// "file:line: field: expected ..., found ..." with an ErrorDetail; unknown keys name the nearest
// valid key; every number must be finite (nan, .inf, 1e400 are refused). A YamlNode is a cheap
// handle onto the parsed document; not thread-safe to share while any copy is in use.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/status.h"

namespace fulcrum {

class YamlNode {
 public:
  // Bounds for Number() and the quantities: "> 0" and "< 1" with closed intervals.
  static constexpr double kAboveZero = std::numeric_limits<double>::denorm_min();
  static constexpr double kMax = std::numeric_limits<double>::max();

  YamlNode(YAML::Node node, std::shared_ptr<const std::string> origin, std::string field,
           std::optional<int> fallback_line = std::nullopt);

  const std::string& origin() const { return *origin_; }
  // Dotted path of this node from the document root; "" for the root itself.
  const std::string& field() const { return field_; }
  // 1-based line where the node starts (its parent's line when yaml-cpp knows none).
  std::optional<int> line() const;
  // "file:line".
  std::string Where() const;
  bool IsNull() const { return node_.IsNull(); }
  bool IsMap() const { return node_.IsMap(); }
  bool IsSequence() const { return node_.IsSequence(); }
  bool IsScalar() const { return node_.IsScalar(); }
  const YAML::Node& raw() const { return node_; }
  // The same node under another field path (e.g. "faults" for a scenario's top-level list).
  YamlNode Named(std::string field) const;

  // InvalidInput "file:line: field: expected <expected>, found <this node>" (quoted text for a
  // scalar, "a list", "a mapping" or "nothing" otherwise), with detail.
  Status Error(const std::string& expected) const;
  // The same for a message that names a child field which is missing, e.g. "rules[0].op".
  Status MissingError(const std::string& key, const std::string& expected = "a value") const;

  // --- mappings -------------------------------------------------------------------------------
  // Refuses anything but a mapping (expected `what`, "a mapping" by default) and any key not in
  // `known` ("expected a known field (a, b, ...), found unknown field "x"; did you mean ...?").
  Status CheckKeys(const std::vector<std::string>& known, const std::string& what = "") const;
  // For a value whose key is not in `known`: "file:line: field: expected a known field (a, b),
  // found unknown field "x"; did you mean ...?" (for readers that map keys before matching).
  Status UnknownFieldError(const std::vector<std::string>& known) const;
  // The child at `key` (also when its value is null), nullopt when absent or not a mapping.
  std::optional<YamlNode> Find(const std::string& key) const;
  // The child at `key`; MissingError when absent.
  Result<YamlNode> Required(const std::string& key) const;
  // Key/value pairs in document order; keys must be scalars.
  Result<std::vector<std::pair<std::string, YamlNode>>> Entries() const;
  // --- sequences ------------------------------------------------------------------------------
  // Items of a sequence, named "field[i]"; an error (expected `what`) for anything else.
  Result<std::vector<YamlNode>> Items(const std::string& what = "a list") const;

  // --- typed scalars (every number finite; bounds are inclusive) ------------------------------
  Result<std::string> Text() const;
  Result<double> Number(const std::string& expected = "a number", double min = -kMax,
                        double max = kMax) const;
  // A whole number in [min, max] ("8" or "8.0"); expected "a whole number from MIN to MAX"
  // unless given.
  Result<int64_t> Integer(int64_t min, int64_t max, const std::string& expected = "") const;
  // true/false, yes/no, on/off (any case).
  Result<bool> Bool() const;
  // core/parse quantities: "90s", "1h30m"; "20B"; "80GiB".
  Result<double> Duration(const std::string& expected = "a duration such as 90s, 30m, 1h30m or 7d",
                          double min = 0, double max = kMax) const;
  Result<double> Count(const std::string& expected = "a count such as 20B, 1.5M or 3000",
                       double min = 0, double max = kMax) const;
  Result<double> Bytes(const std::string& expected = "a size such as 512MB or 80GiB",
                       double min = 0, double max = kMax) const;
  // A list of scalars; with `comma_separated`, a scalar "a, b" is read as the list [a, b] too.
  Result<std::vector<std::string>> StringList(bool comma_separated = false) const;
  // A mapping of scalar to scalar.
  Result<std::map<std::string, std::string>> StringMap() const;

 private:
  Result<double> Quantity(Result<double> (*parse)(std::string_view), const std::string& expected,
                          double min, double max) const;
  YamlNode Child(const YAML::Node& node, std::string field) const;

  YAML::Node node_;
  std::shared_ptr<const std::string> origin_;
  std::string field_;
  std::optional<int> fallback_line_;
};

// Parses `text` (origin names the source in messages). Errors: a YAML syntax error ("file:line:
// expected valid YAML, found <parser message>"), a key given twice in one mapping, a second
// document ("---" after the first; file:line of the second).
Result<YamlNode> LoadYaml(std::string_view text, const std::string& origin);
// Reads `path` (NotFound "<path>: expected <what>, found none" when missing) and parses it.
Result<YamlNode> LoadYamlFile(const std::string& path, std::string_view what);

}  // namespace fulcrum
