// Clock seam: every component that reads time takes a Clock&, so tests drive time with a
// ManualClock and production uses SystemClock. Times are seconds as double: `MonotonicSeconds`
// for intervals (steady, arbitrary epoch), `UnixSeconds` for timestamps. SystemClock is
// thread-safe; ManualClock is thread-safe too (atomics), so a test can advance it while a worker
// thread reads it.
#pragma once

#include <atomic>

namespace fulcrum {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual double MonotonicSeconds() const = 0;
  virtual double UnixSeconds() const = 0;
};

class SystemClock final : public Clock {
 public:
  double MonotonicSeconds() const override;
  double UnixSeconds() const override;
};

class ManualClock final : public Clock {
 public:
  explicit ManualClock(double unix_start = 1.7e9) : unix_start_(unix_start) {}
  double MonotonicSeconds() const override { return now_.load(); }
  double UnixSeconds() const override { return unix_start_ + now_.load(); }
  void Advance(double seconds) { now_.store(now_.load() + seconds); }
  void Set(double monotonic_seconds) { now_.store(monotonic_seconds); }

 private:
  double unix_start_;
  std::atomic<double> now_{0};
};

}  // namespace fulcrum
