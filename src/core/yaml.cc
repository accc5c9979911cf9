#include "core/yaml.h"

#include <cmath>
#include <set>

#include "core/input_error.h"
#include "core/parse.h"
#include "core/text_file.h"

namespace fulcrum {
namespace {

std::optional<int> LineOf(const YAML::Node& node) {
  if (!node.IsDefined()) return std::nullopt;
  const YAML::Mark mark = node.Mark();
  if (mark.line < 0) return std::nullopt;
  return mark.line + 1;
}

std::string JoinField(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

// Refuses a key given twice in any mapping of the document (yaml-cpp keeps both pairs). Each
// collection is visited once, keyed by its position in the text: an alias (*a) shares its
// anchor's mark, so aliases neither loop (&a [*a]) nor blow up (nested aliases of aliases).
Status CheckDuplicateKeys(const YAML::Node& node, const std::string& origin,
                          const std::string& field, std::set<int>& visited) {
  if ((node.IsMap() || node.IsSequence()) && !visited.insert(node.Mark().pos).second) {
    return Status::Ok();
  }
  if (node.IsMap()) {
    std::map<std::string, int> seen;  // key -> line of its first use
    for (auto it = node.begin(); it != node.end(); ++it) {
      const YAML::Node key = it->first;
      const YAML::Node value = it->second;
      const std::string name = key.IsScalar() ? key.Scalar() : "";
      const std::string child = JoinField(field, name);
      if (key.IsScalar()) {
        const int line = LineOf(key).value_or(0);
        auto [first, inserted] = seen.emplace(name, line);
        if (!inserted) {
          return InputError(
              {origin,
               LineOf(key),
               child,
               "each key once in a mapping",
               "\"" + name + "\" again (first on line " + std::to_string(first->second) + ")",
               {}},
              FoundIs::kDescription);
        }
      }
      FULCRUM_RETURN_IF_ERROR(CheckDuplicateKeys(value, origin, child, visited));
    }
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      FULCRUM_RETURN_IF_ERROR(
          CheckDuplicateKeys(node[i], origin, field + "[" + std::to_string(i) + "]", visited));
    }
  }
  return Status::Ok();
}

// The line where a second YAML document starts (its first content line, or the marker when it
// has none), read from the text: yaml-cpp's LoadAll would parse whatever follows the first
// document, and on malformed input it can allocate without bound (the fuzz targets of every YAML
// reader were killed for memory when it was used). A document marker ("---") or end marker
// ("...") stands at column 0, where no block scalar's content can be. nullopt: one document.
bool IsDocumentMarker(std::string_view line, std::string_view marker) {
  return line.substr(0, 3) == marker &&
         (line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r');
}

std::optional<int> SecondDocumentLine(std::string_view text) {
  int number = 0;
  bool content = false, ended = false;  // the first document has a node; it was ended ("...")
  std::optional<int> second;            // the marker that starts the second document
  for (const std::string& raw : Split(text, '\n')) {
    ++number;
    const std::string_view l = Trim(raw);
    const bool start = IsDocumentMarker(raw, "---"), end = IsDocumentMarker(raw, "...");
    const bool blank = l.empty() || l[0] == '#' || l[0] == '%';
    if (second) {
      if (!blank && !start && !end) return number;
      continue;
    }
    if (start) {
      if (content || ended) {
        second = number;
        const std::string_view rest = Trim(std::string_view(raw).substr(3));
        if (!rest.empty() && rest[0] != '#') return number;  // "--- value"
      }
      continue;  // a marker before any node opens the first document
    }
    if (end) {
      ended = ended || content;
      continue;
    }
    if (blank) continue;
    if (ended) return number;  // a node after "..."
    content = true;
  }
  return second;
}

}  // namespace

YamlNode::YamlNode(YAML::Node node, std::shared_ptr<const std::string> origin, std::string field,
                   std::optional<int> fallback_line)
    : node_(node),
      origin_(std::move(origin)),
      field_(std::move(field)),
      fallback_line_(fallback_line) {}

std::optional<int> YamlNode::line() const {
  // A null value ("key:" with nothing after it) is marked where the next token starts.
  if (node_.IsNull() && fallback_line_) return fallback_line_;
  std::optional<int> own = LineOf(node_);
  return own ? own : fallback_line_;
}

std::string YamlNode::Where() const {
  std::optional<int> at = line();
  return at ? *origin_ + ":" + std::to_string(*at) : *origin_;
}

YamlNode YamlNode::Named(std::string field) const {
  YamlNode copy = *this;
  copy.field_ = std::move(field);
  return copy;
}

YamlNode YamlNode::Child(const YAML::Node& node, std::string field) const {
  return YamlNode(node, origin_, std::move(field), line());
}

Status YamlNode::Error(const std::string& expected) const {
  if (node_.IsScalar()) return InputError({*origin_, line(), field_, expected, node_.Scalar(), {}});
  const char* found = node_.IsSequence() ? "a list" : node_.IsMap() ? "a mapping" : "nothing";
  return InputError({*origin_, line(), field_, expected, found, {}}, FoundIs::kDescription);
}

Status YamlNode::MissingError(const std::string& key, const std::string& expected) const {
  return InputError({*origin_, line(), JoinField(field_, key), expected, "no such field", {}},
                    FoundIs::kDescription);
}

Status YamlNode::CheckKeys(const std::vector<std::string>& known, const std::string& what) const {
  if (!node_.IsMap()) return Error(what.empty() ? "a mapping" : what);
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const YAML::Node key = it->first;
    YamlNode key_node = Child(key, field_);
    if (!key.IsScalar()) return key_node.Error("a field name");
    const std::string& name = key.Scalar();
    bool ok = false;
    for (const std::string& k : known) ok = ok || k == name;
    if (!ok) return key_node.Named(JoinField(field_, name)).UnknownFieldError(known);
  }
  return Status::Ok();
}

Status YamlNode::UnknownFieldError(const std::vector<std::string>& known) const {
  const size_t dot = field_.rfind('.');
  const std::string name = dot == std::string::npos ? field_ : field_.substr(dot + 1);
  return InputError({*origin_, line(), field_, "a known field (" + JoinNames(known) + ")",
                     "unknown field \"" + name + "\"", NearestNames(name, known)},
                    FoundIs::kDescription);
}

std::optional<YamlNode> YamlNode::Find(const std::string& key) const {
  if (!node_.IsMap()) return std::nullopt;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const YAML::Node k = it->first;
    if (k.IsScalar() && k.Scalar() == key) {
      // A null value has no mark of its own: fall back to the key's line.
      return YamlNode(it->second, origin_, JoinField(field_, key), LineOf(k));
    }
  }
  return std::nullopt;
}

