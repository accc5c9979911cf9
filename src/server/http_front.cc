#include "server/http_front.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "core/parse.h"

namespace fulcrum::server {

size_t RequestHeadEnd(std::string_view bytes) {
  size_t crlf = bytes.find("\r\n\r\n");
  size_t lf = bytes.find("\n\n");
  if (crlf != std::string_view::npos && (lf == std::string_view::npos || crlf + 1 < lf)) {
    return crlf + 4;
  }
  return lf == std::string_view::npos ? lf : lf + 2;
}

void ForEachHeaderField(std::string_view head,
                        const std::function<void(std::string_view, std::string_view)>& fn) {
  size_t start = head.find('\n');  // past the request line
  while (start != std::string_view::npos && start + 1 < head.size()) {
    ++start;
    size_t end = head.find('\n', start);
    std::string_view line = head.substr(start, end == std::string_view::npos ? end : end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t colon = line.find(':');
    if (colon != std::string_view::npos && colon > 0) {
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
        value.remove_prefix(1);
      }
      while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
        value.remove_suffix(1);
      fn(line.substr(0, colon), value);
    }
    start = end;
  }
}

bool HeaderNameIs(std::string_view name, std::string_view lower) {
  return name.size() == lower.size() &&
         std::equal(name.begin(), name.end(), lower.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == b;
         });
}

namespace {

constexpr int kListenBacklog = 512;
// File descriptors left to the rest of the agent (stores, NVML, webhooks, logs) when the
// connection cap is clamped below RLIMIT_NOFILE.
constexpr int kReservedFds = 64;
// An answer must be taken by its client within this; a client that stops reading is closed.
constexpr double kWriteDeadlineSeconds = 10;
// A connection answered before its input was all read is drained at least this long after the
// answer, so that its client reads the answer rather than a reset (RFC 9112 sec. 9.6).
constexpr double kMinDrainSeconds = 1;
constexpr size_t kReadChunk = 16 * 1024;
constexpr int kAcceptBatch = 64;
constexpr uint64_t kListenId = 0;
constexpr uint64_t kWakeId = 1;

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Worker threads started on demand up to `max_threads`; more tasks queue. Workers idle for
// kWorkerIdleSeconds exit. Shutdown() waits for every worker.
class WorkerPool {
 public:
  explicit WorkerPool(size_t max_threads) : max_threads_(max_threads) {}

  void Enqueue(std::function<void()> fn) {
    MutexLock lock(mutex_);
    queue_.push_back(std::move(fn));
    if (idle_ >= queue_.size() || threads_ >= max_threads_) {
      wake_.Signal();
      return;
    }
    ++threads_;
    std::thread([this] { Work(); }).detach();
  }

  void Shutdown() {
    MutexLock lock(mutex_);
    stopping_ = true;
    wake_.SignalAll();
    while (threads_ > 0) Wait(std::chrono::steady_clock::now() + std::chrono::milliseconds(50));
  }

 private:
  static constexpr int kWorkerIdleSeconds = 30;

  bool Wait(std::chrono::steady_clock::time_point deadline) REQUIRES(mutex_) {
    return wake_.WaitUntil(mutex_, deadline);
  }

  void Work() {
    MutexLock lock(mutex_);
    while (true) {
      if (!queue_.empty()) {
        std::function<void()> fn = std::move(queue_.front());
        queue_.pop_front();
        mutex_.Unlock();
        try {
          fn();
        } catch (...) {  // thread entry: nothing may end the process
        }
        mutex_.Lock();
        continue;
      }
      if (stopping_) break;
      ++idle_;
      bool woken =
          Wait(std::chrono::steady_clock::now() + std::chrono::seconds(kWorkerIdleSeconds));
      --idle_;
      if (!woken && queue_.empty()) break;
    }
    --threads_;
    wake_.SignalAll();  // Shutdown() waits for the count to reach 0
  }

