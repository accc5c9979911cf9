// Preemption notice sources: AWS instance metadata (IMDSv2 token, spot/instance-action), GCP
// metadata (instance/preempted), Azure Scheduled Events (Preempt/Terminate/Reboot/Redeploy), each
// at a configurable base URL, plus a NoticeWatcher that polls them on its own thread. A source's
// Check() answers a notice text, nothing, or an error (the endpoint is unreachable). Sources are
// used from the watcher thread only; NoticeWatcher::Notice() is thread-safe.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "core/status.h"

namespace fulcrum::supervise {

class NoticeSource {
 public:
  virtual ~NoticeSource() = default;
  virtual std::string name() const = 0;
  // nullopt = no notice; a text = the machine is going away ("aws: terminate at ...").
  virtual Result<std::optional<std::string>> Check() = 0;
};

// Documented metadata endpoints (AWS EC2 "Spot Instance interruption notices", GCP
// "Preemptible/Spot VMs", Azure "Scheduled Events" docs): AWS  http://169.254.169.254 (PUT
// /latest/api/token, GET /latest/meta-data/spot/instance-action) GCP
// http://metadata.google.internal (GET /computeMetadata/v1/instance/preempted,
//      header Metadata-Flavor: Google)
// Azure http://169.254.169.254 (GET /metadata/scheduledevents?api-version=2020-07-01,
//      header Metadata: true)
inline constexpr const char* kAwsMetadataUrl = "http://169.254.169.254";
inline constexpr const char* kGcpMetadataUrl = "http://metadata.google.internal";
inline constexpr const char* kAzureMetadataUrl = "http://169.254.169.254";

// `base_url` is scheme://host[:port]; `timeout_seconds` bounds each request.
std::unique_ptr<NoticeSource> MakeAwsNoticeSource(const std::string& base_url,
                                                  double timeout_seconds);
std::unique_ptr<NoticeSource> MakeGcpNoticeSource(const std::string& base_url,
                                                  double timeout_seconds);
std::unique_ptr<NoticeSource> MakeAzureNoticeSource(const std::string& base_url,
                                                    double timeout_seconds);

// Polls every source every `interval_seconds` on a thread until stopped; the first notice sticks.
class NoticeWatcher {
 public:
  NoticeWatcher(std::vector<std::unique_ptr<NoticeSource>> sources, double interval_seconds);
  ~NoticeWatcher();
  NoticeWatcher(const NoticeWatcher&) = delete;
  NoticeWatcher& operator=(const NoticeWatcher&) = delete;

  void Start();
  void Stop();
  std::optional<std::string> Notice() const;
  // Runs one round of checks on the calling thread (tests, and the first probe).
  void CheckOnce();
  size_t source_count() const { return sources_.size(); }

 private:
  std::vector<std::unique_ptr<NoticeSource>> sources_;
  double interval_seconds_;
  mutable Mutex mutex_;
  CondVar wake_;
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::optional<std::string> notice_ GUARDED_BY(mutex_);
  std::thread thread_;
};

}  // namespace fulcrum::supervise
