// Fuzz target for the serve-plan spec parser: every input goes to ParseServeYaml, which must
// return a Status (never crash, hang or throw); what it accepts has positive lengths, targets
// and traffic, tensor-parallel degrees >= 1 and known precision names.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "serve/serve.h"
#include "serve/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fulcrum::Result<fulcrum::serve::ServeSpec> spec =
      fulcrum::serve::ParseServeYaml(text, "fuzz.yaml");
  if (!spec.ok()) return 0;
  const fulcrum::serve::ServeSpec& s = *spec;
  if ((s.input_len && *s.input_len < 1) || (s.output_len && *s.output_len < 1)) std::abort();
  if ((s.concurrency && *s.concurrency < 1) ||
      (s.requests_per_second && !(*s.requests_per_second > 0))) {
    std::abort();
  }
  for (const auto& t : {s.targets.ttft_p50_seconds, s.targets.ttft_p90_seconds,
                        s.targets.tpot_p50_seconds, s.targets.tpot_p90_seconds}) {
    if (t && !(*t > 0)) std::abort();
  }
  for (int64_t tp : s.tp) {
    if (tp < 1) std::abort();
  }
  if (!s.precision.empty() && !fulcrum::serve::ParsePrecision(s.precision).ok()) std::abort();
  if (!s.kv_precision.empty() && !fulcrum::serve::ParseKvPrecision(s.kv_precision).ok()) {
    std::abort();
  }
  return 0;
}
