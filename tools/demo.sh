#!/usr/bin/env bash
# `make demo`: the whole product on the local lab — lab up (if needed), site.yml, then the validation.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=tools/common.sh
. tools/common.sh
LAB_NODES="${LAB_NODES:-4}"
# the lab's SONiC stand-in switch (switch01): site.yml configures it over SSH and reads it back
export LAB_SWITCH="${LAB_SWITCH:-1}"

start=$SECONDS
step "lab with $LAB_NODES nodes$([ "$LAB_SWITCH" = 0 ] || echo ' and a SONiC stand-in switch')"
tools/lab up "$LAB_NODES"
step "site.yml on the lab: the whole stack, then the validation"
ansible-playbook -i inventories/lab site.yml
report_dir="$(ansible-inventory -i inventories/lab --host node01 |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["validate_report_dir"])')"
step "demo done in $((SECONDS - start))s; the lab stays up ('make lab-down' removes it)"
echo "validation report: $report_dir/report.md (report.json and allreduce.png beside it)"
