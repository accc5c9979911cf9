#!/usr/bin/env bash
# /v1/health latency of the real agent with 200 idle TCP connections held open (issue 19: two
# idle sockets used to stall the API for 5 s, 200 for 46 s), next to the same probes with no
# idle connection. Everything on 127.0.0.1, in a temp dir under build/; the agent started here
# is stopped on exit. A benchmark, not a test (the suite's stress test checks that the API
# answers, not how fast).
#
#   bench/perf/idle_sockets_latency.sh [PROBES]     (default 500 probes per phase, ~10 s)
#
# One probe = a new TCP connection, `GET /v1/health`, the whole answer read (as the supervisor
# and a dashboard through an SSH tunnel query it). Needs: build/fulcrum, python3.
set -euo pipefail

PROBES="${1:-500}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
FULCRUM="${FULCRUM:-$ROOT/build/fulcrum}"
mkdir -p "$ROOT/build"
WORK="$(mktemp -d "$ROOT/build/idle-sockets.XXXXXX")"
AGENT_PID=""
cleanup() {
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

python3 - "$PORT" "$PROBES" <<'PY'
import socket, statistics, sys, time

port, probes = int(sys.argv[1]), int(sys.argv[2])

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

def phase(name):
    times = sorted(probe() for _ in range(probes))
    p = lambda q: times[min(len(times) - 1, int(q * len(times)))]
    print("%-26s probes %4d  p50 %6.2f ms  p99 %6.2f ms  max %7.2f ms"
          % (name, len(times), p(0.50), p(0.99), times[-1]))

phase("no idle connection")
idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(200)]
time.sleep(0.5)
phase("200 idle connections")
# Idle sockets held past the agent's 5 s read timeout, then probed again.
time.sleep(6)
phase("200 idle, after 6 s")
for s in idle:
    s.close()
PY
