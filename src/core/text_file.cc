#include "core/text_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/input_error.h"
#include "core/table.h"

namespace fulcrum {

namespace {

// "16 MiB", "200.0 MiB", "512 bytes".
std::string Size(uint64_t bytes) {
  if (bytes < (1 << 20)) return std::to_string(bytes) + " bytes";
  if (bytes % (1 << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return FormatNumber(static_cast<double>(bytes) / (1 << 20), 1) + " MiB";
}

// `found` is the file's size, or (`read_so_far`) what was read before the cap stopped the read.
Status TooLarge(const std::string& path, std::string_view what, size_t max_bytes, uint64_t found,
                bool read_so_far = false) {
  ErrorDetail detail;
  detail.file = path;
  detail.expected = std::string(what) + " of at most " + Size(max_bytes);
  detail.found = Size(found);
  if (found >= (1 << 20)) detail.found += " (" + std::to_string(found) + " bytes)";
  if (read_so_far) detail.found = "more than " + Size(max_bytes);
  return InputError(detail, FoundIs::kDescription);
}

}  // namespace

Result<std::string> ReadTextFile(const std::string& path, std::string_view what, size_t max_bytes) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Status::NotFound(path + ": expected " + std::string(what) + ", found none");
  }
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec && size > max_bytes) return TooLarge(path, what, max_bytes, size);
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError(path + ": cannot open the file for reading");
  // Read at most one byte past the cap: a file that grew after the size check (or a file whose
  // size the kernel does not know) is refused too.
  std::string text;
  if (!ec) text.reserve(static_cast<size_t>(size) + 1);
  char chunk[64 * 1024];
  while (in && text.size() <= max_bytes) {
    in.read(chunk, sizeof chunk);
    text.append(chunk, static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return Status::IoError(path + ": read failed");
  if (text.size() > max_bytes) return TooLarge(path, what, max_bytes, text.size(), true);
  return text;
}

Status WriteTextFile(const std::string& path, std::string_view text) {
  errno = 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const int open_errno = out ? 0 : errno;
  out << text;
  out.close();
  if (!out) {
    std::string why = open_errno != 0 ? std::strerror(open_errno) : "write failed";
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
      why = "the directory " + parent.string() + " does not exist";
    }
    return Status::IoError(path + ": cannot write: " + why);
  }
  return Status::Ok();
}

}  // namespace fulcrum
