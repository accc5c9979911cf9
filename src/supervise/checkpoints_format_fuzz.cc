// Fuzz target: the checkpoint format proofs (torch.save zip end records, safetensors headers)
// must never crash or read outside the bytes, and a verdict of whole must survive the loss of
// its last byte only as "cut short" or "unknown", never as whole again: a truncated file is
// never proven whole.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "supervise/checkpoints_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  using fulcrum::supervise::FileProof;
  const auto verdict = fulcrum::supervise::VerifyCheckpointBytes(bytes);
  if (verdict.proof != FileProof::kUnknown && verdict.format.empty()) std::abort();
  if (verdict.proof == FileProof::kWhole && size > 0) {
    const auto shorter = fulcrum::supervise::VerifyCheckpointBytes(bytes.substr(0, size - 1));
    if (shorter.proof == FileProof::kWhole && shorter.format == verdict.format &&
        verdict.format == "safetensors") {
      std::abort();  // a safetensors file's size is fixed by its header
    }
  }
  return 0;
}
