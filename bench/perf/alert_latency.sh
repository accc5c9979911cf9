#!/usr/bin/env bash
# Fault -> webhook delivered latency: fulcrum's own alerting (full samples every 1 s, the cheap
# fields every 100 ms: --fast-interval, FULCRUM_FAST_INTERVAL to change it) vs a real
# Prometheus + Alertmanager pipeline scraping the same agent's /metrics, at their default
# settings and at their fastest settings. Everything on 127.0.0.1, in a temp dir under build/,
# bounded in time; every process started here is stopped on exit.
#
#   bench/perf/alert_latency.sh [fast|default|both]    (default: both; fast ~4 min, default ~11 min)
#
# One run = one `fulcrum agent --source sim --sim-gpus 8` with a scenario of overheat faults
# (95 C at once, in the next 1 s sample) + one Prometheus + one Alertmanager, all alerting on
# temperature > 85 C with `for: 0s`, all posting to one webhook recorder that stamps arrival
# times. Latency = arrival of the first "firing" notification for that GPU - fault time, where
# fault time = the sim source's origin (the agent logs "scenario times count from unix T") + the
# fault's `at` (older agents: agent start from /v1/health uptime_seconds, which is later than the
# sim's origin by the store's open time).
# The agent's CPU (utime + stime from /proc over the run after a 10 s warm-up, as % of one core)
# and its peak RSS (VmHWM) are reported next to the latencies.
# Needs: build/fulcrum, python3, prometheus, prometheus-alertmanager (Debian packages).
set -euo pipefail

MODE="${1:-both}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
FULCRUM="${FULCRUM:-$ROOT/build/fulcrum}"
PROMETHEUS="${PROMETHEUS:-prometheus}"
ALERTMANAGER="${ALERTMANAGER:-prometheus-alertmanager}"
mkdir -p "$ROOT/build"
WORK="$(mktemp -d "$ROOT/build/alert-latency.XXXXXX")"
PIDS=()

cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_http() {  # url, seconds
  local deadline=$((SECONDS + $2))
  until curl -fsS -o /dev/null "$1" 2>/dev/null; do
    if ((SECONDS > deadline)); then echo "timeout waiting for $1" >&2; return 1; fi
    sleep 0.2
  done
}

# --- the webhook recorder: one JSON line per request {t, path, body} ------------------------
write_recorder() {
  cat >"$WORK/recorder.py" <<'PY'
import http.server, json, sys, time, threading
lock = threading.Lock()
out = open(sys.argv[2], "a")
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        t = time.time()
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with lock:
            out.write(json.dumps({"t": t, "path": self.path, "body": body.decode()}) + "\n")
            out.flush()
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
}

# --- scenario: overheat faults, staggered over GPUs ------------------------------------------
# fast:    8 GPUs x 6 episodes, 12 s on / 18 s off, ~3.5 min
# default: 8 GPUs x 1 episode, 200 s on (Prometheus scrapes every 60 s), ~10.5 min
write_scenario() {  # mode file
  python3 - "$1" "$2" <<'PY'
import sys
mode, path = sys.argv[1], sys.argv[2]
lines = []
# Each fault gets a phase spread evenly over [0, 1) s (golden-ratio sequence), so that fault
# times fall everywhere within the agent's 1 s sample and 100 ms fast-tick periods instead of
# on a tick (the sim's clock starts with the agent's first tick).
phase = lambda i: (i * 0.6180339887) % 1.0
if mode == "fast":
    for k in range(6):
        for g in range(8):
            at = 20 + 30 * k + 3 * g + phase(8 * k + g)
            lines.append(f"- {{at: {at:.3f}s, gpu: {g}, fault: overheat, for: 12s}}")
else:
    for g in range(8):
        at = 30 + 40 * g + phase(g)
        lines.append(f"- {{at: {at:.3f}s, gpu: {g}, fault: overheat, for: 200s}}")
open(path, "w").write("\n".join(lines) + "\n")
PY
}

cpu_ticks() {  # pid -> "utime+stime clock-ticks  monotonic-seconds"
  python3 - "$1" <<'PY'
import os, sys, time
fields = open(f"/proc/{sys.argv[1]}/stat").read().rsplit(")", 1)[1].split()
print(int(fields[11]) + int(fields[12]), time.monotonic(), os.sysconf("SC_CLK_TCK"))
PY
}

duration_for() { [[ "$1" == fast ]] && echo "${FAST_SECONDS:-215}" || echo "${DEFAULT_SECONDS:-620}"; }

