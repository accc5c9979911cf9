// Where fulcrum finds its shipped data and the user's files. Resolution order for the catalog:
// the --catalog flag, $FULCRUM_CATALOG, <dir of the executable>/../catalog (a build tree or an
// unpacked release), <prefix>/share/fulcrum/catalog, then the source tree the binary was built
// from. The user's directories follow the XDG base directory spec (an unset, empty or relative
// $XDG_* is ignored). Thread-safe (reads the environment and /proc only).
#pragma once

#include <string>

namespace fulcrum {

// Directory holding the running executable ("" if unknown).
std::string ExecutableDir();

// The catalog directory to use when `flag_value` (from --catalog) is empty.
std::string DefaultCatalogDir(const std::string& flag_value);

// $XDG_CONFIG_HOME/fulcrum or ~/.config/fulcrum.
std::string UserConfigDir();

// $XDG_DATA_HOME/fulcrum or ~/.local/share/fulcrum.
std::string UserDataDir();

// The shared data directory (agent.db, jobs.db, the local queue): `flag_value` (--data-dir) when
// non-empty, else $FULCRUM_DATA_DIR, else /var/lib/fulcrum as root, else UserDataDir(). Every
// default data directory is resolved here (docs/API.md "Shared data directory").
std::string DataDir(const std::string& flag_value);

}  // namespace fulcrum