  const size_t max_threads_;
  Mutex mutex_;
  CondVar wake_;
  std::deque<std::function<void()>> queue_ GUARDED_BY(mutex_);
  size_t threads_ GUARDED_BY(mutex_) = 0;
  size_t idle_ GUARDED_BY(mutex_) = 0;
  bool stopping_ GUARDED_BY(mutex_) = false;
};

enum class Phase {
  kReading,    // the request is arriving (evictable; under the request deadline)
  kAnswering,  // a worker builds the answer (no deadline, no events)
  kWriting,    // the answer is going out (under the write deadline)
  kDraining,   // answered, half-closed, input discarded until EOF or the deadline (evictable)
};

struct Connection {
  int fd = -1;
  std::string peer_ip;
  int peer_port = 0;
  Phase phase = Phase::kReading;
  double request_deadline = 0;  // accept + limits.request_deadline_seconds
  double deadline = 0;          // of the current phase (its entry in the timer set)
  // When its client last sent bytes (or was accepted, or answered before its input ended): at
  // the connection cap the idlest connection still sending gives way, not a busy one.
  double last_input = 0;
  std::string in;               // request bytes read so far
  size_t wanted = 0;            // head + body bytes once the head is known; 0 before
  bool input_complete = false;  // every byte the client sent was read: close, not drain
  std::string out;              // the answer
  size_t written = 0;
};

// The body length to read after a head: Content-Length when it is valid and within the cap and
// there is no Transfer-Encoding (RFC 9112 sec. 6.3); none when the handler is to refuse it
// unread (411/413/400).
std::optional<size_t> BodyLength(std::string_view head, size_t max_body) {
  std::optional<size_t> length = 0;
  ForEachHeaderField(head, [&](std::string_view name, std::string_view value) {
    if (HeaderNameIs(name, "transfer-encoding")) length.reset();
    if (HeaderNameIs(name, "content-length") && length) {
      auto n = ParseInt(std::string(value));
      if (n.ok() && *n >= 0 && static_cast<uint64_t>(*n) <= max_body) {
        length = static_cast<size_t>(*n);
      } else {
        length.reset();
      }
    }
  });
  return length;
}

}  // namespace

struct HttpFront::Impl {
  FrontLimits limits;
  Handler handler;
  size_t cap = 0;  // limits.max_connections, clamped below RLIMIT_NOFILE
  int listen_fd = -1;
  int epoll_fd = -1;
  int wake_fd = -1;  // eventfd: a worker finished, or Stop()
  int port = 0;
  std::thread thread;
  WorkerPool pool;

  Mutex done_mutex;
  std::vector<std::pair<uint64_t, std::string>> done GUARDED_BY(done_mutex);
  bool stopping GUARDED_BY(done_mutex) = false;

  // Owned by the loop thread.
  uint64_t next_id = 2;
  std::map<uint64_t, Connection> connections;    // by id: accept order
  std::set<std::pair<double, uint64_t>> timers;  // (deadline, id)
  // Per address, the connections whose client is still sending: kReading, and kDraining (answered
  // 431/413 while it sends on), as (last_input, id): idlest first. These give way at the cap.
  // By idleness rather than age: under 2000 trickling sockets the churn at the cap reaches any
  // connection within a second of its accept, and a client busy sending a large head (or the
  // rest of a refused one) must not be closed before its answer for tricklers that sent a byte
  // seconds ago (a loaded machine's client may need longer than that to deliver 64 KiB).
  std::map<std::string, std::set<std::pair<double, uint64_t>>> sending_by_peer;
  bool accept_paused = false;

  Impl(FrontLimits l, Handler h)
      : limits(l),
        handler(std::move(h)),
        pool(static_cast<size_t>(std::max(1, l.worker_threads))) {}

  void Watch(uint64_t id, int fd, uint32_t events, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = id;
    epoll_ctl(epoll_fd, op, fd, &ev);
  }

  void SetDeadline(uint64_t id, Connection& c, double deadline) {
    timers.erase({c.deadline, id});
    c.deadline = deadline;
    if (deadline > 0) timers.insert({deadline, id});
  }

  void LeaveSending(uint64_t id, Connection& c) {
    if (c.phase != Phase::kReading && c.phase != Phase::kDraining) return;
    auto it = sending_by_peer.find(c.peer_ip);
    if (it == sending_by_peer.end()) return;
    it->second.erase({c.last_input, id});
    if (it->second.empty()) sending_by_peer.erase(it);
  }

  // Input came (or the connection starts sending): it is now the least idle of its address.
  void NoteInput(uint64_t id, Connection& c) {
    LeaveSending(id, c);
    c.last_input = Now();
    sending_by_peer[c.peer_ip].insert({c.last_input, id});
  }

