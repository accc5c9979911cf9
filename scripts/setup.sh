#!/usr/bin/env bash
# Installs what fulcrum's build and tests need on Debian 12 (as root, through apt-get), then
# configures and builds build/ in Release. Idempotent: packages already present are skipped, and
# the build is incremental. Quiet unless something goes wrong (the log is kept in build/setup.log).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  # build
  cmake ninja-build g++ clang clang-tidy clang-format ccache pkg-config
  # libraries (see README "Dependencies")
  libcli11-dev nlohmann-json3-dev libyaml-cpp-dev libfmt-dev libspdlog-dev libsqlite3-dev
  libcpp-httplib-dev libcurl4-openssl-dev libssl-dev libgtest-dev libgmock-dev libbenchmark-dev
  # real peers started by the tests
  sqlite3 prometheus prometheus-alertmanager slurm-wlm munge chromium
  curl procps iproute2 python3
  # a real PyTorch training job under `fulcrum run` (CPU torch 1.13; call it as /usr/bin/python3)
  # and YAML 1.1 parsing of the SkyPilot/dstack exports as PyYAML reads them
  python3-torch python3-yaml
  # the --json outputs and the JSON examples of README and docs/ checked against docs/schemas/
  # (draft 7, python3-jsonschema 4.10)
  python3-jsonschema
  # `fulcrum env`'s playbook under ansible-playbook --syntax-check (ansible carries community.docker)
  ansible
  # wall-clock steps under a fixed monotonic clock (the outbox's clock-step test, libfaketime)
  faketime
  # man pages rendered in the CLI test, the .deb built, listed and lintian-checked in the package test
  groff-base man-db dpkg-dev lintian
)
# Node.js + npm for the dashboard's assets: Debian's packages only where no node/npm is present
# (a machine with Node.js from elsewhere keeps it; Debian's npm would conflict with it).
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

mkdir -p build
log=build/setup.log
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup.sh: these packages are missing and installing them needs root: ${missing[*]}" >&2
    exit 1
  fi
  echo "setup.sh: installing ${#missing[@]} packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    # Some names exist only on some releases (promtool is split out later): retry one by one.
    for p in "${missing[@]}"; do
      apt-get install -y -qq --no-install-recommends "$p" >>"$log" 2>&1 || echo "setup.sh: could not install $p (see $log)" >&2
    done
  fi
fi

# Front-end packages for the dashboard (web/package.json), if the dashboard has any.
if [ -f web/package.json ] && [ ! -d web/node_modules ]; then
  (cd web && npm ci --silent --no-audit --no-fund >>"../$log" 2>&1) || {
    echo "setup.sh: npm ci in web/ failed (see $log)" >&2; exit 1; }
fi

cmake --preset release >>"$log" 2>&1 || { tail -n 40 "$log" >&2; exit 1; }
cmake --build --preset release -- -j"$(nproc)" >>"$log" 2>&1 || { tail -n 60 "$log" >&2; exit 1; }
