#include "telemetry/nccl_ras.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

namespace fulcrum::telemetry {
namespace {

// ---------------------------------------------------------------------------------------------
// Text report. The phrases below are the format strings of NVIDIA/nccl src/ras/client_support.cc
// (rasClientRunInit, rasClientRunComms, rasClientBreakDownErrors) at v2.24.3-1 and v2.29.2-1;
// v2.26.2-1 replaced "The missing ranks: 1,2" with one "Rank N -- GPU ..." line per missing rank
// and "different collective operation counts" with "different <Function> operation counts".

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.substr(0, prefix.size()) == prefix;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Reads a (possibly negative) decimal integer at the front of `s`, consuming it.
template <class T>
std::optional<T> TakeNumber(std::string_view& s) {
  T value{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end == s.data()) return std::nullopt;
  s.remove_prefix(static_cast<size_t>(end - s.data()));
  return value;
}

bool TakePrefix(std::string_view& s, std::string_view prefix) {
  if (!StartsWith(s, prefix)) return false;
  s.remove_prefix(prefix.size());
  return true;
}

// "0x00ab" / "00ab" -> "0xab" (the text report prints %016lx, the JSON 0x%lx).
std::string NormalizeHash(std::string_view hex) {
  if (StartsWith(hex, "0x") || StartsWith(hex, "0X")) hex.remove_prefix(2);
  while (hex.size() > 1 && hex.front() == '0') hex.remove_prefix(1);
  std::string out = "0x";
  for (char c : hex) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// "GPU 3 managed by process 4242 on node 10.0.0.2" (rasGpuToString prints "3" or
// "3 (NVML 5)") -> fills cuda_dev, nvml_dev, pid, host.
bool ParseGpuProcessNode(std::string_view s, NcclRasRank& r) {
  if (!TakePrefix(s, "GPU ")) return false;
  auto cuda = TakeNumber<int>(s);
  if (!cuda) return false;
  r.cuda_dev = *cuda;
  r.nvml_dev = *cuda;
  if (TakePrefix(s, " (NVML ")) {
    auto nvml = TakeNumber<int>(s);
    if (!nvml || !TakePrefix(s, ")")) return false;
    r.nvml_dev = *nvml;
  }
  if (!TakePrefix(s, " managed by process ")) return false;
  auto pid = TakeNumber<int>(s);
  if (!pid || !TakePrefix(s, " on node ")) return false;
  r.pid = *pid;
  r.host = std::string(Trim(s));
  return !r.host.empty();
}

// "Process 4242 on node 10.0.0.2 managing GPUs 0,1 (NVML 2,3)": the first GPU is kept.
bool ParseProcessLine(std::string_view s, NcclRasRank& r) {
  if (!TakePrefix(s, "Process ")) return false;
  auto pid = TakeNumber<int>(s);
  if (!pid || !TakePrefix(s, " on node ")) return false;
  size_t managing = s.find(" managing GPU");
  if (managing == std::string_view::npos) return false;
  r.pid = *pid;
  r.host = std::string(s.substr(0, managing));
  s.remove_prefix(managing + std::strlen(" managing GPU"));
  TakePrefix(s, "s");
  TakePrefix(s, " ");
  if (auto gpu = TakeNumber<int>(s)) r.cuda_dev = r.nvml_dev = *gpu;
  size_t nvml = s.find("(NVML ");
  if (nvml != std::string_view::npos) {
    std::string_view rest = s.substr(nvml + 6);
    if (auto n = TakeNumber<int>(rest)) r.nvml_dev = *n;
  }
  return !r.host.empty();
}

class TextParser {
 public:
  void Line(std::string_view raw) {
    const std::string_view line = Trim(raw);
    if (line.empty()) return;
    if (TakeVersion(line) || TakeSection(line) || TakeCommHeader(line)) return;
    if (StartsWith(line, "Process ")) return ProcessLine(line);
    if (StartsWith(line, "Rank ")) return RankLine(line);
    CommDetail(line);
  }
  NcclRasReport Finish() { return std::move(report_); }
  bool saw_version() const { return saw_version_; }

 private:
  enum class Section { kNone, kErrors, kIncomplete, kDead, kTimeout, kWarnings };
  enum class Context { kNone, kMissing, kOpCounts, kOther };

  bool TakeVersion(std::string_view line) {
    if (!TakePrefix(line, "NCCL version ")) return false;
    report_.nccl_version = std::string(line.substr(0, line.find(' ')));
    saw_version_ = true;
    return true;
  }

  bool TakeSection(std::string_view line) {
    static const std::map<std::string_view, Section> kSections = {
        {"Errors", Section::kErrors},
        {"Warnings", Section::kWarnings},
        {"INCOMPLETE", Section::kIncomplete},
        {"DEAD", Section::kDead},
        {"TIMEOUT", Section::kTimeout}};
    auto it = kSections.find(line);
    if (it == kSections.end()) return false;
    section_ = it->second;
    comm_ = nullptr;
    context_ = Context::kNone;
    return true;
  }

  // "#0-1 (00000000deadbeef) MISMATCH"
  bool TakeCommHeader(std::string_view line) {
    if (!TakePrefix(line, "#")) return false;
    size_t open = line.find(" ("), close = line.find(") ");
    if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
      return false;
    }
    const std::string hash = NormalizeHash(line.substr(open + 2, close - open - 2));
    comm_ = &Comm(hash);
    std::string_view kind = Trim(line.substr(close + 2));
    context_ = kind == "INCOMPLETE" ? Context::kMissing : Context::kOther;
    function_.clear();
    group_op_.reset();
    return true;
  }

  NcclRasComm& Comm(const std::string& hash) {
    for (NcclRasComm& c : report_.comms) {
      if (c.hash == hash) return c;
    }
    report_.comms.push_back({hash, 0, {}, {}});
    return report_.comms.back();
  }

  NcclRasRank& RankIn(NcclRasComm& comm, int rank) {
    for (NcclRasRank& r : comm.ranks) {
      if (r.rank == rank) return r;
    }
    comm.ranks.push_back({});
    comm.ranks.back().rank = rank;
    return comm.ranks.back();
  }

  void ProcessLine(std::string_view line) {
    NcclRasRank r;
    if (!ParseProcessLine(line, r)) return;
    r.missing = true;
    r.dead = section_ == Section::kDead;
    report_.missing_processes.push_back(std::move(r));
  }

  void SetOpCount(NcclRasRank& r, uint64_t count) {
    for (auto& [fn, n] : r.op_counts) {
      if (fn == function_) {
        n = count;
        return;
      }
    }
    r.op_counts.emplace_back(function_, count);
  }

  // "Rank 3 has launched up to operation 41 -- GPU 3 managed by process 4242 on node 10.0.0.2"
  // and its variants (no count: the group's count above applies; "[process information not
  // found]": rank only).
  void RankLine(std::string_view line) {
    if (!comm_) return;
    std::string_view s = line.substr(5);
    auto rank = TakeNumber<int>(s);
    if (!rank || *rank < 0) return;
    std::optional<uint64_t> op;
    if (TakePrefix(s, " has launched up to operation ")) {
      op = TakeNumber<uint64_t>(s);
    } else if (TakePrefix(s, " has not launched any operations")) {
      op = 0;
    } else if (context_ == Context::kOpCounts) {
      op = group_op_;
    }
    NcclRasRank info;
    size_t dash = s.find("-- ");
    bool located = dash != std::string_view::npos && ParseGpuProcessNode(s.substr(dash + 3), info);
    NcclRasRank& r = RankIn(*comm_, *rank);
    if (located) {
      r.host = info.host;
      r.pid = info.pid;
      r.cuda_dev = info.cuda_dev;
      r.nvml_dev = info.nvml_dev;
    }
    if (context_ == Context::kMissing) r.missing = true;
    if (context_ == Context::kOpCounts && op) {
      SetOpCount(r, *op);
      NoteGroup(*op);
    }
  }

  void CommDetail(std::string_view line) {
    if (section_ == Section::kTimeout && TakePrefix(line, "Encountered ")) {
      if (auto n = TakeNumber<int>(line)) report_.timeouts = *n;
      return;
    }
    if (!comm_) return;
    std::string_view s = line;
    if (TakePrefix(s, "Communicator ranks have different ")) {
      size_t end = s.find(" operation counts");
      context_ = end == std::string_view::npos ? Context::kOther : Context::kOpCounts;
      function_ = end == std::string_view::npos ? "" : std::string(s.substr(0, end));
      group_op_.reset();
      return;
    }
    if (TakePrefix(s, "The missing rank")) {  // v2.24/v2.25: "The missing ranks: 1,4"
      size_t colon = s.find(": ");
      if (colon == std::string_view::npos) return;
      s.remove_prefix(colon + 2);
      while (auto rank = TakeNumber<int>(s)) {
        if (*rank >= 0) RankIn(*comm_, *rank).missing = true;
        if (!TakePrefix(s, ",")) break;
      }
      return;
    }
    if (context_ != Context::kOpCounts) return;
    // "7 ranks have launched up to operation 42" / "7 ranks have not launched any operations"
    auto count = TakeNumber<int>(s);
    if (!count) return;
    if (TakePrefix(s, " ranks have launched up to operation ")) {
      group_op_ = TakeNumber<uint64_t>(s);
    } else if (TakePrefix(s, " ranks have not launched any operations")) {
      group_op_ = 0;
    } else {
      return;
    }
    if (group_op_) NoteGroup(*group_op_);
  }

  // A count that some ranks reached (a group line or a rank line).
  void NoteGroup(uint64_t op) {
    uint64_t& high = comm_->highest_op[function_];
    high = std::max(high, op);
  }

  NcclRasReport report_{"text", "", {}, {}, 0};
  bool saw_version_ = false;
  Section section_ = Section::kNone;
  Context context_ = Context::kNone;
  NcclRasComm* comm_ = nullptr;  // into report_.comms; reset when it may move
  std::string function_;
  std::optional<uint64_t> group_op_;
};

// ---------------------------------------------------------------------------------------------
// JSON report: field names of client_support.cc jsonWriteHeader, jsonStartCommunicator,
// jsonWriteRankData, jsonWriteMissingRank, jsonWriteFooter (v2.29.2-1).

int IntField(const nlohmann::json& o, const char* key, int fallback) {
  if (!o.is_object()) return fallback;
  auto it = o.find(key);
  if (it == o.end() || !it->is_number_integer()) return fallback;
  const auto v = it->get<int64_t>();
  if (v < INT32_MIN || v > INT32_MAX) return fallback;
  return static_cast<int>(v);
}

std::string TextField(const nlohmann::json& o, const char* key) {
  if (!o.is_object()) return "";
  auto it = o.find(key);
  if (it == o.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

bool BoolField(const nlohmann::json& o, const char* key) {
  if (!o.is_object()) return false;
  auto it = o.find(key);
  return it != o.end() && it->is_boolean() && it->get<bool>();
}

NcclRasRank RankFromJson(const nlohmann::json& r) {
  NcclRasRank out;
  out.rank = IntField(r, "rank", -1);
  out.host = TextField(r, "host");
  if (out.host == "unknown") out.host.clear();  // rasDumpCommsToJSON's placeholder
  out.pid = IntField(r, "pid", -1);
  out.cuda_dev = IntField(r, "cuda_dev", -1);
  out.nvml_dev = IntField(r, "nvml_dev", -1);
  if (r.is_object() && r.contains("collective_counts") && r["collective_counts"].is_object()) {
    for (const auto& [fn, n] : r["collective_counts"].items()) {
      if (n.is_number_unsigned()) out.op_counts.emplace_back(fn, n.get<uint64_t>());
    }
  }
  return out;
}

// v2.28.7-1's jsonWriteMissingRank printed `"nvml_dev": %d\n` without a comma before
// "status" (fixed in v2.29.2-1); the one repair made before a second parse.
std::string RepairMissingComma(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 64);
  const std::string_view key = "\"nvml_dev\": ";
  size_t at = 0;
  while (true) {
    size_t k = text.find(key, at);
    if (k == std::string_view::npos) break;
    size_t p = k + key.size();
    if (p < text.size() && text[p] == '-') ++p;
    while (p < text.size() && std::isdigit(static_cast<unsigned char>(text[p]))) ++p;
    size_t q = p;
    while (q < text.size() && std::isspace(static_cast<unsigned char>(text[q]))) ++q;
    out.append(text.substr(at, p - at));
    if (text.substr(q, 8) == "\"status\"") out += ',';
    at = p;
  }
  out.append(text.substr(at));
  return out;
}

}  // namespace

Result<NcclRasReport> ParseNcclRasJson(std::string_view text) {
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    doc = nlohmann::json::parse(RepairMissingComma(text), nullptr, false);
  }
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::InvalidInput("NCCL RAS report: expected a JSON object, found " +
                                std::to_string(text.size()) + " bytes that do not parse");
  }
  if (!doc.contains("communicators") || !doc["communicators"].is_array()) {
    return Status::InvalidInput("NCCL RAS report: expected a \"communicators\" array");
  }
  NcclRasReport report{"json", TextField(doc, "nccl_version"), {}, {}, 0};
  if (doc.contains("ras")) report.timeouts = IntField(doc["ras"], "timeouts_count", 0);
  for (const auto& c : doc["communicators"]) {
    if (!c.is_object()) continue;
    NcclRasComm comm{NormalizeHash(TextField(c, "hash")), IntField(c, "size", 0), {}, {}};
    if (c.contains("ranks") && c["ranks"].is_array()) {
      for (const auto& r : c["ranks"]) comm.ranks.push_back(RankFromJson(r));
    }
    if (c.contains("missing_ranks") && c["missing_ranks"].is_array()) {
      for (const auto& m : c["missing_ranks"]) {
        const nlohmann::json status = m.is_object() ? m.value("status", nlohmann::json()) : nullptr;
        const bool dead = BoolField(status, "considered_dead");
        // A process that answered for other communicators but not this one is not holding
        // anything up (the text report filters these out too).
        if (!dead && !BoolField(status, "unresponsive")) continue;
        NcclRasRank r = RankFromJson(m);
        r.missing = true;
        r.dead = dead;
        comm.ranks.push_back(std::move(r));
      }
    }
    for (const NcclRasRank& r : comm.ranks) {
      for (const auto& [fn, n] : r.op_counts) {
        comm.highest_op[fn] = std::max(comm.highest_op[fn], n);
      }
    }
    report.comms.push_back(std::move(comm));
  }
  return report;
}