  void Close(uint64_t id) {
    auto it = connections.find(id);
    if (it == connections.end()) return;
    Connection& c = it->second;
    LeaveSending(id, c);
    SetDeadline(id, c, 0);
    close(c.fd);  // also leaves the epoll set
    connections.erase(it);
    if (accept_paused) {
      accept_paused = false;
      Watch(kListenId, listen_fd, EPOLLIN, EPOLL_CTL_MOD);
    }
  }

  // Closes the idlest connection of `peer` still sending its request (or the rest of a refused
  // one); when that address has none, the idlest such connection of the address holding the
  // most. False when there is none.
  bool EvictFor(const std::string& peer) {
    auto it = sending_by_peer.find(peer);
    if (it == sending_by_peer.end()) {
      it = std::max_element(
          sending_by_peer.begin(), sending_by_peer.end(),
          [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
    }
    if (it == sending_by_peer.end()) return false;
    const auto [last_input, idlest] = *it->second.begin();
    spdlog::debug(
        "HTTP: {} connections open; closing the idlest still sending its request ({}, no input "
        "for {:.3f} s)",
        connections.size(), it->first, Now() - last_input);
    Close(idlest);
    return true;
  }

  void Accept();
  void Adopt(int fd, const sockaddr_storage& addr);
  void Read(uint64_t id, Connection& c);
  void AfterRead(uint64_t id, Connection& c, bool eof);
  void Dispatch(uint64_t id, Connection& c);
  void Write(uint64_t id, Connection& c);
  void Drain(uint64_t id, Connection& c);
  bool TakeAnswers();  // false on Stop()
  void Expire();
  void Loop();
};

void HttpFront::Impl::Accept() {
  // At most kAcceptBatch per wake-up (the listen socket is level-triggered: the rest come at the
  // next one): a client reconnecting as fast as it is accepted must not keep the loop from
  // reading the connections it has (a header flood evicted unread, health probes waiting).
  for (int accepted = 0; accepted < kAcceptBatch; ++accepted) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    int fd =
        accept4(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      Adopt(fd, addr);
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
      // Out of descriptors: make room rather than leave the new client waiting; with no
      // connection to close, stop accepting until one closes.
      if (EvictFor("")) continue;
      accept_paused = true;
      Watch(kListenId, listen_fd, 0, EPOLL_CTL_MOD);
    }
    return;  // EAGAIN, or an error that the next readiness retries
  }
}

void HttpFront::Impl::Adopt(int fd, const sockaddr_storage& addr) {
  char ip[INET6_ADDRSTRLEN] = "";
  int peer_port = 0;
  if (addr.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(addr);
    inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
    peer_port = ntohs(a.sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(addr);
    inet_ntop(AF_INET6, &a.sin6_addr, ip, sizeof ip);
    peer_port = ntohs(a.sin6_port);
  }
  // Never refuse a new connection (every local client shares 127.0.0.1): make room instead.
  if (connections.size() >= cap) EvictFor(ip);
  uint64_t id = next_id++;
  Connection& c = connections[id];
  c.fd = fd;
  c.peer_ip = ip;
  c.peer_port = peer_port;
  c.request_deadline = Now() + limits.request_deadline_seconds;
  SetDeadline(id, c, c.request_deadline);
  NoteInput(id, c);
  Watch(id, fd, EPOLLIN, EPOLL_CTL_ADD);
}

void HttpFront::Impl::Read(uint64_t id, Connection& c) {
  char buf[kReadChunk];
  bool noted = false;
  while (true) {
    size_t limit = c.wanted > 0 ? c.wanted : kMaxRequestHeadBytes + 1;
    size_t room = std::min(kReadChunk, limit - std::min(limit, c.in.size()));
    if (room == 0) return AfterRead(id, c, false);
    ssize_t n = recv(c.fd, buf, room, 0);
    if (n > 0) {
      if (!noted) NoteInput(id, c);
      noted = true;
      c.in.append(buf, static_cast<size_t>(n));
      size_t before = c.in.size() - static_cast<size_t>(n);
      if (c.wanted == 0 && c.in.size() > before) {
        // Look for the head's end only where it can be (the new bytes and 3 before them).
        size_t from = before > 3 ? before - 3 : 0;
        if (RequestHeadEnd(std::string_view(c.in).substr(from)) != std::string_view::npos ||
            c.in.size() > kMaxRequestHeadBytes) {
          return AfterRead(id, c, false);
        }
      } else if (c.wanted > 0 && c.in.size() >= c.wanted) {
        return AfterRead(id, c, false);
      }
      continue;
    }
    if (n == 0) return AfterRead(id, c, true);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    return Close(id);  // reset by the peer
  }
}

// Decides after new bytes (or EOF) whether the request is complete, refused, or still arriving.
void HttpFront::Impl::AfterRead(uint64_t id, Connection& c, bool eof) {
  if (c.wanted == 0) {
    size_t end = RequestHeadEnd(c.in);
    if (end > kMaxRequestHeadBytes) {  // also npos: the head has not ended yet
      if (eof && c.in.empty()) return Close(id);
      // Over the cap (431) or cut short by the client (400): answered from what arrived.
      if (eof || c.in.size() > kMaxRequestHeadBytes) {
        c.input_complete = eof;
        return Dispatch(id, c);
      }
      return;
    }
    std::optional<size_t> body =
        BodyLength(std::string_view(c.in).substr(0, end), limits.max_body_bytes);
    if (!body) {  // refused unread; what the client still sends is drained
      c.in.resize(end);
      c.input_complete = eof;
      return Dispatch(id, c);
    }
    c.wanted = end + *body;
  }
  if (c.in.size() >= c.wanted) {
    c.input_complete = eof || c.in.size() == c.wanted;
    c.in.resize(c.wanted);  // one request per connection: later bytes are not served
    return Dispatch(id, c);
  }
  if (eof) {  // the body was cut short: the handler answers what came
    c.input_complete = true;
    Dispatch(id, c);
  }
}

void HttpFront::Impl::Dispatch(uint64_t id, Connection& c) {
  LeaveSending(id, c);
  c.phase = Phase::kAnswering;
  SetDeadline(id, c, 0);
  Watch(id, c.fd, 0, EPOLL_CTL_MOD);
  pool.Enqueue([this, id, request = std::move(c.in), ip = c.peer_ip, port = c.peer_port] {
    std::string answer;  // empty (the connection is closed) if the handler breaks its contract
    try {
      answer = handler(request, ip, port);
    } catch (const std::exception& e) {
      spdlog::error("HTTP handler failed: {}", e.what());
    } catch (...) {
      spdlog::error("HTTP handler failed: unknown exception");
    }
    {
      MutexLock lock(done_mutex);
      done.emplace_back(id, std::move(answer));
    }
    uint64_t one = 1;
    (void)!write(wake_fd, &one, sizeof one);
  });
  c.in = std::string();
}

void HttpFront::Impl::Write(uint64_t id, Connection& c) {
  while (c.written < c.out.size()) {
    ssize_t n = send(c.fd, c.out.data() + c.written, c.out.size() - c.written, MSG_NOSIGNAL);
    if (n > 0) {
      c.written += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      Watch(id, c.fd, EPOLLOUT, EPOLL_CTL_MOD);
      return;
    }
    return Close(id);
  }
  if (c.input_complete) return Close(id);
  // Input is still arriving (a refused head or body): half-close so the client sees the whole
  // answer, and discard what it sends until it closes or the deadline; closing at once with
  // unread input would reset the connection and lose the answer (RFC 9112 sec. 9.6).
  shutdown(c.fd, SHUT_WR);
  c.phase = Phase::kDraining;
  NoteInput(id, c);
  c.out = std::string();
  SetDeadline(id, c, std::max(c.request_deadline, Now() + kMinDrainSeconds));
  Watch(id, c.fd, EPOLLIN, EPOLL_CTL_MOD);
}

void HttpFront::Impl::Drain(uint64_t id, Connection& c) {
  char buf[kReadChunk];
  for (int i = 0; i < 16; ++i) {  // bounded per wake-up: others get their turn
    ssize_t n = recv(c.fd, buf, sizeof buf, 0);
    if (n > 0 && i == 0) NoteInput(id, c);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    return Close(id);  // EOF or reset
  }
}

bool HttpFront::Impl::TakeAnswers() {
  uint64_t count = 0;
  (void)!read(wake_fd, &count, sizeof count);
  std::vector<std::pair<uint64_t, std::string>> answers;
  {
    MutexLock lock(done_mutex);
    if (stopping) return false;
    answers.swap(done);
  }
  for (auto& [id, answer] : answers) {
    auto it = connections.find(id);
    if (it == connections.end()) continue;
    Connection& c = it->second;
    c.out = std::move(answer);
    c.phase = Phase::kWriting;
    SetDeadline(id, c, Now() + kWriteDeadlineSeconds);
    Write(id, c);
  }
  return true;
}

void HttpFront::Impl::Expire() {
  double now = Now();
  while (!timers.empty() && timers.begin()->first <= now) Close(timers.begin()->second);
}

void HttpFront::Impl::Loop() {
  std::vector<epoll_event> events(256);
  while (true) {
    int timeout_ms = -1;
    if (!timers.empty()) {
      double left = timers.begin()->first - Now();
      timeout_ms = left <= 0 ? 0 : static_cast<int>(std::min(left, 3600.0) * 1000) + 1;
    }
    int n = epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()), timeout_ms);
    if (n < 0 && errno != EINTR) {
      spdlog::error("HTTP server stopped: epoll_wait: {}", std::strerror(errno));
      return;
    }
    for (int i = 0; i < n; ++i) {
      uint64_t id = events[static_cast<size_t>(i)].data.u64;
      if (id == kListenId) {
        Accept();
        continue;
      }
      if (id == kWakeId) {
        if (!TakeAnswers()) return;
        continue;
      }
      auto it = connections.find(id);
      if (it == connections.end()) continue;  // closed earlier in this batch
      Connection& c = it->second;
      if (c.phase == Phase::kReading) {
        Read(id, c);
      } else if (c.phase == Phase::kWriting) {
        Write(id, c);
      } else if (c.phase == Phase::kDraining) {
        Drain(id, c);
      } else if (events[static_cast<size_t>(i)].events & (EPOLLERR | EPOLLHUP)) {
        Close(id);  // reset while its answer is built (reported even with no events watched)
      }
    }
    Expire();
  }
}

