#include "supervise/notice.h"

#include <httplib.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

namespace fulcrum::supervise {
namespace {

std::unique_ptr<httplib::Client> MakeClient(const std::string& base_url, double timeout_seconds) {
  auto client = std::make_unique<httplib::Client>(base_url);
  const auto usec = static_cast<time_t>(timeout_seconds * 1e6);
  client->set_connection_timeout(usec / 1000000, usec % 1000000);
  client->set_read_timeout(usec / 1000000, usec % 1000000);
  client->set_write_timeout(usec / 1000000, usec % 1000000);
  return client;
}

Status Unreachable(const std::string& what, const httplib::Result& res) {
  return Status::Unavailable(what + ": " + httplib::to_string(res.error()));
}

class AwsSource final : public NoticeSource {
 public:
  AwsSource(const std::string& url, double timeout) : client_(MakeClient(url, timeout)) {}
  std::string name() const override { return "aws"; }
  Result<std::optional<std::string>> Check() override {
    if (token_.empty()) {
      // IMDSv2: a session token from PUT /latest/api/token (TTL header, 6 h maximum).
      auto res =
          client_->Put("/latest/api/token", {{"X-aws-ec2-metadata-token-ttl-seconds", "21600"}}, "",
                       "text/plain");
      if (!res) return Unreachable("aws token", res);
      if (res->status != 200)
        return Status::Unavailable("aws token: HTTP " + std::to_string(res->status));
      token_ = res->body;
    }
    auto res = client_->Get("/latest/meta-data/spot/instance-action",
                            {{"X-aws-ec2-metadata-token", token_}});
    if (!res) return Unreachable("aws instance-action", res);
    if (res->status == 401) {
      token_.clear();  // expired: fetch a new one next round
      return std::optional<std::string>();
    }
    if (res->status == 404) return std::optional<std::string>();
    if (res->status != 200)
      return Status::Unavailable("aws instance-action: HTTP " + std::to_string(res->status));
    return std::optional<std::string>("aws spot instance-action " + res->body);
  }

 private:
  std::unique_ptr<httplib::Client> client_;
  std::string token_;
};

class GcpSource final : public NoticeSource {
 public:
  GcpSource(const std::string& url, double timeout) : client_(MakeClient(url, timeout)) {}
  std::string name() const override { return "gcp"; }
  Result<std::optional<std::string>> Check() override {
    auto res =
        client_->Get("/computeMetadata/v1/instance/preempted", {{"Metadata-Flavor", "Google"}});
    if (!res) return Unreachable("gcp preempted", res);
    if (res->status != 200)
      return Status::Unavailable("gcp preempted: HTTP " + std::to_string(res->status));
    if (res->body.rfind("TRUE", 0) == 0)
      return std::optional<std::string>("gcp instance preempted");
    return std::optional<std::string>();
  }

 private:
  std::unique_ptr<httplib::Client> client_;
};

class AzureSource final : public NoticeSource {
 public:
  AzureSource(const std::string& url, double timeout) : client_(MakeClient(url, timeout)) {}
  std::string name() const override { return "azure"; }
  Result<std::optional<std::string>> Check() override {
    auto res =
        client_->Get("/metadata/scheduledevents?api-version=2020-07-01", {{"Metadata", "true"}});
    if (!res) return Unreachable("azure scheduledevents", res);
    if (res->status != 200) {
      return Status::Unavailable("azure scheduledevents: HTTP " + std::to_string(res->status));
    }
    auto body = nlohmann::json::parse(res->body, nullptr, false);
    if (!body.is_object() || !body.contains("Events") || !body["Events"].is_array()) {
      return Status::Unavailable("azure scheduledevents: expected {\"Events\": [...]}");
    }
    for (const auto& event : body["Events"]) {
      std::string type = event.value("EventType", "");
      if (type == "Preempt" || type == "Terminate" || type == "Reboot" || type == "Redeploy") {
        return std::optional<std::string>("azure scheduled event " + type + " at " +
                                          event.value("NotBefore", std::string("?")));
      }
    }
    return std::optional<std::string>();
  }

