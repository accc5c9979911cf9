// A client for NCCL's RAS status socket (NCCL >= 2.24): connect, exchange the protocol lines,
// ask for STATUS (JSON where the server accepts `SET FORMAT json`, NCCL >= 2.28.7; text before)
// and parse the report into plain structs: communicators, their ranks with host, pid and GPU,
// the ranks that did not answer, and which ranks are behind on collective operations.
// Parsers are pure and total (any bytes give a report or a Status); QueryNcclRas is bounded.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace fulcrum::telemetry {

// NCCL_RAS_CLIENT_PORT in src/ras/ras_internal.h (NVIDIA/nccl v2.24.3-1 .. v2.30.3-1); NCCL
// binds "localhost:28028" unless NCCL_RAS_ADDR says otherwise (client_support.cc,
// rasClientInitSocket), and NCCL_RAS_ENABLE=0 turns the service off (bootstrap.cc, default 1).
inline constexpr int kNcclRasDefaultPort = 28028;
inline constexpr const char* kNcclRasDefaultAddress = "127.0.0.1:28028";

// One rank of a communicator as the report names it. host is the IP NCCL printed
// (inet_ntop of the rank's RAS address), pid -1 / empty host when NCCL had no process
// information; cuda_dev / nvml_dev -1 when not given.
struct NcclRasRank {
  int rank = -1;
  std::string host;
  int pid = -1;
  int cuda_dev = -1;
  int nvml_dev = -1;
  // Collective operations launched, per NCCL function name ("AllReduce", ...); the text report
  // only prints counts for the function whose counts differ ("" when it does not name one).
  std::vector<std::pair<std::string, uint64_t>> op_counts;
  bool missing = false;  // did not answer (INCOMPLETE / DEAD / missing_ranks)
  bool dead = false;     // NCCL considers the process dead
};

struct NcclRasComm {
  std::string hash;  // "0x..." as printed (hex), "" when the report does not give it
  int size = 0;      // ranks in the communicator (0 when unknown)
  std::vector<NcclRasRank> ranks;
  // Per function, the highest launched-operation count any rank reached, including ranks the
  // text report only counts ("7 ranks have launched up to operation 42").
  std::map<std::string, uint64_t> highest_op;
};

struct NcclRasReport {
  std::string format;        // "json" or "text"
  std::string nccl_version;  // "2.29.2" etc., "" when absent
  std::vector<NcclRasComm> comms;
  // Processes the text report lists as missing or dead outside any communicator section.
  std::vector<NcclRasRank> missing_processes;
  int timeouts = 0;  // RAS legs that timed out while gathering (incomplete data)
};

// A rank that holds up a communicator: behind the others on a function's operation count, or
// not answering at all. `reason` is a short phrase for an alert ("AllReduce op 41 of 42",
// "not responding", "process dead").
struct NcclLaggingRank {
  std::string comm_hash;
  NcclRasRank rank;
  std::string reason;
  // Every pid the report lists in the rank's communicator (the rank's own included; the text
  // report lists only the ranks it names), so that a supervisor can tell its own job's
  // communicators from another job's on the same node.
  std::vector<int> comm_pids;
};

// Parses the JSON report (client_support.cc jsonWriteHeader .. jsonWriteFooter, v2.29.2-1).
// Accepts the v2.28.7-1 output whose missing_ranks entries lack the comma after "nvml_dev".
Result<NcclRasReport> ParseNcclRasJson(std::string_view text);
// Parses the text report (client_support.cc rasClientRunComms, v2.24.3-1 .. v2.30.3-1): the
// "Rank N ... -- GPU G managed by process P on node H" lines of the INCOMPLETE / MISMATCH /
// ERROR sections, "Process P on node H managing GPU G" lines, and each "#g-i (hash)" header.
// Lines it does not know are skipped; an input with no "NCCL version" line is an error.
Result<NcclRasReport> ParseNcclRasText(std::string_view text);

// The ranks holding up each communicator: per function, the ranks whose launched-operation
// count is below the communicator's highest, and every missing rank; then the missing or dead
// processes no rank entry names (rank -1, comm ""). Sorted by comm hash (as text), rank.
std::vector<NcclLaggingRank> FindLaggingRanks(const NcclRasReport& report);

// "rank 3 (pid 4242 on 10.0.0.2, GPU 3): AllReduce op 41 of 42 in comm 0x1f" — one rank for
// an alert ("a process (pid ...)" when the report gives no rank).
std::string DescribeLaggingRank(const NcclLaggingRank& lagging);
// The first `max_listed` of `stalled` described and joined with "; ", then "; and N more": one
// readable line for an alert, a job's reason or a log ("" for none).
std::string DescribeLaggingRanks(std::span<const NcclLaggingRank> stalled, size_t max_listed = 8);

struct NcclRasQueryOptions {
  std::string address = kNcclRasDefaultAddress;  // host:port, IPv4 literal
  double connect_timeout_seconds = 1;  // client.cc starts with a 1 s timeout (TIMEOUT_INCREMENT)
  // NCCL's own collection waits RAS_COLLECTIVE_LEG_TIMEOUT_SEC (5 s) per leg; client.cc adds
  // RAS_COLLECTIVE_EXTRA_TIMEOUT_SEC (5 s) on top of the 1 s: 11 s.
  double report_timeout_seconds = 11;
  size_t max_report_bytes = 4 << 20;  // a larger answer is cut and refused
  bool want_json = true;              // send SET FORMAT json first (falls back to text)
};

// Checks an address for QueryNcclRas: IPV4:PORT ("localhost" = 127.0.0.1).
Status ValidateNcclRasAddress(const std::string& address);

// One STATUS round trip. kUnavailable when nothing listens (connection refused) or the
// connection times out; kInvalidInput when the peer does not speak the protocol or the report
// does not parse.
Result<NcclRasReport> QueryNcclRas(const NcclRasQueryOptions& options);

}  // namespace fulcrum::telemetry
