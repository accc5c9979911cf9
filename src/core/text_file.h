// Reads a whole input file (a catalog table, a YAML spec/config/rules/scenario) into memory, for
// the loaders that parse it. Thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace fulcrum {

// The file's bytes. NotFound "<path>: expected <what>, found none" when it is not a
// regular file; IoError when it cannot be read.
Result<std::string> ReadTextFile(const std::string& path, std::string_view what);

// Replaces the file at `path` with `text` (reports: --html). IoError "<path>: cannot write".
Status WriteTextFile(const std::string& path, std::string_view text);

}  // namespace fulcrum
