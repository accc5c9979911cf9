#include "support/fake_metadata.h"

#include <nlohmann/json.hpp>

namespace fulcrum::testing {

FakeMetadata::FakeMetadata() {
  http.server().Put(
      "/latest/api/token", [this](const httplib::Request& req, httplib::Response& res) {
        if (req.has_header("X-aliyun-ecs-metadata-token-ttl-seconds")) {
          ++alibaba_token_requests;
          res.set_content("ali-tok-1", "text/plain");
          return;
        }
        ++token_requests;
        res.set_content(req.has_header("X-aws-ec2-metadata-token-ttl-seconds") ? "tok-1" : "",
                        "text/plain");
      });
  http.server().Get("/latest/meta-data/instance/spot/termination-time",
                    [this](const httplib::Request& req, httplib::Response& res) {
                      if (req.get_header_value("X-aliyun-ecs-metadata-token") != "ali-tok-1") {
                        ++alibaba_unauthorised;
                        res.status = 403;
                        return;
                      }
                      if (!notice) {
                        res.status = 404;
                        return;
                      }
                      res.set_content("2026-11-30T06:05:00Z", "text/plain");
                    });
  http.server().Get("/latest/meta-data/spot/instance-action",
                    [this](const httplib::Request& req, httplib::Response& res) {
                      if (req.get_header_value("X-aws-ec2-metadata-token") != "tok-1") {
                        ++unauthorised;
                        res.status = 401;
                        return;
                      }
                      if (!notice) {
                        res.status = 404;
                        return;
                      }
                      res.set_content(R"({"action": "terminate", "time": "2026-11-30T06:00:00Z"})",
                                      "application/json");
                    });
  http.server().Get("/computeMetadata/v1/instance/preempted",
                    [this](const httplib::Request& req, httplib::Response& res) {
                      if (req.get_header_value("Metadata-Flavor") != "Google") {
                        res.status = 403;
                        return;
                      }
                      res.set_content(notice ? "TRUE" : "FALSE", "text/plain");
                    });
  http.server().Get(
      "/metadata/scheduledevents", [this](const httplib::Request& req, httplib::Response& res) {
        if (req.get_header_value("Metadata") != "true") {
          res.status = 400;
          return;
        }
        nlohmann::json events = nlohmann::json::array();
        if (notice) {
          events.push_back({{"EventId", "e1"},
                            {"EventType", "Preempt"},
                            {"NotBefore", "Mon, 30 Nov 2026 06:00:30 GMT"}});
        }
        res.set_content(nlohmann::json({{"DocumentIncarnation", 1}, {"Events", events}}).dump(),
                        "application/json");
      });
  http.Start();
}

}  // namespace fulcrum::testing