Result<YamlNode> YamlNode::Required(const std::string& key) const {
  std::optional<YamlNode> child = Find(key);
  if (!child) return MissingError(key);
  return *child;
}

Result<std::vector<std::pair<std::string, YamlNode>>> YamlNode::Entries() const {
  if (!node_.IsMap()) return Error("a mapping");
  std::vector<std::pair<std::string, YamlNode>> entries;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const YAML::Node key = it->first;
    if (!key.IsScalar()) return Child(key, field_).Error("a field name");
    entries.emplace_back(
        key.Scalar(), YamlNode(it->second, origin_, JoinField(field_, key.Scalar()), LineOf(key)));
  }
  return entries;
}

Result<std::vector<YamlNode>> YamlNode::Items(const std::string& what) const {
  if (!node_.IsSequence()) return Error(what);
  std::vector<YamlNode> items;
  for (size_t i = 0; i < node_.size(); ++i) {
    items.push_back(Child(node_[i], field_ + "[" + std::to_string(i) + "]"));
  }
  return items;
}

Result<std::string> YamlNode::Text() const {
  if (!node_.IsScalar()) return Error("a single value");
  return node_.Scalar();
}

Result<double> YamlNode::Quantity(Result<double> (*parse)(std::string_view),
                                  const std::string& expected, double min, double max) const {
  if (!node_.IsScalar()) return Error(expected);
  Result<double> value = parse(node_.Scalar());
  if (!value.ok() || !std::isfinite(*value) || *value < min || *value > max) {
    return Error(expected);
  }
  return *value;
}

