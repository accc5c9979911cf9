// Fuzz target for the model parsers (in estimate/, which may include workload/, because it also
// estimates what they accept): every input goes to the HF config.json parser and to the
// preset YAML parser; both must return a Status (never crash, hang or throw), and what they
// accept must be a valid model whose estimate is finite.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "estimate/memory.h"
#include "workload/model_io.h"

namespace {

void CheckAccepted(const fulcrum::Result<fulcrum::workload::Model>& model) {
  if (!model.ok()) return;
  if (!fulcrum::workload::ValidateModel(*model).ok()) std::abort();
  fulcrum::workload::Training training;
  training.seq_len = 128;
  if (!fulcrum::workload::Validate(*model, training).ok()) return;
  const double peak = fulcrum::estimate::EstimateMemory(*model, training).peak_bytes_per_gpu;
  if (!std::isfinite(peak) || peak <= 0) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckAccepted(fulcrum::workload::ParseHfConfig(text, "fuzz.json"));
  CheckAccepted(fulcrum::workload::ParseModelYaml(text, "fuzz.yaml"));
  return 0;
}
