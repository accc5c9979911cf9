// Fuzz target: `nvidia-smi topo -m` output (a saved file given to doctor --topo-file). Any input
// must give a topology or a Status, never a crash; the checks over a parsed topology must be
// computable.
#include <cstddef>
#include <cstdint>
#include <string>

#include "nodecheck/topology.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto topology = fulcrum::nodecheck::ParseTopoMatrix(text, "fuzz");
  if (topology.ok()) {
    (void)fulcrum::nodecheck::TopologyChecks(*topology, {{"NCCL_P2P_DISABLE", "1"}});
  }
  return 0;
}
