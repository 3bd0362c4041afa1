#!/usr/bin/env bash
# Installs what is missing and builds pkb into build/: scripts/install-deps.sh, then
# scripts/build.sh (extra arguments go to cmake; PKB_TARGETS names the targets, else all).
# Where torch is still to be installed, its wheel (some 3 GB) downloads while the libraries
# that never include torch, half of a cold build's compiling, compile; then the rest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --system
if ! scripts/install-deps.sh --check-torch; then
  scripts/install-deps.sh --torch &
  wheel=$!
  trap 'kill $wheel 2>/dev/null || true' EXIT
  PKB_TARGETS= scripts/build.sh -DPKB_TORCH_FREE_ONLY=ON  # everything there is in that configuration
  wait "$wheel"
  trap - EXIT
fi
scripts/build.sh "$@"
