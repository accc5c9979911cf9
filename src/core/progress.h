// A one-line progress bar for long work ("[#####.....] 42% disk write 1.2 GB/s"), drawn on a
// terminal only: when the stream is not a TTY (pipes, CI logs, --json runs) it prints nothing.
// Not thread-safe: update it from one thread.
#pragma once

#include <cstdio>
#include <string>

namespace fulcrum {

class ProgressBar {
 public:
  // `stream` is usually stderr; `enabled` false forces silence (e.g. under --json).
  ProgressBar(std::FILE* stream, bool enabled);
  ~ProgressBar();

  // fraction in [0, 1]; `label` describes the current step.
  void Update(double fraction, const std::string& label);
  // Clears the line.
  void Finish();

 private:
  std::FILE* stream_;
  bool active_;
  bool drawn_ = false;
};

}  // namespace fulcrum
