// The preemption-notice drill's cloud: an AWS instance-metadata endpoint on 127.0.0.1 (an
// ephemeral port) that answers the two IMDSv2 requests `fulcrum run --preemption aws` polls (PUT
// /latest/api/token, then GET /latest/meta-data/spot/instance-action with the token), with no
// notice (404) until Raise(). The job under validation reaches it through the supervisor's own
// metadata watcher (--aws-metadata-url), the path a real spot notice takes. Serves on its own
// thread from construction to destruction; Raise/Clear/requests are thread-safe.
#pragma once

#include <memory>
#include <string>

#include "core/mutex.h"
#include "core/status.h"

namespace httplib {
class Server;
}

namespace fulcrum::validate {

class ServeThread;

class NoticeEndpoint {
 public:
  // kUnavailable when no loopback port can be bound.
  static Result<std::unique_ptr<NoticeEndpoint>> Start();
  ~NoticeEndpoint();
  NoticeEndpoint(const NoticeEndpoint&) = delete;
  NoticeEndpoint& operator=(const NoticeEndpoint&) = delete;

  std::string url() const;  // http://127.0.0.1:PORT
  void Raise();             // instance-action: terminate
  void Clear();
  int notice_requests() const;  // GETs of instance-action answered so far

 private:
  NoticeEndpoint();
  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  mutable Mutex mutex_;
  bool notice_ GUARDED_BY(mutex_) = false;
  int requests_ GUARDED_BY(mutex_) = 0;
  std::unique_ptr<ServeThread> thread_;
};

}  // namespace fulcrum::validate
