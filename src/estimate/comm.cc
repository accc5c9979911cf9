#include "estimate/comm.h"

namespace fulcrum::estimate {

double AllReduceSeconds(double bytes, int ranks, const Link& link) {
  if (ranks <= 1 || bytes <= 0 || link.bytes_per_second <= 0) return 0;
  const double n = ranks;
  return 2.0 * (n - 1) / n * bytes / link.bytes_per_second + 2.0 * (n - 1) * link.latency_seconds;
}

double ReduceScatterSeconds(double bytes, int ranks, const Link& link) {
  if (ranks <= 1 || bytes <= 0 || link.bytes_per_second <= 0) return 0;
  const double n = ranks;
  return (n - 1) / n * bytes / link.bytes_per_second + (n - 1) * link.latency_seconds;
}

double AllGatherSeconds(double bytes, int ranks, const Link& link) {
  return ReduceScatterSeconds(bytes, ranks, link);
}

double AllToAllSeconds(double bytes, int ranks, const Link& link) {
  return ReduceScatterSeconds(bytes, ranks, link);
}

double SendSeconds(double bytes, const Link& link) {
  if (bytes <= 0 || link.bytes_per_second <= 0) return 0;
  return bytes / link.bytes_per_second + link.latency_seconds;
}

double PcieGbytesPerSecond(std::optional<int> generation) {
  // PCI-SIG: gen3 8 GT/s, gen4 16 GT/s, gen5 32 GT/s per lane; 128b/130b; x16 -> GB/s per
  // direction = GT/s * 16 lanes * 128/130 / 8.
  const int gen = generation.value_or(4);
  const double gts = gen <= 3 ? 8.0 : (gen == 4 ? 16.0 : 32.0);
  return gts * 16.0 * 128.0 / 130.0 / 8.0;
}

}  // namespace fulcrum::estimate
