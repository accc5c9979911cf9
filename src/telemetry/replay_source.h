// Recording and replay of GPU snapshots. The recording format is JSON Lines: one line per
// sample tick, `{"t": <unix seconds>, "gpus": [<sample as in /v1/gpus>, ...]}`. `fulcrum agent
// --record FILE` appends with Recorder on a real machine; ReplaySource plays the file back one
// line per Sample() (timestamps moved to now), looping at the end so a daemon can run on it in
// CI. Neither is thread-safe.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "telemetry/gpu_source.h"

namespace fulcrum::telemetry {

class ReplaySource final : public GpuSource {
 public:
  // Reads the whole file (core ReadTextFile: at most 16 MiB); errors name file:line.
  static Result<std::unique_ptr<ReplaySource>> Open(const std::string& path, const Clock& clock);
  std::string kind() const override { return "replay"; }
  int gpu_count() const override { return gpu_count_; }
  Result<GpuSnapshot> Sample() override;
  size_t frames() const { return frames_.size(); }

 private:
  ReplaySource(std::vector<GpuSnapshot> frames, const Clock& clock);
  std::vector<GpuSnapshot> frames_;
  const Clock& clock_;
  size_t next_ = 0;
  int gpu_count_ = 0;
};

class Recorder {
 public:
  static Result<std::unique_ptr<Recorder>> Open(const std::string& path);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;
  // Appends one line and flushes it.
  Status Append(const GpuSnapshot& snapshot, double unix_seconds);

 private:
  explicit Recorder(std::FILE* file) : file_(file) {}
  std::FILE* file_;
};

}  // namespace fulcrum::telemetry
