#!/usr/bin/env bash
# `make setup`: bring a fresh Debian machine (or a used one) to the state every other target needs.
# Idempotent: each step is skipped when its stamp matches its inputs, so a second run takes seconds.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=tools/common.sh
. tools/common.sh

# Debian packages the test suite uses: the lab (podman, runc, debootstrap, apt-cacher-ng, iptables),
# a local Open MPI so the benchmark runs on the controller too, shellcheck for ansible-test sanity, and tclsh to read
# the modulefile quoting back.
SYSTEM_PACKAGES=(podman runc debootstrap apt-cacher-ng iptables openmpi-bin libopenmpi-dev python3-mpi4py python3-numpy shellcheck tar gzip tcl)
# Collections the roles and tests use, taken from the PyPI 'ansible' bundle because Galaxy is unreachable here.
ANSIBLE_BUNDLE="ansible==14.5.0"
COLLECTIONS_DIR="$CACHE/collections"
COLLECTIONS=(ansible.posix community.general community.crypto ansible.netcommon ansible.utils
             arista.eos containers.podman community.library_inventory_filtering_v1)

pick_python() {
  local c
  for c in python3.12 \
           "$HOME"/.pyenv/versions/3.12*/bin/python3.12 python3.11 "$HOME"/.pyenv/versions/3.11*/bin/python3.11 python3; do
    # pyenv shims exist for versions that are not active; only a Python that runs counts. The interpreter behind a
    # venv is named, not the venv's own: .venv's python3.12 (first on make's PATH) goes when .venv is rebuilt
    if "$c" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1; then
      "$c" -c 'import sys; print(getattr(sys, "_base_executable", sys.executable))'; return 0
    fi
  done
  return 1
}

system_packages() {
  local missing=() p
  for p in "${SYSTEM_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null || die "Debian packages missing (${missing[*]}) and this is not a Debian/Ubuntu machine: install them by hand"
  [ "$(id -u)" -eq 0 ] || die "Debian packages missing (${missing[*]}): run 'make setup' as root or 'sudo apt-get install ${missing[*]}'"
  step "installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

python_venv() {
  local py want
  py="$(pick_python)" || die "no Python >= 3.11 with venv found: install python3 (3.11+) and python3-venv"
  want="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])') $(sha256sum requirements-dev.txt | cut -c1-16)"
  if [ -x "$VENV/bin/python" ] && [ "$(cat "$VENV/.stamp" 2>/dev/null)" = "$want" ]; then return 0; fi
  step "python venv in .venv with $py"
  rm -rf "$VENV"
  "$py" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q -r requirements-dev.txt
  echo "$want" > "$VENV/.stamp"
}

collections() {
  local want
  want="$ANSIBLE_BUNDLE ${COLLECTIONS[*]}"
  mkdir -p "$COLLECTIONS_DIR/ansible_collections/hpcfabric"
  # playbooks and molecule run from a checkout resolve hpcfabric.cluster.* to this working tree
  ln -sfn "$ROOT" "$COLLECTIONS_DIR/ansible_collections/hpcfabric/cluster"
  [ "$(cat "$COLLECTIONS_DIR/.stamp" 2>/dev/null)" = "$want" ] && return 0
  step "dependency collections from the PyPI '$ANSIBLE_BUNDLE' bundle"
  mkdir -p "$CACHE/wheels"
  ls "$CACHE"/wheels/"${ANSIBLE_BUNDLE/==/-}"-*.whl >/dev/null 2>&1 ||
    "$VENV/bin/python" -m pip download -q --no-deps "$ANSIBLE_BUNDLE" -d "$CACHE/wheels"
  "$VENV/bin/python" tools/extract_collections.py "$(ls "$CACHE"/wheels/"${ANSIBLE_BUNDLE/==/-}"-*.whl)" \
    "$COLLECTIONS_DIR" "${COLLECTIONS[@]}"
  echo "$want" > "$COLLECTIONS_DIR/.stamp"
}

ansible_test_bootstrap() {
  # ansible-test downloads a get-pip script from a host that is unreachable here; give it a stand-in
  # under the exact name it looks for, which bootstraps pip with ensurepip and then installs from PyPI.
  local ver path
  ver="$("$VENV/bin/python" - <<'PY'
import pathlib, re, ansible_test
src = pathlib.Path(ansible_test.__file__).parent / '_internal' / 'python_requirements.py'
print(re.search(r"pip='([0-9.]+)'", src.read_text()).group(1))
PY
)"
  path="$HOME/.ansible/test/cache/get_pip_${ver//./_}.py"
  [ -f "$path" ] && cmp -s tools/get_pip_offline.py "$path" && return 0
  mkdir -p "$(dirname "$path")"
  cp tools/get_pip_offline.py "$path"
}

system_packages
python_venv
collections
ansible_test_bootstrap
step "setup done ($("$VENV/bin/ansible" --version | head -1), $("$VENV/bin/python" --version))"