Result<NcclRasReport> ParseNcclRasText(std::string_view text) {
  TextParser parser;
  size_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) nl = text.size();
    parser.Line(text.substr(at, nl - at));
    at = nl + 1;
  }
  if (!parser.saw_version()) {
    return Status::InvalidInput(
        "NCCL RAS report: expected a first line \"NCCL version ...\", found none");
  }
  return parser.Finish();
}

std::vector<NcclLaggingRank> FindLaggingRanks(const NcclRasReport& report) {
  std::vector<NcclLaggingRank> out;
  for (const NcclRasComm& comm : report.comms) {
    const size_t first = out.size();
    std::map<std::string, uint64_t> highest = comm.highest_op;
    for (const NcclRasRank& r : comm.ranks) {
      for (const auto& [fn, n] : r.op_counts) highest[fn] = std::max(highest[fn], n);
    }
    for (const NcclRasRank& r : comm.ranks) {
      if (r.missing) {
        out.push_back({comm.hash, r, r.dead ? "process dead" : "not responding", {}});
        continue;
      }
      for (const auto& [fn, n] : r.op_counts) {
        if (n < highest[fn]) {
          const std::string name = fn.empty() ? "collective" : fn;
          out.push_back({comm.hash,
                         r,
                         name + " op " + std::to_string(n) + " of " + std::to_string(highest[fn]),
                         {}});
          break;
        }
      }
    }
    std::vector<int> pids;
    for (const NcclRasRank& r : comm.ranks) {
      if (r.pid >= 0 && std::find(pids.begin(), pids.end(), r.pid) == pids.end())
        pids.push_back(r.pid);
    }
    for (size_t i = first; i < out.size(); ++i) out[i].comm_pids = pids;
  }
  // Processes listed as missing or dead with no rank named for them (v2.24/v2.25 print
  // "The missing ranks: 2,5" without hosts): named by process instead.
  for (const NcclRasRank& p : report.missing_processes) {
    const bool named = std::any_of(out.begin(), out.end(), [&](const NcclLaggingRank& l) {
      return l.rank.pid == p.pid && l.rank.host == p.host;
    });
    if (!named) {
      out.push_back({"", p, p.dead ? "process dead" : "not responding", {}});
      if (p.pid >= 0) out.back().comm_pids = {p.pid};
    }
  }
  std::sort(out.begin(), out.end(), [](const NcclLaggingRank& a, const NcclLaggingRank& b) {
    return std::tie(a.comm_hash, a.rank.rank) < std::tie(b.comm_hash, b.rank.rank);
  });
  return out;
}

