#!/usr/bin/env bash
# Wall time of site.yml on a lab of its own, cold (fresh nodes) and re-run (nothing to change), per node count.
# Usage: tests/perf/site_wall_time.sh [NODES...]   (default 2 4; run `make setup` first; root, as for the lab)
# The lab's node image and apt cache are reused, so "cold" means fresh nodes, not a cold package cache.
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,4{s/^# \{0,1\}//;p}' "$0"; exit 0 ;; esac
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
export PATH="$ROOT/.venv/bin:$PATH" ANSIBLE_NOCOLOR=1
export LAB_DIR="$ROOT/.cache/lab-perf" LAB_NAME=perflab LAB_MGMT_SUBNET=10.77.9.0/24 LAB_FABRIC_SUBNET=10.78.9.0/24
export LAB_PROXY_PORT=3149 LAB_INVENTORY="$ROOT/.cache/lab-perf/inventory"
log="$(mktemp)"
trap 'tools/lab down >/dev/null 2>&1 || true; rm -f "$log"' EXIT

timed_site() {
  local start=$SECONDS
  ansible-playbook -i "$LAB_INVENTORY" site.yml >"$log" 2>&1 || { tail -30 "$log"; echo "site.yml failed" >&2; exit 1; }
  echo "$((SECONDS - start)) s, $(grep -cE '^node[0-9]+ +: .*changed=0 ' "$log") of $1 nodes changed=0"
}

[ "$#" -gt 0 ] || set -- 2 4
for n in "$@"; do
  tools/lab down >/dev/null 2>&1 || true
  tools/lab up "$n" >/dev/null
  echo "site.yml, $n nodes, cold:   $(timed_site "$n")"
  echo "site.yml, $n nodes, re-run: $(timed_site "$n")"
done
