#!/usr/bin/env bash
# /v1/health latency of the real agent under idle and slowloris connections, next to the same
# probes with none: 200 idle TCP connections (issue 19: two idle sockets used to stall the API for
# 5 s, 200 for 46 s), then N "trickling" sockets for each N given (issue 29: 600 sockets sending
# a header byte every 2 s held every worker and /v1/health timed out). Everything on 127.0.0.1,
# in a temp dir under build/; the agent and the trickler started here are stopped on exit. A
# benchmark, not a test (the suite checks that the API answers, not how fast).
#
#   bench/perf/idle_sockets_latency.sh [PROBES] [TRICKLING...]
#       (default 500 probes per phase; trickling phases 600 and 2000; ~1 min)
#
# Last, issue 29's header flood (FLOOD_MB, default 20 MB of header lines in each of 16 requests
# at once): the statuses and the agent's RSS and peak RSS.
#
# One probe = a new TCP connection, `GET /v1/health`, the whole answer read (as the supervisor
# and a dashboard through an SSH tunnel query it). A trickling socket sends a request line, then
# one header byte every 2 s, and reconnects when the agent closes it (the request deadline, or
# the connection cap giving way to newer connections), so N stay open or arriving all the time.
# Each trickling phase waits 12 s first (past the agent's 10 s request deadline) and reports the
# agent's VmRSS and the trickler's reconnects. Needs: build/fulcrum, python3, `ulimit -n` above
# the largest N plus 200 (raised to the hard limit here when it is lower).
set -euo pipefail

PROBES="${1:-500}"
shift || true
TRICKLING=("$@")
if [[ ${#TRICKLING[@]} -eq 0 ]]; then TRICKLING=(600 2000); fi
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
FULCRUM="${FULCRUM:-$ROOT/build/fulcrum}"
MAX_N=0
for n in "${TRICKLING[@]}"; do ((n > MAX_N)) && MAX_N=$n; done
if (($(ulimit -n) < MAX_N + 200)); then ulimit -n "$(ulimit -Hn)"; fi
if (($(ulimit -n) < MAX_N + 200)); then
  echo "ulimit -n is $(ulimit -n); $MAX_N trickling sockets need $((MAX_N + 200))" >&2
  exit 2
fi
mkdir -p "$ROOT/build"
WORK="$(mktemp -d "$ROOT/build/idle-sockets.XXXXXX")"
AGENT_PID=""
TRICKLE_PID=""
cleanup() {
  if [[ -n "$TRICKLE_PID" ]]; then kill "$TRICKLE_PID" 2>/dev/null || true; fi
  if [[ -n "$AGENT_PID" ]]; then kill "$AGENT_PID" 2>/dev/null || true; wait "$AGENT_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

"$FULCRUM" agent --source sim --sim-gpus 8 --interval 1s --listen 127.0.0.1:0 \
  --data-dir "$WORK/data" --json >"$WORK/agent.out" 2>"$WORK/agent.err" &
AGENT_PID=$!
for _ in $(seq 100); do
  if [[ -s "$WORK/agent.out" ]]; then break; fi
  sleep 0.1
done
PORT=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["agent"]["port"])' "$WORK/agent.out")

# The trickler runs in its own process so that its reconnects do not delay the probes' client.
cat >"$WORK/trickle.py" <<'PY'
import signal, socket, sys, time

port, count = int(sys.argv[1]), int(sys.argv[2])
reconnects = 0
signal.signal(signal.SIGTERM, lambda *_: (print(reconnects, flush=True), sys.exit(0)))

def opened():
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.setblocking(False)
        s.send(b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        return s
    except OSError:
        return None  # tried again on the next round

socks = [opened() for _ in range(count)]
while True:
    slice_start = time.monotonic()
    for i, s in enumerate(socks):
        try:
            if s is None or s.send(b"a") != 1:
                raise OSError
        except OSError:
            if s is not None:
                s.close()
            socks[i] = opened()
            reconnects += 1
    time.sleep(max(0.0, 2.0 - (time.monotonic() - slice_start)))
PY

probe_phase() {
  python3 - "$PORT" "$PROBES" "$1" "$AGENT_PID" <<'PY'
import socket, sys, time

port, probes, name, pid = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]

def probe():
    start = time.perf_counter()
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    if not data.startswith(b"HTTP/1.1 200"):
        raise SystemExit("probe failed: %r" % data[:80])
    return (time.perf_counter() - start) * 1000

times = sorted(probe() for _ in range(probes))
p = lambda q: times[min(len(times) - 1, int(q * len(times)))]
rss = [l.split()[1] for l in open("/proc/%s/status" % pid) if l.startswith("VmRSS:")][0]
print("%-28s probes %4d  p50 %6.2f ms  p99 %6.2f ms  max %7.2f ms  agent VmRSS %6.1f MiB"
      % (name, len(times), p(0.50), p(0.99), times[-1], int(rss) / 1024))
PY
}

probe_phase "no idle connection"
python3 - "$PORT" <<'PY' &
import socket, sys, time
idle = [socket.create_connection(("127.0.0.1", int(sys.argv[1]))) for _ in range(200)]
time.sleep(30)
PY
IDLE_PID=$!
sleep 0.5
probe_phase "200 idle connections"
sleep 6  # idle sockets held past the old 5 s read timeout, then probed again
probe_phase "200 idle, after 6 s"
kill "$IDLE_PID" 2>/dev/null || true
wait "$IDLE_PID" 2>/dev/null || true

for n in "${TRICKLING[@]}"; do
  python3 "$WORK/trickle.py" "$PORT" "$n" >"$WORK/trickle.out" &
  TRICKLE_PID=$!
  sleep 12
  probe_phase "$n trickling sockets"
  kill "$TRICKLE_PID"
  wait "$TRICKLE_PID" 2>/dev/null || true
  TRICKLE_PID=""
  echo "  (trickler reconnects: $(cat "$WORK/trickle.out"))"
done

# Issue 29's header flood: 16 GETs at once, each with FLOOD_MB MB of 35-byte header lines; each
# must get 431, and the agent's peak RSS (VmHWM) is reported.
python3 - "$PORT" "${FLOOD_MB:-20}" "$AGENT_PID" <<'PY'
import socket, sys, threading

port, mb, pid = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
lines = b"".join(b"X-Flood-%06d: aaaaaaaaaaaaaaaaaa\r\n" % i for i in range(10000))
statuses = []

def flood():
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    sent = 0
    try:
        while sent < mb << 20:
            s.sendall(lines)
            sent += len(lines)
        s.sendall(b"\r\n")
    except OSError:
        pass
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    statuses.append(data[9:12].decode() or "none")

threads = [threading.Thread(target=flood) for _ in range(16)]
for t in threads:
    t.start()
for t in threads:
    t.join()
status = dict(l.split(":", 1) for l in open("/proc/%s/status" % pid))
print("16 header floods of %d MB    statuses %s  agent VmRSS %s, peak (VmHWM) %s"
      % (mb, ",".join(sorted(set(statuses))), status["VmRSS"].strip(), status["VmHWM"].strip()))
PY