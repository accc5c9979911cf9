// A fake node agent for the cluster tests: answers GET /v1/gpus with a body the test sets (the
// agent's GPU list, with `last_xid` and `ecc_uncorrected`, as docs/API.md describes it), on
// 127.0.0.1. Set() may be called while the server runs; the body is guarded.
#pragma once

#include <httplib.h>

#include <string>

#include "core/mutex.h"
#include "support/fake_http_server.h"

namespace fulcrum::testing {

class FakeGpusAgent {
 public:
  FakeGpusAgent() {
    fake_.server().Get("/v1/gpus", [this](const httplib::Request&, httplib::Response& res) {
      MutexLock lock(mutex_);
      res.set_content(body_, "application/json");
    });
  }
  int Start() { return fake_.Start(); }
  std::string url() const { return fake_.url(); }
  void Set(const std::string& body) {
    MutexLock lock(mutex_);
    body_ = body;
  }

 private:
  Mutex mutex_;
  std::string body_ GUARDED_BY(mutex_) = R"({"gpus":[]})";
  FakeHttpServer fake_;  // last: stopped before the body goes
};

}  // namespace fulcrum::testing
