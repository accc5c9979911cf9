#include "supervise/checkpoints_format.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <vector>

namespace fulcrum::supervise {
namespace {

// The zip records torch.save's writer (miniz, via caffe2/serialize/inline_container.cc in
// pytorch/pytorch@3834689c) ends an archive with; layouts from PKWARE's APPNOTE.TXT 6.3.x
// section 4.3.14-4.3.16 (https://pkware.cachefly.net/webdocs/casestudies/APPNOTE.TXT).
constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kEndOfCentralDir = 0x06054b50;  // 22 bytes + comment (at most 65535)
constexpr uint32_t kZip64EndLocator = 0x07064b50;  // 20 bytes, just before the end record
constexpr uint32_t kZip64EndRecord = 0x06064b50;
constexpr uint64_t kEndRecordBytes = 22;
constexpr uint64_t kMaxCommentBytes = 65535;
constexpr uint64_t kLocatorBytes = 20;
// A safetensors header above this is no header (the reference reader caps it at 100 MB:
// huggingface/safetensors, safetensors/src/tensor.rs MAX_HEADER_SIZE = 100_000_000).
constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

uint64_t Le(const std::string& bytes, size_t at, int width) {
  uint64_t value = 0;
  for (int i = width - 1; i >= 0; --i) {
    value = (value << 8) | static_cast<unsigned char>(bytes[at + static_cast<size_t>(i)]);
  }
  return value;
}

// Reads `count` bytes at `offset` of the checkpoint (a file or bytes in memory); nullopt when
// they are not all there.
using Reader = std::function<std::optional<std::string>(uint64_t offset, uint64_t count)>;

FileVerdict Zip(const Reader& ReadAt, uint64_t size) {
  FileVerdict v{FileProof::kCutShort, "torch.save zip", ""};
  if (size < kEndRecordBytes) {
    v.detail = "shorter than a zip end record";
    return v;
  }
  const uint64_t tail_bytes = std::min(size, kEndRecordBytes + kMaxCommentBytes);
  auto tail = ReadAt(size - tail_bytes, tail_bytes);
  if (!tail) return {FileProof::kUnknown, "", "cannot read the end of the file"};
  // The last end record whose comment ends exactly at the end of the file.
  for (uint64_t i = tail_bytes - kEndRecordBytes + 1; i-- > 0;) {
    if (Le(*tail, i, 4) != kEndOfCentralDir) continue;
    const uint64_t comment = Le(*tail, i + 20, 2);
    if (i + kEndRecordBytes + comment != tail_bytes) continue;
    const uint64_t end_at = size - tail_bytes + i;
    uint64_t entries = Le(*tail, i + 10, 2);
    uint64_t cd_bytes = Le(*tail, i + 12, 4);
    uint64_t cd_offset = Le(*tail, i + 16, 4);
    uint64_t cd_end = end_at;
    // torch.save's writer puts zip64 end records before the classic one whatever the sizes.
    auto locator =
        end_at >= kLocatorBytes ? ReadAt(end_at - kLocatorBytes, kLocatorBytes) : std::nullopt;
    const bool has_locator = locator && Le(*locator, 0, 4) == kZip64EndLocator;
    if (!has_locator && (entries == 0xFFFF || cd_bytes == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF)) {
      v.detail = "zip64 end record without its locator";
      return v;
    }
    if (has_locator) {
      const uint64_t record_at = Le(*locator, 8, 8);
      auto record = record_at + 56 <= end_at ? ReadAt(record_at, 56) : std::nullopt;
      if (!record || Le(*record, 0, 4) != kZip64EndRecord) {
        v.detail = "zip64 locator points at no zip64 end record";
        return v;
      }
      entries = Le(*record, 32, 8);
      cd_bytes = Le(*record, 40, 8);
      cd_offset = Le(*record, 48, 8);
      cd_end = record_at;
    }
    if (cd_offset + cd_bytes != cd_end) {
      v.detail = "the central directory does not end where the end record says";
      return v;
    }
    if (entries > 0) {
      auto first = ReadAt(cd_offset, 4);
      if (!first || Le(*first, 0, 4) != kCentralHeader) {
        v.detail = "no central directory where the end record says";
        return v;
      }
    }
    return {FileProof::kWhole, v.format,
            "zip end-of-central-directory record, " + std::to_string(entries) + " entries"};
  }
  v.detail = "no end-of-central-directory record at the end (cut short while being written)";
  return v;
}

// Format: huggingface/safetensors@ead9d7ba README.md "Format": 8 bytes little-endian header size
// N, N bytes of JSON header, then the byte buffer, which the header's data_offsets index entirely.
std::optional<FileVerdict> Safetensors(const Reader& ReadAt, uint64_t size,
                                       const std::string& head) {
  const uint64_t header_bytes = Le(head, 0, 8);
  if (header_bytes < 2 || header_bytes > kMaxSafetensorsHeaderBytes || head[8] != '{') {
    return std::nullopt;
  }
  FileVerdict v{FileProof::kCutShort, "safetensors", ""};
  if (8 + header_bytes > size) {
    v.detail = "the header is longer than the file";
    return v;
  }
  auto text = ReadAt(8, header_bytes);
  if (!text) return std::nullopt;
  auto header = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!header.is_object()) return std::nullopt;
  uint64_t data_end = 0;
  for (const auto& [name, tensor] : header.items()) {
    if (name == "__metadata__") continue;
    if (!tensor.is_object() || !tensor.contains("data_offsets")) return std::nullopt;
    const auto& offsets = tensor["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[1].is_number_unsigned()) {
      return std::nullopt;
    }
    data_end = std::max(data_end, offsets[1].get<uint64_t>());
  }
  const uint64_t expected = 8 + header_bytes + data_end;
  if (expected != size) {
    v.detail = "the header lists " + std::to_string(expected) + " bytes, the file has " +
               std::to_string(size);
    return v;
  }
  return FileVerdict{FileProof::kWhole, v.format, "safetensors header matches the file size"};
}

FileVerdict Verify(const Reader& read, uint64_t size) {
  if (size < 9) return {};
  auto head = read(0, 9);
  if (!head) return {FileProof::kUnknown, "", "cannot read"};
  if (Le(*head, 0, 4) == kLocalHeader) return Zip(read, size);
  if (auto v = Safetensors(read, size, *head)) return *v;
  return {};
}

}  // namespace

FileVerdict VerifyCheckpointFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {FileProof::kUnknown, "", "cannot open"};
  const auto end = in.tellg();
  if (end < 0) return {FileProof::kUnknown, "", "cannot size"};
  const Reader read = [&in](uint64_t offset, uint64_t count) -> std::optional<std::string> {
    std::string bytes(count, '\0');
    in.clear();
    in.seekg(static_cast<std::streamoff>(offset));
    if (!in.read(bytes.data(), static_cast<std::streamsize>(count))) return std::nullopt;
    return bytes;
  };
  return Verify(read, static_cast<uint64_t>(end));
}

FileVerdict VerifyCheckpointBytes(std::string_view bytes) {
  const Reader read = [bytes](uint64_t offset, uint64_t count) -> std::optional<std::string> {
    if (offset > bytes.size() || count > bytes.size() - offset) return std::nullopt;
    return std::string(bytes.substr(offset, count));
  };
  return Verify(read, bytes.size());
}

}  // namespace fulcrum::supervise
