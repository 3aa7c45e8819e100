# Shared by the tools/*.sh scripts: paths and messages.
# shellcheck shell=bash
# the paths are read by the scripts that source this file
# shellcheck disable=SC2034
VENV="$ROOT/.venv"
CACHE="$ROOT/.cache"
export NO_COLOR=1 PY_COLORS=0 ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0 PIP_DISABLE_PIP_VERSION_CHECK=1
export PATH="$VENV/bin:$PATH"
step() { echo "=== [$(date +%T)] $*"; }
die() { echo "error: $*" >&2; exit 1; }
