// The network-cut drill's network: a network namespace made for the job (and a peer namespace
// at the other end of its veth link, so nothing is added to the host's own network), entered
// with nsenter (which execs: the training process keeps its pid). The cut is the job's link
// going down. Root only; `ip` (iproute2) and `nsenter` (util-linux) must be installed. The
// namespaces are named fulcrum-validate-<pid>[-peer] and deleted on destruction; ones left by a
// validate that died are deleted at the next Create. Thread-compatible.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace fulcrum::validate {

class DrillNetwork {
 public:
  // kUnavailable with the reason when the namespaces cannot be made here.
  static Result<std::unique_ptr<DrillNetwork>> Create();
  ~DrillNetwork();
  DrillNetwork(const DrillNetwork&) = delete;
  DrillNetwork& operator=(const DrillNetwork&) = delete;

  // `argv` run inside the job's namespace.
  std::vector<std::string> Wrap(const std::vector<std::string>& argv) const;
  // The job's end of the link down (false) or up (true).
  Status SetLink(bool up);
  const std::string& name() const { return name_; }

 private:
  DrillNetwork() = default;
  std::string ip_, nsenter_;
  std::string name_, peer_;
  bool made_ = false, peer_made_ = false;
};

}  // namespace fulcrum::validate
