#include "telemetry/replay_source.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "core/text_file.h"

namespace fulcrum::telemetry {

Result<std::unique_ptr<ReplaySource>> ReplaySource::Open(const std::string& path,
                                                         const Clock& clock) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text,
                           ReadTextFile(path, "a replay file (JSON lines of `agent --record`)"));
  std::istringstream in(std::move(text));
  std::vector<GpuSnapshot> frames;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string where = path + ":" + std::to_string(line_no);
    nlohmann::json doc = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded() || !doc.is_object() || !doc.contains("gpus") ||
        !doc["gpus"].is_array()) {
      return Status::InvalidInput(where + ": expected a JSON object {\"t\": ..., \"gpus\": [...]}");
    }
    GpuSnapshot frame;
    for (const auto& g : doc["gpus"]) {
      auto sample = SampleFromJson(g);
      if (!sample.ok()) return sample.status().WithContext(where);
      frame.push_back(std::move(*sample));
    }
    frames.push_back(std::move(frame));
  }
  if (frames.empty()) return Status::InvalidInput(path + ": no samples recorded");
  return std::unique_ptr<ReplaySource>(new ReplaySource(std::move(frames), clock));
}

ReplaySource::ReplaySource(std::vector<GpuSnapshot> frames, const Clock& clock)
    : frames_(std::move(frames)), clock_(clock) {
  for (const auto& f : frames_) gpu_count_ = std::max(gpu_count_, static_cast<int>(f.size()));
}

Result<GpuSnapshot> ReplaySource::Sample() {
  GpuSnapshot frame = frames_[next_];
  next_ = (next_ + 1) % frames_.size();
  double now = clock_.UnixSeconds();
  for (GpuSample& s : frame) s.timestamp = now;
  return frame;
}

Result<std::unique_ptr<Recorder>> Recorder::Open(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "a");
  if (file == nullptr) {
    return Status::IoError("cannot open record file " + path + ": " + std::strerror(errno));
  }
  return std::unique_ptr<Recorder>(new Recorder(file));
}

Recorder::~Recorder() { std::fclose(file_); }

Status Recorder::Append(const GpuSnapshot& snapshot, double unix_seconds) {
  nlohmann::json line;
  line["t"] = unix_seconds;
  line["gpus"] = nlohmann::json::array();
  for (const GpuSample& s : snapshot) line["gpus"].push_back(SampleToJson(s));
  std::string text = line.dump() + "\n";
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0) {
    return Status::IoError(std::string("writing the record file: ") + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace fulcrum::telemetry
