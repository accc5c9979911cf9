#include "core/progress.h"

#include <unistd.h>

#include <algorithm>

namespace fulcrum {

ProgressBar::ProgressBar(std::FILE* stream, bool enabled)
    : stream_(stream), active_(enabled && stream != nullptr && isatty(fileno(stream))) {}

ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Update(double fraction, const std::string& label) {
  if (!active_) return;
  constexpr int kWidth = 30;
  fraction = std::clamp(fraction, 0.0, 1.0);
  int filled = static_cast<int>(fraction * kWidth);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(kWidth - filled), '.');
  std::fprintf(stream_, "\r\033[K[%s] %3.0f%% %s", bar.c_str(), fraction * 100, label.c_str());
  std::fflush(stream_);
  drawn_ = true;
}

void ProgressBar::Finish() {
  if (active_ && drawn_) {
    std::fprintf(stream_, "\r\033[K");
    std::fflush(stream_);
    drawn_ = false;
  }
}

}  // namespace fulcrum
