#!/usr/bin/env bash
# `make demo`: the whole product on the local lab — lab up (if needed), site.yml, then the validation.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=tools/common.sh
. tools/common.sh
LAB_NODES="${LAB_NODES:-4}"

start=$SECONDS
step "lab with $LAB_NODES nodes"
tools/lab up "$LAB_NODES"
step "site.yml on the lab"
ansible-playbook -i inventories/lab site.yml
if [ -f playbooks/validate.yml ]; then
  step "validation"
  ansible-playbook -i inventories/lab playbooks/validate.yml
fi
step "demo done in $((SECONDS - start))s; the lab stays up ('make lab-down' removes it)"
