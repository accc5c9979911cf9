#include "validate/drill_network.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include "core/subprocess.h"

namespace fulcrum::validate {
namespace {
namespace fs = std::filesystem;

constexpr const char* kPrefix = "fulcrum-validate-";
constexpr const char* kJobLink = "eth0";

// The first of `names` that is an executable file in the usual system directories or on PATH.
std::string FindProgram(const std::string& name) {
  for (const char* dir : {"/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"}) {
    const std::string path = std::string(dir) + name;
    if (ProgramExists(path)) return path;
  }
  return ProgramExists(name) ? name : "";
}

Status Ip(const std::string& ip, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {ip};
  argv.insert(argv.end(), args.begin(), args.end());
  CaptureOptions options;
  options.timeout_seconds = 10;
  auto r = RunCapture(argv, options);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    std::string cmd;
    for (const auto& a : argv) {
      if (!cmd.empty()) cmd += ' ';
      cmd += a;
    }
    std::string err = r->err;
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
    return Status::Unavailable(cmd + ": " + err);
  }
  return Status::Ok();
}

// Namespaces of a validate that is gone (the pid in the name has no process).
void DeleteStale(const std::string& ip) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/run/netns", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kPrefix, 0) != 0) continue;
    const pid_t owner = static_cast<pid_t>(std::atol(name.c_str() + std::string(kPrefix).size()));
    if (owner > 0 && owner != ::getpid() && ::kill(owner, 0) != 0 && errno == ESRCH) {
      (void)Ip(ip, {"netns", "delete", name});
    }
  }
}

}  // namespace

Result<std::unique_ptr<DrillNetwork>> DrillNetwork::Create() {
  if (::geteuid() != 0) return Status::Unavailable("needs root (network namespaces)");
  std::unique_ptr<DrillNetwork> net(new DrillNetwork());
  net->ip_ = FindProgram("ip");
  net->nsenter_ = FindProgram("nsenter");
  if (net->ip_.empty()) return Status::Unavailable("`ip` is not installed (Debian: iproute2)");
  if (net->nsenter_.empty())
    return Status::Unavailable("`nsenter` is not installed (Debian: util-linux)");
  DeleteStale(net->ip_);
  net->name_ = kPrefix + std::to_string(::getpid());
  net->peer_ = net->name_ + "-peer";
  const std::string& ip = net->ip_;
  FULCRUM_RETURN_IF_ERROR(Ip(ip, {"netns", "add", net->name_}));
  net->made_ = true;
  FULCRUM_RETURN_IF_ERROR(Ip(ip, {"netns", "add", net->peer_}));
  net->peer_made_ = true;
  // Addresses from 10.0.0.0/8 (RFC 1918), only inside the two namespaces.
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"-n", net->name_, "link", "set", "lo", "up"},
           {"-n", net->name_, "link", "add", kJobLink, "type", "veth", "peer", "name", "peer0",
            "netns", net->peer_},
           {"-n", net->name_, "addr", "add", "10.213.0.1/30", "dev", kJobLink},
           {"-n", net->peer_, "addr", "add", "10.213.0.2/30", "dev", "peer0"},
           {"-n", net->name_, "link", "set", kJobLink, "up"},
           {"-n", net->peer_, "link", "set", "peer0", "up"},
           {"-n", net->peer_, "link", "set", "lo", "up"}}) {
    FULCRUM_RETURN_IF_ERROR(Ip(ip, args));
  }
  return net;
}

DrillNetwork::~DrillNetwork() {
  if (made_) (void)Ip(ip_, {"netns", "delete", name_});
  if (peer_made_) (void)Ip(ip_, {"netns", "delete", peer_});
}

std::vector<std::string> DrillNetwork::Wrap(const std::vector<std::string>& argv) const {
  std::vector<std::string> out = {nsenter_, "--net=/run/netns/" + name_, "--"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

Status DrillNetwork::SetLink(bool up) {
  return Ip(ip_, {"-n", name_, "link", "set", kJobLink, up ? "up" : "down"});
}

}  // namespace fulcrum::validate
