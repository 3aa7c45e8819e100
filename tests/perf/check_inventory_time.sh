#!/usr/bin/env bash
# Wall time of playbooks/check_inventory.yml on synthetic inventories (default 128 and 1024 nodes, 8 rails each).
# Usage: tests/perf/check_inventory_time.sh [NODES...]     (run `make setup` first)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for n in "${@:-128 1024}"; do
  for count in $n; do
    .venv/bin/python tests/perf/gen_inventory.py "$count" "$tmp/$count"
    start=$(date +%s.%N)
    .venv/bin/ansible-playbook -i "$tmp/$count" playbooks/check_inventory.yml >"$tmp/$count.log" 2>&1 ||
      { tail -20 "$tmp/$count.log"; exit 1; }
    printf 'check_inventory.yml, %5d nodes x 8 rails: %6.1f s\n' "$count" "$(echo "$(date +%s.%N) - $start" | bc)"
  done
done
