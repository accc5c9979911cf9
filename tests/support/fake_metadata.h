// A fake cloud instance-metadata server on 127.0.0.1 (a FakeHttpServer) answering the three
// preemption notice endpoints fulcrum run polls, with no notice until `notice` is set: AWS
// IMDSv2 (PUT /latest/api/token, then GET /latest/meta-data/spot/instance-action with the token:
// 404 until a notice), GCP (GET /computeMetadata/v1/instance/preempted with Metadata-Flavor:
// Google: FALSE/TRUE), Azure Scheduled Events (GET /metadata/scheduledevents with Metadata: true:
// a Preempt event), Alibaba Cloud ECS in security hardening mode (PUT /latest/api/token with
// X-aliyun-ecs-metadata-token-ttl-seconds, then GET
// /latest/meta-data/instance/spot/termination-time with X-aliyun-ecs-metadata-token: 404 until a
// notice, then the release time). Starts serving on construction; point
// --aws/gcp/azure/alibaba-metadata-url at url(). The atomics may be read and set from any thread.
#pragma once

#include <atomic>
#include <string>

#include "support/fake_http_server.h"

namespace fulcrum::testing {

struct FakeMetadata {
  std::atomic<bool> notice{false};
  std::atomic<int> token_requests{0};
  std::atomic<int> unauthorised{0};  // AWS requests without the right token
  std::atomic<int> alibaba_token_requests{0};
  std::atomic<int> alibaba_unauthorised{0};  // Alibaba requests without the right token
  FakeHttpServer http;  // last: stopped before the counters its handlers touch go

  FakeMetadata();
  std::string url() const { return http.url(); }
};

}  // namespace fulcrum::testing
