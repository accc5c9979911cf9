// The agent HTTP server's front end: owns the listening socket and accept(2), reads every
// connection's request (head, then a body of known length) on one epoll thread under a total
// head cap and a whole-request deadline, hands each complete request to a small worker pool that
// turns its bytes into the answer's bytes (server/http_server.cc: httplib's parsing and routes),
// and writes the answer back on the same thread. A connection waiting for its request costs a
// buffer, not a thread. One request per connection. Start() serves; Stop() joins.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace fulcrum::server {

// The most bytes of a request head (request line, header lines, the empty line). RFC 9110 sec.
// 5.4 leaves the limit to the server; 64 KiB is issue 29's (16 floods of 20 MB took 1.55 GB).
inline constexpr size_t kMaxRequestHeadBytes = 64 * 1024;

struct FrontLimits {
  double request_deadline_seconds = 10;  // head and body must arrive within this of accept
  int max_connections = 1024;            // open at once (clamped below RLIMIT_NOFILE)
  size_t max_body_bytes = 64 * 1024;     // a longer Content-Length is answered unread
  int worker_threads = 16;               // requests answered at once
};

// Where a head ends: the index just past its empty line ("\r\n\r\n" or "\n\n", RFC 9112 sec. 2.2
// lets a recipient take a bare LF as a line end), or npos while it has not arrived.
size_t RequestHeadEnd(std::string_view bytes);

// Calls fn(name, value) for each header field line of `head` (after the request line), the value
// without surrounding spaces and tabs (RFC 9112 sec. 5: field-line = name ":" OWS value OWS).
void ForEachHeaderField(std::string_view head,
                        const std::function<void(std::string_view, std::string_view)>& fn);
// Field names are case-insensitive (RFC 9110 sec. 5.1); `lower` is given in lower case.
bool HeaderNameIs(std::string_view name, std::string_view lower);

class HttpFront {
 public:
  // (request bytes, peer address) -> the whole answer (status line, headers, body). Runs on a
  // worker thread; must not throw. The bytes hold a whole request, or a head that never ended
  // (more than kMaxRequestHeadBytes, or the client closed before its empty line).
  using Handler = std::function<std::string(std::string_view request, const std::string& peer_ip,
                                            int peer_port)>;

  HttpFront(FrontLimits limits, Handler handler);
  ~HttpFront();
  HttpFront(const HttpFront&) = delete;
  HttpFront& operator=(const HttpFront&) = delete;

  // Binds host:port (port 0: any free port) exclusively (SO_REUSEADDR, no SO_REUSEPORT) and
  // listens; kUnavailable when the address is taken or not local.
  Status Bind(const std::string& host, int port);
  int port() const;
  void Start();  // serves on a background thread
  void Stop();   // closes every connection, waits for the workers

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace fulcrum::server
