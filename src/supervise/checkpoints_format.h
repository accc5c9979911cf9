// Whether one checkpoint file proves by its own format that it was written to the end: the zip
// archive that torch.save writes (since torch 1.6; a zip's end-of-central-directory record is
// written last, so a writer cut short leaves none at the end) and safetensors (an 8-byte header
// length, a JSON header, then exactly the tensor bytes it lists). Reads at most the file's
// first and last 64 KiB plus a safetensors header. Pure functions, thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace fulcrum::supervise {

enum class FileProof {
  kWhole,     // the format's own end record is present and consistent with the file's size
  kCutShort,  // the format is recognised but its end is missing or inconsistent
  kUnknown,   // not a format we can verify (keep the settle rule)
};

struct FileVerdict {
  FileProof proof = FileProof::kUnknown;
  std::string format;  // "torch.save zip", "safetensors", "" when unknown
  std::string detail;  // why, for the log: "no end-of-central-directory record at the end"
};

// Reads `path` and judges it; an unreadable file is kUnknown with the error in `detail`.
FileVerdict VerifyCheckpointFile(const std::string& path);
// The same judgement of bytes in memory (the fuzz target, tests).
FileVerdict VerifyCheckpointBytes(std::string_view bytes);

}  // namespace fulcrum::supervise
