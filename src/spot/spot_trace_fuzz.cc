// Fuzz target: the spot availability trace parser must never crash and must either accept a
// trace that satisfies its contract or refuse it with a message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "spot/preemption.h"
#include "spot/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto trace = fulcrum::spot::ParseTrace(text, "fuzz.json");
  if (!trace.ok()) {
    if (trace.status().message().empty()) std::abort();
    return 0;
  }
  if (!(trace->gap_seconds > 0) || trace->counts.empty()) std::abort();
  for (int64_t count : trace->counts) {
    if (count < 0) std::abort();
  }
  // The model built from an accepted trace must be walkable.
  auto model = fulcrum::spot::PreemptionModel::FromTrace(*trace);
  fulcrum::spot::SplitMix64 rng(size);
  fulcrum::spot::AvailabilityCursor cursor(model, rng);
  for (int i = 0; i < 4 && cursor.next_change_seconds() != fulcrum::spot::kNever; ++i) {
    cursor.Advance();
  }
  return 0;
}