HttpFront::HttpFront(FrontLimits limits, Handler handler)
    : impl_(std::make_unique<Impl>(limits, std::move(handler))) {}

HttpFront::~HttpFront() { Stop(); }

Status HttpFront::Bind(const std::string& host, int port) {
  std::string where = host + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) {
    return Status::Unavailable("cannot listen on " + where + ": the host name does not resolve");
  }
  int fd = -1;
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    // Exclusive ownership of the port: SO_REUSEADDR allows a restart over TIME_WAIT sockets;
    // no SO_REUSEPORT, which would let a second agent take half of the requests.
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, kListenBacklog) != 0) {
      error = std::strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) {
    return Status::Unavailable("cannot listen on " + where + " (" + error +
                               "; address in use by another process, or not local?)");
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  impl_->port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(bound).sin6_port
                                                  : reinterpret_cast<sockaddr_in&>(bound).sin_port);
  impl_->listen_fd = fd;
  return Status::Ok();
}

int HttpFront::port() const { return impl_->port; }

void HttpFront::Start() {
  Impl& m = *impl_;
  rlimit files{};
  int cap = std::max(1, m.limits.max_connections);
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY) {
    cap = static_cast<int>(std::min<rlim_t>(
        static_cast<rlim_t>(cap),
        files.rlim_cur > 2 * kReservedFds ? files.rlim_cur - kReservedFds : files.rlim_cur / 2));
  }
  m.cap = static_cast<size_t>(std::max(1, cap));
  m.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  m.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  m.Watch(kListenId, m.listen_fd, EPOLLIN, EPOLL_CTL_ADD);
  m.Watch(kWakeId, m.wake_fd, EPOLLIN, EPOLL_CTL_ADD);
  m.thread = std::thread([&m] {
    try {
      m.Loop();
    } catch (const std::exception& e) {  // thread entry: log, never end the agent
      spdlog::error("HTTP server stopped: {}", e.what());
    }
  });
}

void HttpFront::Stop() {
  Impl& m = *impl_;
  if (m.thread.joinable()) {
    {
      MutexLock lock(m.done_mutex);
      m.stopping = true;
    }
    uint64_t one = 1;
    (void)!write(m.wake_fd, &one, sizeof one);
    m.thread.join();
    m.pool.Shutdown();
  }
  for (auto& [id, c] : m.connections) close(c.fd);
  m.connections.clear();
  m.timers.clear();
  m.sending_by_peer.clear();
  for (int* fd : {&m.listen_fd, &m.epoll_fd, &m.wake_fd}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

}  // namespace fulcrum::server
