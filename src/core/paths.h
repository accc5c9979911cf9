// Where fulcrum finds its shipped data and the user's files. Resolution order for the catalog:
// the --catalog flag, $FULCRUM_CATALOG, <dir of the executable>/../catalog (a build tree or an
// unpacked release), <prefix>/share/fulcrum/catalog, then the source tree the binary was built
// from. Thread-safe (reads the environment and /proc only).
#pragma once

#include <string>

namespace fulcrum {

// Directory holding the running executable ("" if unknown).
std::string ExecutableDir();

// The catalog directory to use when `flag_value` (from --catalog) is empty.
std::string DefaultCatalogDir(const std::string& flag_value);

// $XDG_CONFIG_HOME/fulcrum or ~/.config/fulcrum.
std::string UserConfigDir();

}  // namespace fulcrum
