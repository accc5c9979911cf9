// Reads a whole input file (a catalog table, a YAML spec/config/rules/scenario) into memory, for
// the loaders that parse it. Thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/status.h"

namespace fulcrum {

// The largest input file read: 16 MiB (issue 29: a 200 MB input took 1.48 GB of memory to load;
// the largest shipped input, a catalog table, is a few hundred KiB).
inline constexpr size_t kMaxInputFileBytes = 16u << 20;

// The file's bytes. NotFound "<path>: expected <what>, found none" when it is not a
// regular file; InvalidInput "<path>: expected <what> of at most 16 MiB, found 200.0 MiB
// (209715200 bytes)" when it is larger than `max_bytes`; IoError when it cannot be read.
Result<std::string> ReadTextFile(const std::string& path, std::string_view what,
                                 size_t max_bytes = kMaxInputFileBytes);

// Replaces the file at `path` with `text` (reports: --html). IoError "<path>: cannot write".
Status WriteTextFile(const std::string& path, std::string_view text);

}  // namespace fulcrum
