#!/usr/bin/env bash
# Remakes the report screenshots in docs/ (committed once; CI renders the same reports in
# Chromium as tests: Report.CpuSweepReportRendersInChromium, Report.H200ResultsReportRendersInChromium):
#   docs/report-cpu-sweep.png  the report of a CPU-device sweep (tests/report/fixtures/cpu_sweep,
#                              made by the pkb sweep command in its README)
#   docs/report-h200.png       the report of the H200 runs in bench/results/
# Each is the top of the page at a 1366 px laptop width, checked by check_layout.py first.
set -euo pipefail
cd "$(dirname "$0")/../.."
pkb=${PKB:-build/pkb}
chromium=$(command -v chromium || command -v chromium-browser)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$pkb" report tests/report/fixtures/cpu_sweep --html "$tmp/cpu.html" >/dev/null
python3 tests/report/check_layout.py "$chromium" "$tmp/cpu.html" --shot docs/report-cpu-sweep.png --height 2600
"$pkb" report bench/results/h200-2026-12-01/results.jsonl bench/results/h200-2026-11-29/results.jsonl \
  --html "$tmp/h200.html" >/dev/null
python3 tests/report/check_layout.py "$chromium" "$tmp/h200.html" --shot docs/report-h200.png --height 3000
