// Fuzz target for the plan spec parser: every input goes to ParsePlanYaml, which must return a
// Status (never crash, hang or throw); what it accepts and ValidateSpec passes must have
// positive work and a positive sequence length.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "plan/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fulcrum::Result<fulcrum::plan::PlanSpec> spec = fulcrum::plan::ParsePlanYaml(text, "fuzz.yaml");
  if (!spec.ok()) return 0;
  if (!fulcrum::plan::ValidateSpec(*spec).ok()) return 0;
  const double work = spec->tokens ? *spec->tokens : *spec->samples;
  if (!(work > 0) || spec->training.seq_len < 1 || spec->top < 1) std::abort();
  return 0;
}
