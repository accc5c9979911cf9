#!/usr/bin/env bash
# Fails when a tracked file of the repository names the developers' local reference folder or a
# local path instead of a public source (the repository must build, test and reproduce every
# figure from a fresh clone). Patterns are assembled so that this file does not match itself.
#
# Usage: scripts/check-self-contained.sh [REPO_ROOT]
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root"
up='\.\./'"shared"
data="shared"'/data'
local_root='/'"work"'/'
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  # Tracked files plus new files not yet committed (so a failing test can be seen before a commit).
  if git grep -n --untracked -I -e "$up" -e "$data" -e "$local_root" -- . ':!build*'; then
    echo "check-self-contained: the files above name a local folder; cite the public source" >&2
    exit 1
  fi
else
  if grep -rnI --exclude-dir=build --exclude-dir=.git --exclude-dir=node_modules -e "$up" -e "$data" -e "$local_root" .; then
    echo "check-self-contained: the files above name a local folder; cite the public source" >&2
    exit 1
  fi
fi
echo "check-self-contained: no local paths in the repository"
