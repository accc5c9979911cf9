#include "validate/notice_endpoint.h"

#include <httplib.h>

#include <chrono>
#include <thread>

namespace fulcrum::validate {

// The server's thread, joined on destruction after the server stopped.
class ServeThread {
 public:
  explicit ServeThread(httplib::Server& server)
      : thread_([&server] { server.listen_after_bind(); }) {}
  ~ServeThread() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::thread thread_;
};

namespace {
constexpr const char* kToken = "fulcrum-validate";
// The documented answer (AWS EC2 "Spot Instance interruption notices": instance-action).
constexpr const char* kInstanceAction =
    R"({"action": "terminate", "time": "1970-01-01T00:02:00Z"})";
}  // namespace

NoticeEndpoint::NoticeEndpoint() : server_(std::make_unique<httplib::Server>()) {}

NoticeEndpoint::~NoticeEndpoint() {
  // stop() before the thread is listening would be lost: wait for it to run first.
  for (int i = 0; thread_ && !server_->is_running() && i < 1000; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  server_->stop();
  thread_.reset();
}

Result<std::unique_ptr<NoticeEndpoint>> NoticeEndpoint::Start() {
  std::unique_ptr<NoticeEndpoint> endpoint(new NoticeEndpoint());
  NoticeEndpoint* self = endpoint.get();
  self->server_->Put("/latest/api/token", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(kToken, "text/plain");
  });
  self->server_->Get("/latest/meta-data/spot/instance-action",
                     [self](const httplib::Request& req, httplib::Response& res) {
                       if (req.get_header_value("X-aws-ec2-metadata-token") != kToken) {
                         res.status = 401;
                         return;
                       }
                       MutexLock lock(self->mutex_);
                       ++self->requests_;
                       if (!self->notice_) {
                         res.status = 404;
                         return;
                       }
                       res.set_content(kInstanceAction, "application/json");
                     });
  self->port_ = self->server_->bind_to_any_port("127.0.0.1");
  if (self->port_ <= 0)
    return Status::Unavailable("cannot bind a loopback port for the notice drill");
  self->thread_ = std::make_unique<ServeThread>(*self->server_);
  return endpoint;
}

std::string NoticeEndpoint::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

void NoticeEndpoint::Raise() {
  MutexLock lock(mutex_);
  notice_ = true;
}

void NoticeEndpoint::Clear() {
  MutexLock lock(mutex_);
  notice_ = false;
}

int NoticeEndpoint::notice_requests() const {
  MutexLock lock(mutex_);
  return requests_;
}

}  // namespace fulcrum::validate
