// Test-only builders of the files training frameworks write, small enough to build in each test:
// a zip archive as torch.save writes it (stored entries, optional zip64 end records), and a
// safetensors file. Layouts follow PKWARE's APPNOTE.TXT 6.3.x (4.3.7 local header, 4.3.12
// central directory header, 4.3.14-16 end records) and huggingface/safetensors@ead9d7ba
// README.md "Format".
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace fulcrum::supervise::testing {

inline void PutLe(std::string& out, uint64_t value, int width) {
  for (int i = 0; i < width; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

// A zip of stored (uncompressed) entries, as torch.save's "archive/data.pkl" layout is read.
inline std::string ZipBytes(const std::vector<std::pair<std::string, std::string>>& entries,
                            bool zip64 = false) {
  std::string out, central;
  for (const auto& [name, data] : entries) {
    const uint64_t offset = out.size();
    PutLe(out, 0x04034b50, 4);
    PutLe(out, 20, 2), PutLe(out, 0, 2), PutLe(out, 0, 2), PutLe(out, 0, 2), PutLe(out, 0, 2);
    PutLe(out, 0, 4), PutLe(out, data.size(), 4), PutLe(out, data.size(), 4);
    PutLe(out, name.size(), 2), PutLe(out, 0, 2);
    out += name + data;
    PutLe(central, 0x02014b50, 4);
    PutLe(central, 20, 2), PutLe(central, 20, 2), PutLe(central, 0, 2), PutLe(central, 0, 2);
    PutLe(central, 0, 2), PutLe(central, 0, 2), PutLe(central, 0, 4);
    PutLe(central, data.size(), 4), PutLe(central, data.size(), 4);
    PutLe(central, name.size(), 2), PutLe(central, 0, 2), PutLe(central, 0, 2);
    PutLe(central, 0, 2), PutLe(central, 0, 2), PutLe(central, 0, 4), PutLe(central, offset, 4);
    central += name;
  }
  const uint64_t cd_offset = out.size();
  out += central;
  if (zip64) {
    const uint64_t record_at = out.size();
    PutLe(out, 0x06064b50, 4), PutLe(out, 44, 8), PutLe(out, 45, 2), PutLe(out, 45, 2);
    PutLe(out, 0, 4), PutLe(out, 0, 4), PutLe(out, entries.size(), 8);
    PutLe(out, entries.size(), 8), PutLe(out, central.size(), 8), PutLe(out, cd_offset, 8);
    PutLe(out, 0x07064b50, 4), PutLe(out, 0, 4), PutLe(out, record_at, 8), PutLe(out, 1, 4);
  }
  PutLe(out, 0x06054b50, 4), PutLe(out, 0, 2), PutLe(out, 0, 2);
  PutLe(out, zip64 ? 0xFFFF : entries.size(), 2), PutLe(out, zip64 ? 0xFFFF : entries.size(), 2);
  PutLe(out, zip64 ? 0xFFFFFFFF : central.size(), 4);
  PutLe(out, zip64 ? 0xFFFFFFFF : cd_offset, 4), PutLe(out, 0, 2);
  return out;
}

// What torch.save(obj, path) writes, in miniature: archive/data.pkl + archive/version.
inline std::string TorchSaveBytes(const std::string& payload = "weights") {
  return ZipBytes({{"archive/data.pkl", "\x80\x02" + payload + "."}, {"archive/version", "3\n"}});
}

// One F32 tensor "w" of `floats` values.
inline std::string SafetensorsBytes(int floats = 2) {
  const std::string header = "{\"w\":{\"dtype\":\"F32\",\"shape\":[" + std::to_string(floats) +
                             "],\"data_offsets\":[0," + std::to_string(4 * floats) + "]}}";
  std::string out;
  PutLe(out, header.size(), 8);
  return out + header + std::string(static_cast<size_t>(4 * floats), '\0');
}

inline void WriteBytes(const std::filesystem::path& path, const std::string& bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace fulcrum::supervise::testing