write_configs() {  # mode agent_port am_port recorder_port
  local mode=$1 agent_port=$2 am_port=$3 rec_port=$4
  cat >"$WORK/$mode/rules.yaml" <<'EOF'
rules:
  - {name: GpuTooHotNow, metric: gpu_temperature_celsius, op: ">", threshold: 85, for: 0s,
     keep_firing_for: 0s, severity: critical}
EOF
  cat >"$WORK/$mode/prom_rules.yml" <<'EOF'
groups:
  - name: fulcrum
    rules:
      - alert: GpuTooHotNow
        expr: fulcrum_gpu_temperature_celsius > 85
        for: 0s
        labels: {severity: critical}
EOF
  local global am_route
  if [[ "$mode" == fast ]]; then
    # Fastest practical: scrape and evaluate every 200 ms (the agent samples every 1 s),
    # Alertmanager without group wait.
    global="  scrape_interval: 200ms
  scrape_timeout: 200ms
  evaluation_interval: 200ms"
    am_route="  group_wait: 0s
  group_interval: 200ms
  repeat_interval: 4h"
  else
    # Defaults: Prometheus scrape/evaluation 1m; Alertmanager group_wait 30s,
    # group_interval 5m, repeat_interval 4h (not written: their defaults apply).
    global="  scrape_interval: 1m  # the default, written out
  evaluation_interval: 1m  # the default"
    am_route=""
  fi
  cat >"$WORK/$mode/prometheus.yml" <<EOF
global:
$global
rule_files: ["$WORK/$mode/prom_rules.yml"]
alerting:
  alertmanagers:
    - static_configs: [{targets: ["127.0.0.1:$am_port"]}]
scrape_configs:
  - job_name: fulcrum
    static_configs: [{targets: ["127.0.0.1:$agent_port"]}]
EOF
  cat >"$WORK/$mode/alertmanager.yml" <<EOF
route:
  receiver: recorder
  group_by: [alertname, gpu]
$am_route
receivers:
  - name: recorder
    webhook_configs: [{url: "http://127.0.0.1:$rec_port/am"}]
EOF
}

run_mode() {
  local mode=$1
  mkdir -p "$WORK/$mode"
  local agent_port prom_port am_port rec_port
  agent_port=$(free_port); prom_port=$(free_port); am_port=$(free_port); rec_port=$(free_port)
  write_scenario "$mode" "$WORK/$mode/scenario.yaml"
  write_configs "$mode" "$agent_port" "$am_port" "$rec_port"

  python3 "$WORK/recorder.py" "$rec_port" "$WORK/$mode/arrivals.jsonl" &
  PIDS+=($!)
  "$ALERTMANAGER" --config.file="$WORK/$mode/alertmanager.yml" \
    --storage.path="$WORK/$mode/am-data" --web.listen-address="127.0.0.1:$am_port" \
    --cluster.listen-address= --log.level=warn >"$WORK/$mode/alertmanager.log" 2>&1 &
  PIDS+=($!)
  "$PROMETHEUS" --config.file="$WORK/$mode/prometheus.yml" \
    --storage.tsdb.path="$WORK/$mode/prom-data" --web.listen-address="127.0.0.1:$prom_port" \
    --log.level=warn >"$WORK/$mode/prometheus.log" 2>&1 &
  PIDS+=($!)
  wait_http "http://127.0.0.1:$am_port/-/ready" 30
  wait_http "http://127.0.0.1:$prom_port/-/ready" 30

  "$FULCRUM" agent --source sim --sim-gpus 8 --sim-scenario "$WORK/$mode/scenario.yaml" \
    --interval 1s --fast-interval "${FULCRUM_FAST_INTERVAL:-100ms}" \
    --listen "127.0.0.1:$agent_port" --data-dir "$WORK/$mode/data" \
    --rules "$WORK/$mode/rules.yaml" --receiver "http://127.0.0.1:$rec_port/fulcrum" \
    --receiver-format generic >"$WORK/$mode/agent.log" 2>&1 &
  local agent_pid=$!
  PIDS+=($agent_pid)
  wait_http "http://127.0.0.1:$agent_port/v1/health" 30
  # Agent start in unix seconds = now - uptime (both read within one request).
  python3 - "http://127.0.0.1:$agent_port/v1/health" >"$WORK/$mode/agent_start" <<'PY'
import json, sys, time, urllib.request
t = time.time()
h = json.load(urllib.request.urlopen(sys.argv[1]))
t2 = time.time()
print(repr((t + t2) / 2 - h["uptime_seconds"]))
PY
  local duration
  duration=$(duration_for "$mode")
  echo "[$mode] agent on :$agent_port, prometheus :$prom_port, alertmanager :$am_port," \
       "recorder :$rec_port; running ${duration} s ($WORK/$mode)" >&2
  sleep 10
  cpu_ticks "$agent_pid" >"$WORK/$mode/cpu_start"
  sleep $((duration - 10))
  cpu_ticks "$agent_pid" >"$WORK/$mode/cpu_end"
  grep VmHWM "/proc/$agent_pid/status" | awk '{print $2}' >"$WORK/$mode/rss_kib"
  python3 -c 'import time; print(repr(time.time()))' >"$WORK/$mode/run_end"
  cleanup  # stop this run's processes before the next run
  PIDS=()
}

