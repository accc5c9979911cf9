// The --json contracts (docs/schemas/COMMAND.json, JSON Schema draft 7) checked on every output
// the tests see: RunFulcrum passes each `fulcrum ... --json` run here, so every end-to-end test
// that reads a command's JSON also checks it against the published schema.
#pragma once

#include <string>
#include <vector>

#include "support/run_binary.h"

namespace fulcrum::testing {

// The schema name of a command line: its command path (after the global options --catalog DIR
// and --verbose) joined by '-' ("spot interval --json" -> "spot-interval") where docs/schemas has
// that file, else the command; "" when the line has no --json before a "--" (the job's own
// arguments).
std::string JsonContractName(const std::vector<std::string>& args);

// Checks the output of `fulcrum args...` against its contract: stdout against COMMAND.json when it
// holds one JSON document, the last line of stderr against error.json when it is {"error": ...}.
// Records a test failure naming the schema, the path in the document and what was wrong. Skipped
// under a sanitizer (the release suite checks it) and where Debian's python3-jsonschema is absent.
// With $FULCRUM_JSON_SAMPLES set to a directory, each output is also saved there as
// COMMAND-N.json (how the schemas' first drafts were collected from the suite).
void CheckJsonContract(const std::vector<std::string>& args, const RunOutput& output);

}  // namespace fulcrum::testing
