// Preemption notice sources: AWS instance metadata (IMDSv2 token, spot/instance-action), GCP
// metadata (instance/preempted), Azure Scheduled Events (Preempt/Terminate/Reboot/Redeploy),
// Alibaba Cloud ECS metadata (instance/spot/termination-time, token in hardened mode), each
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
// Alibaba Cloud ECS (AlibabaCloudDocs/ecs@322eaab82e866a494eeaddb0de02bab1978692d1,
// intl.en-US/Instance/Instance purchasing options/Preemptible instances/Query the interruption
// events of preemptible instances.md: GET /latest/meta-data/instance/spot/termination-time answers
// 404 while the instance may run, else the release time yyyy-MM-ddTHH:mm:ssZ; Overview.md: the
// instance is released five minutes after it enters the Recycling state. Security hardening mode,
// intl.en-US/Instance/Manage instances/Metadata/View instance metadata.md: PUT /latest/api/token
// with X-aliyun-ecs-metadata-token-ttl-seconds (1-21600), then the X-aliyun-ecs-metadata-token
// header on each GET.)
inline constexpr const char* kAlibabaMetadataUrl = "http://100.100.100.200";

// Whether this machine is an Alibaba Cloud ECS instance: its DMI system product name reads
// "Alibaba Cloud ECS" (canonical/cloud-init@a1c6687be65ffa7bc89bf3ef8a4f3fdd20cf9bbf
// cloudinit/sources/DataSourceAliYun.py: ALIYUN_PRODUCT, _is_aliyun() reads
// "system-product-name", which cloudinit/dmi.py reads from /sys/class/dmi/id/product_name).
// `--preemption auto` probes Alibaba's metadata address only then: 100.100.100.200 is not
// link-local (100.64.0.0/10, shared address space, RFC 6598), so elsewhere it may route to a
// carrier's device. False when the file is missing or unreadable.
inline constexpr const char* kDmiProductNamePath = "/sys/class/dmi/id/product_name";
bool OnAlibabaEcs(const std::string& product_name_path = kDmiProductNamePath);

// `base_url` is scheme://host[:port]; `timeout_seconds` bounds each request.
std::unique_ptr<NoticeSource> MakeAwsNoticeSource(const std::string& base_url,
                                                  double timeout_seconds);
std::unique_ptr<NoticeSource> MakeGcpNoticeSource(const std::string& base_url,
                                                  double timeout_seconds);
std::unique_ptr<NoticeSource> MakeAzureNoticeSource(const std::string& base_url,
                                                    double timeout_seconds);
// Asks for a hardened-mode token first; a metadata server in normal mode (token refused) is
// then read without one.
std::unique_ptr<NoticeSource> MakeAlibabaNoticeSource(const std::string& base_url,
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
