// Fuzz target: NCCL RAS status reports (text and JSON), which come from a peer on a socket.
// Any input must give a report or a Status, never a crash; a report's lagging ranks and their
// descriptions must be computable.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "telemetry/nccl_ras.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (auto report :
       {fulcrum::telemetry::ParseNcclRasText(text), fulcrum::telemetry::ParseNcclRasJson(text)}) {
    if (!report.ok()) continue;
    for (const auto& lagging : fulcrum::telemetry::FindLaggingRanks(*report)) {
      (void)fulcrum::telemetry::DescribeLaggingRank(lagging);
    }
  }
  return 0;
}
