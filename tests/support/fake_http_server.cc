#include "support/fake_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cmath>

namespace fulcrum::testing {
namespace {

sockaddr_in Loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

// Binds `fd` to 127.0.0.1:0 (optionally listening) and returns the port chosen, 0 on failure.
int BindEphemeral(int fd, bool listen_too) {
  sockaddr_in addr = Loopback(0);
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return 0;
  if (listen_too && listen(fd, 1) != 0) return 0;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  return ntohs(addr.sin_port);
}

}  // namespace

int FakeHttpServer::Start(int port) {
  if (port == 0) {
    port = server_.bind_to_any_port("127.0.0.1");
  } else if (!server_.bind_to_port("127.0.0.1", port)) {
    port = -1;
  }
  if (port <= 0) return -1;
  port_ = port;
  thread_ = std::thread([this] { server_.listen_after_bind(); });
  while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return port_;
}

void FakeHttpServer::Stop() {
  if (!thread_.joinable()) return;
  server_.stop();
  thread_.join();
}

std::string FakeHttpServer::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  int port = BindEphemeral(fd, /*listen_too=*/false);
  close(fd);
  return port;
}

PortHolder::PortHolder() {
  fd_ = socket(AF_INET, SOCK_STREAM, 0);
  if (fd_ >= 0) port_ = BindEphemeral(fd_, /*listen_too=*/true);
}

PortHolder::~PortHolder() {
  if (fd_ >= 0) close(fd_);
}

int ConnectLoopback(int port, double timeout_seconds) {
  // Close-on-exec: a test holding 2000 of these must not hand them to every child it starts.
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (timeout_seconds > 0) {
    double whole = std::floor(timeout_seconds);
    timeval timeout{static_cast<time_t>(whole),
                    static_cast<suseconds_t>((timeout_seconds - whole) * 1e6)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    // Also bounds connect(2) (socket(7), SO_SNDTIMEO), which a full listen backlog would
    // otherwise hold through SYN retries for a minute or more.
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  }
  sockaddr_in addr = Loopback(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace fulcrum::testing
