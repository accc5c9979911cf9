// Fuzz target: the sim fault scenario YAML parser and one replay-file line (both read files a
// user writes or records). Any input must give a value or a Status, never a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "telemetry/gpu_sample.h"
#include "telemetry/sim_source.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto faults = fulcrum::telemetry::ParseScenario(text, "fuzz.yaml");
  (void)faults;
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_discarded() && doc.is_object() && doc.contains("gpus") && doc["gpus"].is_array()) {
    for (const auto& g : doc["gpus"]) (void)fulcrum::telemetry::SampleFromJson(g);
  }
  return 0;
}