std::string DescribeLaggingRank(const NcclLaggingRank& l) {
  const NcclRasRank& r = l.rank;
  std::string where;
  if (r.pid >= 0) where = "pid " + std::to_string(r.pid);
  if (!r.host.empty()) where += (where.empty() ? "on " : " on ") + r.host;
  if (r.cuda_dev >= 0) {
    where += (where.empty() ? "GPU " : ", GPU ") + std::to_string(r.cuda_dev);
    if (r.nvml_dev >= 0 && r.nvml_dev != r.cuda_dev) {
      where += " (NVML " + std::to_string(r.nvml_dev) + ")";
    }
  }
  std::string out = r.rank >= 0 ? "rank " + std::to_string(r.rank) : "a process";
  if (!where.empty()) out += " (" + where + ")";
  out += ": " + l.reason;
  if (!l.comm_hash.empty()) out += " in comm " + l.comm_hash;
  return out;
}

std::string DescribeLaggingRanks(std::span<const NcclLaggingRank> stalled, size_t max_listed) {
  std::string list;
  for (size_t i = 0; i < stalled.size() && i < max_listed; ++i) {
    if (!list.empty()) list += "; ";
    list += DescribeLaggingRank(stalled[i]);
  }
  if (stalled.size() > max_listed) {
    list += "; and " + std::to_string(stalled.size() - max_listed) + " more";
  }
  return list;
}