 private:
  std::unique_ptr<httplib::Client> client_;
};

class AlibabaSource final : public NoticeSource {
 public:
  AlibabaSource(const std::string& url, double timeout) : client_(MakeClient(url, timeout)) {}
  std::string name() const override { return "alibaba"; }
  Result<std::optional<std::string>> Check() override {
    if (token_.empty() && !normal_mode_) {
      auto res =
          client_->Put("/latest/api/token", {{"X-aliyun-ecs-metadata-token-ttl-seconds", "21600"}},
                       "", "text/plain");
      if (!res) return Unreachable("alibaba token", res);
      if (res->status == 200 && !res->body.empty()) {
        token_ = res->body;
      } else {
        normal_mode_ = true;  // no hardened mode on this instance: read without a token
      }
    }
    httplib::Headers headers;
    if (!token_.empty()) headers.emplace("X-aliyun-ecs-metadata-token", token_);
    auto res = client_->Get("/latest/meta-data/instance/spot/termination-time", headers);
    if (!res) return Unreachable("alibaba termination-time", res);
    if (res->status == 401 || res->status == 403) {
      token_.clear();  // expired or refused: ask for a new one next round
      normal_mode_ = false;
      return std::optional<std::string>();
    }
    if (res->status == 404) return std::optional<std::string>();
    if (res->status != 200) {
      return Status::Unavailable("alibaba termination-time: HTTP " + std::to_string(res->status));
    }
    return std::optional<std::string>("alibaba spot termination-time " + res->body);
  }

 private:
  std::unique_ptr<httplib::Client> client_;
  std::string token_;
  bool normal_mode_ = false;
};

}  // namespace

std::unique_ptr<NoticeSource> MakeAwsNoticeSource(const std::string& base_url,
                                                  double timeout_seconds) {
  return std::make_unique<AwsSource>(base_url, timeout_seconds);
}
std::unique_ptr<NoticeSource> MakeGcpNoticeSource(const std::string& base_url,
                                                  double timeout_seconds) {
  return std::make_unique<GcpSource>(base_url, timeout_seconds);
}
std::unique_ptr<NoticeSource> MakeAzureNoticeSource(const std::string& base_url,
                                                    double timeout_seconds) {
  return std::make_unique<AzureSource>(base_url, timeout_seconds);
}

std::unique_ptr<NoticeSource> MakeAlibabaNoticeSource(const std::string& base_url,
                                                      double timeout_seconds) {
  return std::make_unique<AlibabaSource>(base_url, timeout_seconds);
}

bool OnAlibabaEcs(const std::string& product_name_path) {
  std::ifstream in(product_name_path);
  std::string name;
  if (!in || !std::getline(in, name)) return false;
  while (!name.empty() && (name.back() == ' ' || name.back() == '\r')) name.pop_back();
  return name == "Alibaba Cloud ECS";
}

NoticeWatcher::NoticeWatcher(std::vector<std::unique_ptr<NoticeSource>> sources,
                             double interval_seconds)
    : sources_(std::move(sources)), interval_seconds_(interval_seconds) {}

NoticeWatcher::~NoticeWatcher() { Stop(); }

void NoticeWatcher::Start() {
  if (sources_.empty() || thread_.joinable()) return;
  thread_ = std::thread([this] {
    while (true) {
      {
        MutexLock lock(mutex_);
        if (stopping_ || notice_) return;
      }
      CheckOnce();
      MutexLock lock(mutex_);
      const auto deadline = std::chrono::steady_clock::now() +
                            std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                std::chrono::duration<double>(interval_seconds_));
      while (!stopping_ && wake_.WaitUntil(mutex_, deadline)) {
      }
    }
  });
}

void NoticeWatcher::Stop() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

std::optional<std::string> NoticeWatcher::Notice() const {
  MutexLock lock(mutex_);
  return notice_;
}

void NoticeWatcher::CheckOnce() {
  for (auto& source : sources_) {
    auto result = source->Check();
    if (result.ok() && result->has_value()) {
      MutexLock lock(mutex_);
      if (!notice_) notice_ = **result;
      return;
    }
  }
}

}  // namespace fulcrum::supervise