analyse() {  # modes...
  python3 - "$WORK" "$@" <<'PY'
import json, sys, re
work, modes = sys.argv[1], sys.argv[2:]
def pct(xs, p):
    xs = sorted(xs)
    if not xs: return float("nan")
    k = (len(xs) - 1) * p / 100
    f = int(k); c = min(f + 1, len(xs) - 1)
    return xs[f] + (xs[c] - xs[f]) * (k - f)
report = {}
for mode in modes:
    start = float(open(f"{work}/{mode}/agent_start").read())
    origin = re.search(r"scenario times count from unix ([0-9.]+)",
                       open(f"{work}/{mode}/agent.log").read())
    if origin: start = float(origin.group(1))
    end = float(open(f"{work}/{mode}/run_end").read())
    # A fault counts when every pipeline had time to report it before the run ended
    # (fast: 15 s; default: 300 s, above the 1m scrape + 1m eval + 30 s group_wait worst case).
    window = 15 if mode == "fast" else 300
    faults = []
    for line in open(f"{work}/{mode}/scenario.yaml"):
        m = re.search(r"at: ([0-9.]+)s, gpu: (\d+), fault: overheat, for: ([0-9.]+)s", line)
        at, gpu, dur = float(m.group(1)), int(m.group(2)), float(m.group(3))
        if start + at + window <= end:
            faults.append((gpu, start + at, start + at + dur))
    firing = {"fulcrum": [], "prometheus+alertmanager": []}  # (gpu, arrival)
    started = {}  # fulcrum: (gpu, arrival) -> started_at, the sample that showed the fault
    to_delivered = []  # fulcrum: arrival - time of the sample that showed the fault
    for line in open(f"{work}/{mode}/arrivals.jsonl"):
        rec = json.loads(line)
        body = json.loads(rec["body"])
        if rec["path"].startswith("/fulcrum"):
            a = body["alert"]
            if a["status"] == "firing" and a["name"] == "GpuTooHotNow":
                firing["fulcrum"].append((a["gpu"], rec["t"]))
                started[(a["gpu"], rec["t"])] = a["started_at"]
                to_delivered.append(rec["t"] - a["started_at"])
        else:
            for a in body["alerts"]:
                if a["status"] == "firing" and a["labels"].get("alertname") == "GpuTooHotNow":
                    firing["prometheus+alertmanager"].append((int(a["labels"]["gpu"]), rec["t"]))
    for name, arrivals in firing.items():
        lat, missed, sample_lag = [], 0, []
        for gpu, t0, t1 in faults:
            hits = [t for g, t in arrivals if g == gpu and t0 - 0.5 <= t <= t1 + 330]
            if hits:
                lat.append(min(hits) - t0)
                if (gpu, min(hits)) in started: sample_lag.append(started[(gpu, min(hits))] - t0)
            else: missed += 1
        report[f"{mode}/{name}"] = {"faults": len(faults), "detected": len(lat), "missed": missed,
            "p50_seconds": round(pct(lat, 50), 3), "p99_seconds": round(pct(lat, 99), 3),
            "min_seconds": round(min(lat), 3) if lat else None,
            "max_seconds": round(max(lat), 3) if lat else None}
        if sample_lag:
            # Sample time of the first hot sample - estimated fault time: never negative when
            # the fault-time estimate (from /v1/health uptime) is right.
            report[f"{mode}/{name}"]["min_sample_lag_seconds"] = round(min(sample_lag), 3)
            report[f"{mode}/{name}"]["sample_to_delivered_p50_seconds"] = round(pct(to_delivered, 50), 3)
            report[f"{mode}/{name}"]["sample_to_delivered_max_seconds"] = round(max(to_delivered), 3)
    t0, m0, hz = open(f"{work}/{mode}/cpu_start").read().split()
    t1, m1, _ = open(f"{work}/{mode}/cpu_end").read().split()
    cpu = (int(t1) - int(t0)) / float(hz) / (float(m1) - float(m0)) * 100
    report[f"{mode}/fulcrum"]["agent_cpu_pct_of_core"] = round(cpu, 2)
    report[f"{mode}/fulcrum"]["agent_peak_rss_mib"] = round(int(open(f"{work}/{mode}/rss_kib").read()) / 1024, 1)
print(json.dumps({"alert_latency": report}, indent=2))
print(f"{'run/pipeline':42} {'n':>3} {'miss':>4} {'p50 s':>8} {'p99 s':>8} {'max s':>8}")
for k, v in report.items():
    print(f"{k:42} {v['detected']:>3} {v['missed']:>4} {v['p50_seconds']:>8} {v['p99_seconds']:>8} {v['max_seconds']!s:>8}")
for k, v in report.items():
    if "agent_cpu_pct_of_core" in v:
        print(f"{k}: agent {v['agent_cpu_pct_of_core']} % of a core, peak RSS {v['agent_peak_rss_mib']} MiB (8 sim GPUs)")
PY
}

write_recorder
case "$MODE" in
  fast) run_mode fast; analyse fast ;;
  default) run_mode default; analyse default ;;
  both) run_mode fast; run_mode default; analyse fast default ;;
  *) echo "usage: $0 [fast|default|both]" >&2; exit 2 ;;
esac
echo "raw data: $WORK" >&2