// ---------------------------------------------------------------------------------------------
// The socket: client.cc (v2.24.3-1 .. v2.30.3-1) sends "CLIENT PROTOCOL 2\n" and expects
// "SERVER PROTOCOL <n>\n" (NCCL_RAS_CLIENT_PROTOCOL 2 in ras_internal.h); then "STATUS\n" or
// "VERBOSE STATUS\n", after which the server sends the report and closes the connection
// (rasClientEventLoop: RAS_CLIENT_FINISHED -> rasClientTerminate). "SET FORMAT json\n" answers
// "OK\n" from v2.28.7-1; earlier servers answer "ERROR: Unknown command ...\n".

namespace {

using SteadyClock = std::chrono::steady_clock;

Result<sockaddr_in> ParseAddress(const std::string& address) {
  size_t colon = address.rfind(':');
  std::string host = colon == std::string::npos ? address : address.substr(0, colon);
  std::string_view port_text =
      colon == std::string::npos ? std::string_view() : std::string_view(address).substr(colon + 1);
  auto port = TakeNumber<int>(port_text);
  if (host == "localhost") host = "127.0.0.1";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (!port || !port_text.empty() || *port < 1 || *port > 65535 ||
      ::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return Status::InvalidInput(
        "NCCL RAS address: expected IPV4:PORT (e.g. 127.0.0.1:28028), found \"" + address + "\"");
  }
  addr.sin_port = htons(static_cast<uint16_t>(*port));
  return addr;
}

class Connection {
 public:
  ~Connection() {
    if (fd_ >= 0) ::close(fd_);
  }

