#!/usr/bin/env bash
# Wall time of playbooks/check_inventory.yml on synthetic inventories (default 128 and 1024 nodes, 8 rails each),
# against a one-task play that only reads every node's variables, measured in the same run: the ratio is what the
# checks cost over reading the inventory at all (these machines are shared and noisy; absolute seconds drift).
# Usage: tests/perf/check_inventory_time.sh [NODES...]     (run `make setup` first)
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,5{s/^# \{0,1\}//;p}' "$0"; exit 0 ;; esac
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/read_all.yml" <<'PLAY'
- name: Read every node's variables once
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Touch each node's fabric interfaces
      ansible.builtin.debug:
        msg: "{{ groups['gpu_nodes'] | map('extract', hostvars) | map(attribute='fabric_network_interfaces') | map('length') | sum }}"
PLAY
seconds() {
  local start log="$1"; shift
  start=$(date +%s.%N)
  # runs in $(...): a failure's log goes to stderr, or the caller would swallow it
  .venv/bin/ansible-playbook "$@" >"$log" 2>&1 || { tail -20 "$log" >&2; echo "ansible-playbook $* failed" >&2; exit 1; }
  echo "$(date +%s.%N) - $start" | bc
}
for n in "${@:-128 1024}"; do
  for count in $n; do
    .venv/bin/python tests/perf/gen_inventory.py "$count" "$tmp/$count"
    base=$(seconds "$tmp/$count.read.log" -i "$tmp/$count" "$tmp/read_all.yml")
    check=$(seconds "$tmp/$count.check.log" -i "$tmp/$count" playbooks/check_inventory.yml)
    printf '%5d nodes x 8 rails: check_inventory.yml %6.1f s, reading every node once %6.1f s, ratio %.2f\n' \
      "$count" "$check" "$base" "$(echo "$check / $base" | bc -l)"
  done
done