Result<double> YamlNode::Number(const std::string& expected, double min, double max) const {
  return Quantity(ParseDouble, expected, min, max);
}

Result<int64_t> YamlNode::Integer(int64_t min, int64_t max, const std::string& expected) const {
  const std::string what =
      expected.empty() ? "a whole number from " + std::to_string(min) + " to " + std::to_string(max)
                       : expected;
  FULCRUM_ASSIGN_OR_RETURN(double value, Quantity(ParseDouble, what, static_cast<double>(min),
                                                  static_cast<double>(max)));
  if (value != std::floor(value)) return Error(what);
  return static_cast<int64_t>(value);
}

Result<bool> YamlNode::Bool() const {
  const std::string text = node_.IsScalar() ? ToLower(node_.Scalar()) : "";
  if (text == "true" || text == "yes" || text == "on") return true;
  if (text == "false" || text == "no" || text == "off") return false;
  return Error("true or false");
}

Result<double> YamlNode::Duration(const std::string& expected, double min, double max) const {
  return Quantity(ParseDurationSeconds, expected, min, max);
}

Result<double> YamlNode::Count(const std::string& expected, double min, double max) const {
  return Quantity(ParseCount, expected, min, max);
}

Result<double> YamlNode::Bytes(const std::string& expected, double min, double max) const {
  return Quantity(ParseBytes, expected, min, max);
}

Result<std::vector<std::string>> YamlNode::StringList(bool comma_separated) const {
  std::vector<std::string> out;
  if (comma_separated && node_.IsScalar()) {
    for (const std::string& part : Split(node_.Scalar(), ',')) {
      if (!Trim(part).empty()) out.emplace_back(Trim(part));
    }
    return out;
  }
  FULCRUM_ASSIGN_OR_RETURN(std::vector<YamlNode> items, Items("a list of names"));
  for (const YamlNode& item : items) {
    FULCRUM_ASSIGN_OR_RETURN(std::string text, item.Text());
    out.push_back(std::move(text));
  }
  return out;
}

Result<std::map<std::string, std::string>> YamlNode::StringMap() const {
  FULCRUM_ASSIGN_OR_RETURN(auto entries, Entries());
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : entries) {
    FULCRUM_ASSIGN_OR_RETURN(out[key], value.Text());
  }
  return out;
}

Result<YamlNode> LoadYaml(std::string_view text, const std::string& origin) {
  YAML::Node root;
  try {
    // YAML::Load keeps the first document and drops the rest unread: a second one is refused.
    if (std::optional<int> second = SecondDocumentLine(text)) {
      return InputError(
          {origin, second, "", "one YAML document", "a second document (after \"---\")", {}},
          FoundIs::kDescription);
    }
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    std::optional<int> line;
    if (e.mark.line >= 0) line = e.mark.line + 1;
    return InputError({origin, line, "", "valid YAML", e.msg, {}}, FoundIs::kDescription);
  }
  std::set<int> visited;
  FULCRUM_RETURN_IF_ERROR(CheckDuplicateKeys(root, origin, "", visited));
  return YamlNode(root, std::make_shared<const std::string>(origin), "", std::nullopt);
}

Result<YamlNode> LoadYamlFile(const std::string& path, std::string_view what) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, what));
  return LoadYaml(text, path);
}

}  // namespace fulcrum
