// Fuzz target: the agent's YAML config parser and validation (a file the user writes).
#include <cstddef>
#include <cstdint>
#include <string>

#include "agent/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  fulcrum::agent::AgentConfig config;
  if (fulcrum::agent::ParseAgentConfigYaml(text, "fuzz.yaml", config).ok()) {
    (void)fulcrum::agent::ValidateAgentConfig(config);
  }
  return 0;
}
