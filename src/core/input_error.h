// How every parser of user input (catalog CSV tables, YAML specs/configs/rules/scenarios) words
// an error: "file:line: field: expected <what>, found <what>" plus "; did you mean <names>?"
// when close valid names are known, as an InvalidInput Status that also carries the same facts
// as an ErrorDetail (for `--json` errors). NearestNames ranks candidates by edit distance.
// Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace fulcrum {

// Whether ErrorDetail::found is the offending text (quoted in the message: found "abc") or a
// description of what was there (verbatim: found a list, found an empty file).
enum class FoundIs { kText, kDescription };

// InvalidInput with message "<file>[:<line>]: <field>: expected <expected>, found <found>
// [; did you mean <nearest, ...>?]" and `detail` attached. Empty file/field parts are left out.
Status InputError(ErrorDetail detail, FoundIs found_is = FoundIs::kText);

// Levenshtein distance (insert, delete, substitute: 1 each), byte-wise.
size_t EditDistance(std::string_view a, std::string_view b);

// Up to `max_names` of `candidates` close to `name`: edit distance (case-insensitive, ' ' and
// '_' read as '-') at most 1 for names up to 2 characters, else at most a third of the length,
// at least 2; or one name part of the other ("A100" and "A100-SXM4-40GB"). Closest first, ties
// in candidate order.
std::vector<std::string> NearestNames(std::string_view name,
                                      const std::vector<std::string>& candidates,
                                      size_t max_names = 3);

// "a, b, c".
std::string JoinNames(const std::vector<std::string>& names);

}  // namespace fulcrum
