// Test peers on 127.0.0.1 shared by the unit and end-to-end tests (library fulcrum_test_support).
//
// FakeHttpServer: an httplib::Server on 127.0.0.1 served on its own thread. Register handlers on
// server() first, then Start() (a free ephemeral port, or a given one); the destructor stops it.
//
//   fulcrum::testing::FakeHttpServer fake;
//   fake.server().Get("/x", [](const httplib::Request&, httplib::Response& res) { ... });
//   ASSERT_GT(fake.Start(), 0);
//   Client(fake.url() + "/x") ...
//
// Port helpers: FreeLoopbackPort() (a port free a moment ago, for a peer that binds it itself),
// PortHolder (a port kept occupied while it lives), ConnectLoopback() (a raw client socket).
// Not thread-safe: one test thread drives each object.
#pragma once

#include <httplib.h>

#include <string>
#include <thread>

namespace fulcrum::testing {

class FakeHttpServer {
 public:
  FakeHttpServer() = default;
  ~FakeHttpServer() { Stop(); }
  FakeHttpServer(const FakeHttpServer&) = delete;
  FakeHttpServer& operator=(const FakeHttpServer&) = delete;

  // The server to register handlers on, before Start().
  httplib::Server& server() { return server_; }
  // Binds 127.0.0.1:`port` (0 = a free ephemeral port), serves it on a thread and returns once
  // it accepts connections. Returns the port, or -1 when it could not bind.
  int Start(int port = 0);
  // Stops serving and joins the thread; idempotent. A stopped server is not started again.
  void Stop();
  int port() const { return port_; }
  // "http://127.0.0.1:<port>".
  std::string url() const;

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = -1;
};

// A loopback TCP port that was free when asked (bound and released at once).
int FreeLoopbackPort();

// A socket listening on 127.0.0.1 (an occupied port) until destruction.
class PortHolder {
 public:
  PortHolder();
  ~PortHolder();
  PortHolder(const PortHolder&) = delete;
  PortHolder& operator=(const PortHolder&) = delete;
  int port() const { return port_; }  // 0 when it could not listen

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A TCP socket connected to 127.0.0.1:`port`, close-on-exec (`timeout_seconds` bounds the
// connect, each receive and each send; 0 = none); -1 when the connection failed. The caller
// closes it.
int ConnectLoopback(int port, double timeout_seconds = 0);

}  // namespace fulcrum::testing
