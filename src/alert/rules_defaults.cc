// The shipped default rules: a verbatim copy of examples/rules.yaml (rules_yaml_test checks that
// they are byte-identical; after editing the example, regenerate this file by pasting it in).
#include "alert/rules_yaml.h"

namespace fulcrum::alert {

std::string_view DefaultRulesYaml() {
  static constexpr std::string_view kRules =
      R"fulcrum_rules(# fulcrum agent alert rules: the shipped defaults (compiled into the binary; `fulcrum agent`
# without --rules uses exactly this file). Copy it, edit it, and pass `--rules FILE`.
#
# Each rule watches one metric per GPU (names as on /metrics without the `fulcrum_` prefix, see
# docs/API.md). Fields: name, metric, op (> >= < <= == != in not_in), threshold (or values for
# in/not_in), for (how long the condition must hold before firing; 0s = at once),
# keep_firing_for (how long it stays firing after the condition clears), severity, labels,
# annotations ({{ $value }}, {{ $threshold }}, {{ $labels.gpu }} are expanded).
# Optional: kind (threshold | increase = sample-to-sample increase of a counter | swing =
# sample-to-sample relative change, 0.3 = 30 %), divide_by (value = metric / other metric),
# when (extra conditions on other metrics of the same GPU, all must hold).
#
# job_running: the agent feeds 1 while a job supervised by `fulcrum run` is running and
# heartbeating on that GPU (per GPU when the job lists its GPUs, else host-wide), 0 otherwise.
rules:
  # A100 begins to throttle near 83 C; community rules alert at > 85 C (NVIDIA A100 datasheet
  # thermal notes; NVML nvmlDeviceGetTemperature, https://docs.nvidia.com/deploy/nvml-api/).
  - name: GpuTooHot
    metric: gpu_temperature_celsius
    op: ">"
    threshold: 85
    for: 5m
    keep_firing_for: 0s
    severity: critical
    annotations:
      summary: "GPU {{ $labels.gpu }} at {{ $value }} C (> {{ $threshold }} C for 5m)"

  # NVML clock-event reason HwThermalSlowdown (0x40) held for 5 minutes.
  - name: GpuThermalSlowdown
    metric: gpu_thermal_slowdown
    op: "=="
    threshold: 1
    for: 5m
    keep_firing_for: 0s
    severity: warning
    annotations:
      summary: "GPU {{ $labels.gpu }} clocks held down by hardware thermal slowdown for 5m"

  # NVML clock-event reason SwPowerCap (0x4): the GPU runs at its power limit.
  - name: GpuPowerCapped
    metric: gpu_power_capped
    op: "=="
    threshold: 1
    for: 10m
    keep_firing_for: 0s
    severity: warning
    annotations:
      summary: "GPU {{ $labels.gpu }} at its power cap for 10m"

  # Critical XIDs: 48 DBE ECC, 62, 63/64 row remapping, 74 NVLink, 79 fallen off the bus, 92,
  # 94/95 contained/uncontained ECC, 119/120 GSP (NVIDIA Xid catalog,
  # https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html).
  # gpu_xid_last keeps the last XID since the agent started, so this stays firing until then.
  - name: GpuCriticalXid
    metric: gpu_xid_last
    op: in
    values: [48, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120]
    for: 0s
    keep_firing_for: 0s
    severity: critical
    annotations:
      summary: "GPU {{ $labels.gpu }} reported critical XID {{ $value }}"

  # Any new uncorrectable ECC error, at once; stays firing for an hour after the last one.
  - name: GpuUncorrectableEcc
    metric: gpu_ecc_uncorrected_errors_total
    kind: increase
    op: ">"
    threshold: 0
    for: 0s
    keep_firing_for: 1h
    severity: critical
    annotations:
      summary: "GPU {{ $labels.gpu }}: {{ $value }} new uncorrectable ECC error(s)"

  - name: GpuMemoryNearlyFull
    metric: gpu_memory_used_bytes
    divide_by: gpu_memory_total_bytes
    op: ">"
    threshold: 0.9
    for: 2m
    keep_firing_for: 0s
    severity: warning
    annotations:
      summary: "GPU {{ $labels.gpu }} memory {{ $value }} full (> 90 % for 2m)"

  - name: GpuIdleDuringJob
    metric: gpu_utilization_ratio
    op: "<"
    threshold: 0.1
    when:
      - {metric: job_running, op: "==", threshold: 1}
    for: 30m
    keep_firing_for: 0s
    severity: warning
    annotations:
      summary: "GPU {{ $labels.gpu }} under 10 % busy for 30m while a job runs"

  # Unstable hardware: SM clock changes by more than 30 % from one sample to the next while the
  # GPU is busy (utilization >= 50 % at both samples, so job start and end do not count).
  # /metrics has no training-throughput series (docs/API.md); `kind: swing` works on any
  # metric, so a throughput swing rule is this rule with that metric once one exists.
  - name: GpuClockSwing
    metric: gpu_sm_clock_hz
    kind: swing
    op: ">"
    threshold: 0.3
    when:
      - {metric: gpu_utilization_ratio, op: ">=", threshold: 0.5}
    for: 0s
    keep_firing_for: 5m
    severity: warning
    annotations:
      summary: "GPU {{ $labels.gpu }} SM clock swung {{ $value }} (> 30 %) between samples under load"
)fulcrum_rules";
  return kRules;
}

}  // namespace fulcrum::alert
