#include "core/text_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fulcrum {

Result<std::string> ReadTextFile(const std::string& path, std::string_view what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Status::NotFound(path + ": expected " + std::string(what) + ", found none");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError(path + ": cannot open the file for reading");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::IoError(path + ": read failed");
  return text.str();
}

Status WriteTextFile(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return Status::IoError(path + ": cannot write");
  return Status::Ok();
}

}  // namespace fulcrum
