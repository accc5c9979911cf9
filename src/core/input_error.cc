#include "core/input_error.h"

#include <algorithm>

#include "core/parse.h"

namespace fulcrum {

Status InputError(ErrorDetail detail, FoundIs found_is) {
  std::string message = detail.file;
  if (detail.line && *detail.line > 0) {
    message.append(":").append(std::to_string(*detail.line));
  }
  if (!detail.field.empty()) {
    if (!message.empty()) message.append(": ");
    message.append(detail.field);
  }
  message.append(message.empty() ? "expected " : ": expected ");
  message.append(detail.expected).append(", found ");
  if (found_is == FoundIs::kText) {
    message.append("\"").append(detail.found).append("\"");
  } else {
    message.append(detail.found);
  }
  if (!detail.nearest.empty()) {
    message.append("; did you mean ").append(JoinNames(detail.nearest)).append("?");
  }
  return Status::InvalidInput(std::move(message)).WithDetail(std::move(detail));
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

namespace {
// Case-insensitive, with ' ' and '_' read as '-': "h100 sxm" is close to "H100-SXM".
std::string NameKey(std::string_view name) {
  std::string key = ToLower(name);
  for (char& c : key) {
    if (c == ' ' || c == '_') c = '-';
  }
  return key;
}
}  // namespace

std::vector<std::string> NearestNames(std::string_view name,
                                      const std::vector<std::string>& candidates,
                                      size_t max_names) {
  const std::string key = NameKey(name);
  const size_t limit = key.size() <= 2 ? 1 : std::max<size_t>(2, key.size() / 3);
  std::vector<std::pair<size_t, size_t>> close;  // (distance, index in candidates)
  for (size_t i = 0; i < candidates.size(); ++i) {
    const std::string other = NameKey(candidates[i]);
    size_t distance = EditDistance(key, other);
    // A name that is part of a candidate (or the reverse) is close too: "A100" -> "A100-SXM4-40GB".
    bool part = key.size() >= 2 && other.size() >= 2 &&
                (other.find(key) != std::string::npos || key.find(other) != std::string::npos);
    if (distance <= limit) {
      close.emplace_back(distance, i);
    } else if (part) {
      close.emplace_back(limit, i);
    }
  }
  std::stable_sort(close.begin(), close.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> names;
  for (const auto& scored : close) {
    if (names.size() == max_names) break;
    const std::string& candidate = candidates[scored.second];
    const std::string candidate_key = NameKey(candidate);
    bool seen = std::any_of(names.begin(), names.end(),
                            [&](const std::string& n) { return NameKey(n) == candidate_key; });
    if (!seen) names.push_back(candidate);
  }
  return names;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace fulcrum