  Status Connect(const NcclRasQueryOptions& o) {
    FULCRUM_ASSIGN_OR_RETURN(sockaddr_in addr, ParseAddress(o.address));
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return Status::IoError(std::string("socket: ") + std::strerror(errno));
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
      return Status::Ok();
    }
    if (errno != EINPROGRESS) return Refused(o.address, errno);
    if (!Wait(POLLOUT, Deadline(o.connect_timeout_seconds))) {
      return Status::Unavailable("NCCL RAS at " + o.address + ": connect timed out");
    }
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    return err == 0 ? Status::Ok() : Refused(o.address, err);
  }

  Status Send(std::string_view text, SteadyClock::time_point deadline) {
    while (!text.empty()) {
      ssize_t n = ::send(fd_, text.data(), text.size(), MSG_NOSIGNAL);
      if (n > 0) {
        text.remove_prefix(static_cast<size_t>(n));
      } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        if (!Wait(POLLOUT, deadline)) return Status::Unavailable("NCCL RAS: send timed out");
      } else {
        return Status::Unavailable(std::string("NCCL RAS: send: ") + std::strerror(errno));
      }
    }
    return Status::Ok();
  }

  // One '\n'-terminated line (client.cc's rasRead reads the same way), at most 1 KiB.
  Result<std::string> ReadLine(SteadyClock::time_point deadline) {
    while (buffer_.find('\n') == std::string::npos) {
      if (buffer_.size() > 1024) return Status::InvalidInput("NCCL RAS: answer line over 1 KiB");
      FULCRUM_ASSIGN_OR_RETURN(bool more, ReadSome(deadline, 1024));
      if (!more) return Status::Unavailable("NCCL RAS: connection closed during the handshake");
    }
    size_t nl = buffer_.find('\n');
    std::string line = buffer_.substr(0, nl);
    buffer_.erase(0, nl + 1);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return line;
  }

  // Everything until the server closes the connection.
  Result<std::string> ReadToEnd(SteadyClock::time_point deadline, size_t cap) {
    while (true) {
      if (buffer_.size() > cap) {
        return Status::InvalidInput("NCCL RAS: report over " + std::to_string(cap) + " bytes");
      }
      FULCRUM_ASSIGN_OR_RETURN(bool more, ReadSome(deadline, 64 * 1024));
      if (!more) return std::move(buffer_);
    }
  }

  static SteadyClock::time_point Deadline(double seconds) {
    return SteadyClock::now() +
           std::chrono::microseconds(static_cast<int64_t>(std::max(0.0, seconds) * 1e6));
  }

 private:
  static Status Refused(const std::string& address, int err) {
    return Status::Unavailable("NCCL RAS at " + address + ": " + std::strerror(err));
  }

  bool Wait(short events, SteadyClock::time_point deadline) {
    while (true) {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
      if (left.count() <= 0) return false;
      pollfd p{fd_, events, 0};
      int rc = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 60'000)));
      if (rc > 0) return true;
      if (rc < 0 && errno != EINTR) return false;
    }
  }

  // Appends what arrives; false at EOF.
  Result<bool> ReadSome(SteadyClock::time_point deadline, size_t chunk) {
    while (true) {
      char buf[64 * 1024];
      ssize_t n = ::recv(fd_, buf, std::min(chunk, sizeof buf), 0);
      if (n > 0) {
        buffer_.append(buf, static_cast<size_t>(n));
        return true;
      }
      if (n == 0) return false;
      if (errno != EAGAIN && errno != EINTR) {
        return Status::Unavailable(std::string("NCCL RAS: recv: ") + std::strerror(errno));
      }
      if (!Wait(POLLIN, deadline)) return Status::Unavailable("NCCL RAS: no answer in time");
    }
  }

  int fd_ = -1;
  std::string buffer_;
};

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  }
  return true;
}

}  // namespace

