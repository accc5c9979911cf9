// Fuzz target: the checkpoint format proofs (torch.save zip end records, safetensors headers)
// must never crash or read outside the bytes, and a verdict of whole must survive the loss of
// its last byte only as "cut short" or "unknown", never as whole again: a truncated file is
// never proven whole. Seeds in tests/fuzz/checkpoints_format_fuzz/: torch_save_113.pt is
// Debian python3-torch 1.13's torch.save(torch.tensor([1.0, 2.0])), torch_save_cut.pt the same
// less its last 30 bytes, stored.zip Python's zipfile (ZIP_STORED), two_floats.safetensors a
// two-float F32 tensor laid out per huggingface/safetensors@ead9d7ba README.md "Format".
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