Status ValidateNcclRasAddress(const std::string& address) { return ParseAddress(address).status(); }

Result<NcclRasReport> QueryNcclRas(const NcclRasQueryOptions& options) {
  Connection conn;
  FULCRUM_RETURN_IF_ERROR(conn.Connect(options));
  const auto handshake = Connection::Deadline(options.connect_timeout_seconds + 1);
  FULCRUM_RETURN_IF_ERROR(conn.Send("CLIENT PROTOCOL 2\n", handshake));
  FULCRUM_ASSIGN_OR_RETURN(std::string hello, conn.ReadLine(handshake));
  if (!StartsWithNoCase(hello, "SERVER PROTOCOL ")) {
    return Status::InvalidInput("NCCL RAS at " + options.address +
                                ": expected \"SERVER PROTOCOL n\", found \"" + hello.substr(0, 80) +
                                "\"");
  }
  bool json = false;
  if (options.want_json) {
    FULCRUM_RETURN_IF_ERROR(conn.Send("SET FORMAT json\n", handshake));
    FULCRUM_ASSIGN_OR_RETURN(std::string answer, conn.ReadLine(handshake));
    json = StartsWithNoCase(answer, "OK");
  }
  FULCRUM_RETURN_IF_ERROR(conn.Send("STATUS\n", handshake));
  FULCRUM_ASSIGN_OR_RETURN(std::string body,
                           conn.ReadToEnd(Connection::Deadline(options.report_timeout_seconds),
                                          options.max_report_bytes));
  return json ? ParseNcclRasJson(body) : ParseNcclRasText(body);
}

}  // namespace fulcrum::telemetry
