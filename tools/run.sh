#!/usr/bin/env bash
# The test stages behind `make lint|sanity|unit|molecule|build|test`. Run `make setup` first (make does).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=tools/common.sh
. tools/common.sh
[ -x "$VENV/bin/ansible" ] || die "no .venv: run 'make setup' first"
PYVER="$("$VENV/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
# ansible-test insists on a real (not symlinked) path ending in ansible_collections/NS/NAME, and finds no
# files at all under a hidden directory such as .cache: keep its copy in a temporary folder of this checkout's own.
AT_ROOT="${ANSIBLE_TEST_BASE:-${TMPDIR:-/tmp}/hpcfabric-ansible-test-$(printf '%s' "$ROOT" | md5sum | cut -c1-8)}/ansible_collections/hpcfabric/cluster"

sync_ansible_test_tree() {
  rm -rf "$AT_ROOT"
  mkdir -p "$AT_ROOT"
  # the files git would commit (tracked or new, minus ignored ones), so caches and venvs never leak in
  git ls-files -z --cached --others --exclude-standard |
    python3 -c 'import os, sys; sys.stdout.write("".join(p + "\0" for p in sys.stdin.read().split("\0") if p and os.path.lexists(p)))' |
    tar --null -T - -cf - | tar -xf - -C "$AT_ROOT"
}

stage_ansible_lint() {
  ansible-lint --offline --profile production
}

stage_sanity() {
  sync_ansible_test_tree
  (cd "$AT_ROOT" && ansible-test sanity --python "$PYVER" --color no "$@")
}

stage_units() {
  sync_ansible_test_tree
  # ansible-test finds the collections a test imports beside the one it tests: the property test writes /etc/fstab
  # lines with ansible.posix.mount's own escaping
  rm -rf "$AT_ROOT/../../ansible/posix"
  mkdir -p "$AT_ROOT/../../ansible"
  cp -r "$CACHE/collections/ansible_collections/ansible/posix" "$AT_ROOT/../../ansible/posix"
  # --local: .venv has what the tests import (requirements-dev.txt); a venv of ansible-test's own would install it all
  # again from PyPI on every run
  (cd "$AT_ROOT" && ansible-test units --local --python "$PYVER" --color no "$@")
}

stage_pytest() {
  # no lab needed: the playbooks against inventories the tests write (inventory checks, per-OS variables), and the
  # benchmark scripts under this machine's Open MPI, and what `make gpu-proof` does where there is no GPU
  # two workers: most of the time is ansible-playbook starting up, and CI machines have two cores
  python -m pytest tests/playbooks tests/bench tests/gpu -q -p no:cacheprovider -n 2
}

# A scenario's result is kept under the hash of every file that can change it (the git-visible tree minus docs, the
# other scenarios and the lab-free tests) and the tool versions: a rerun on the same files is answered from that
# record, as build systems cache test results. A fresh checkout (CI) has no record and runs everything.
scenario_key() {
  { git ls-files -z --cached --others --exclude-standard | python3 tools/tree_hash.py "molecule/$1"
    ansible --version | head -1; molecule --version | head -1; podman --version; } | sha256sum | cut -c1-40
}

# run "$@" as the test NAME, unless it passed on these same files (scenario_key NAME)
run_cached() {
  local name="$1" key stamp
  shift
  key="$(scenario_key "$name")"
  stamp="$CACHE/test-results/molecule-$name.$key"
  if [ -e "$stamp" ] && [ -z "${MOLECULE_RERUN:-}" ]; then
    echo "$name: passed $(date -r "$stamp" '+%F %T') on these same files (key ${key:0:12}); not rerun (MOLECULE_RERUN=1 reruns)"
    return 0
  fi
  step "$name"
  if "$@"; then
    mkdir -p "$CACHE/test-results"
    rm -f "$CACHE/test-results/molecule-$name".*
    touch "$stamp"
  else
    echo "$name FAILED"; return 1
  fi
}

# Which scenarios: all (`make molecule`), shared (tools/lab's own test and the scenarios that may run beside other
# work) or alone (those with an .alone file: their verify measures the lab's bandwidth, so nothing else may share
# the cores meanwhile). `shared LANE LANES` takes every LANES-th shared scenario from the LANE-th (0-based), tools/lab's
# test in the last lane, so that lanes of shared scenarios run side by side, each on labs of its own.
stage_molecule() {
  local which="${1:-all}" lane="${2:-0}" lanes="${3:-1}" s rc=0 index=0
  # what every scenario assumes of a lab before any role runs, on a lab of its own
  if [ "$which" != alone ] && [ "$lane" -eq $((lanes - 1)) ]; then
    run_cached tools-lab env HPCFABRIC_LAB_TEST=1 python -m pytest tests/lab -q -p no:cacheprovider || rc=1
  fi
  for s in molecule/*/molecule.yml; do
    s="$(basename "$(dirname "$s")")"
    case "$which" in
      shared) [ ! -e "molecule/$s/.alone" ] || continue ;;
      alone) [ -e "molecule/$s/.alone" ] || continue ;;
    esac
    # a scenario with an .optional file is too slow for every run (e.g. building Open MPI): run it by hand
    if [ -e "molecule/$s/.optional" ] && [ -z "${MOLECULE_OPTIONAL:-}" ]; then
      [ "$lane" -ne 0 ] || echo "molecule scenario $s: optional, skipped (MOLECULE_OPTIONAL=1 runs it)"
      continue
    fi
    index=$((index + 1))
    [ $(((index - 1) % lanes)) -eq "$lane" ] || continue
    run_cached "$s" molecule test -s "$s" || rc=1
  done
  return $rc
}

stage_build() {
  local dist="$CACHE/dist" inst tarball p kind
  rm -rf "$dist"
  ansible-galaxy collection build --force --output-path "$dist" >/dev/null
  tarball="$(ls "$dist"/hpcfabric-cluster-*.tar.gz)"
  echo "built $(basename "$tarball"): $(du -k "$tarball" | cut -f1) KiB, $(tar -tzf "$tarball" | grep -vc '/$') files"
  if tar -tzf "$tarball" | grep -E '(^|/)(\.venv|\.cache|__pycache__|tests/output|\.git)(/|$)'; then
    die "the tarball contains caches or venvs (listed above): fix build_ignore in galaxy.yml"
  fi
  inst="$(mktemp -d)"
  trap 'rm -rf "$inst"' RETURN
  ANSIBLE_COLLECTIONS_PATH="$inst" ansible-galaxy collection install --offline --no-deps -p "$inst" "$tarball" >/dev/null
  # the installed copy must document every plugin the source tree has: a module or filter file documents the plugin
  # named as the file, except a file of several filters, whose filters are documented each in its own <name>.yml
  for p in plugins/modules/*.py plugins/filter/*.py plugins/filter/*.yml; do
    [ -e "$p" ] || continue
    case "$p" in plugins/filter/*.py) grep -q '^DOCUMENTATION' "$p" || continue ;; esac
    kind="$(basename "$(dirname "$p")")"; kind="${kind%s}"; p="hpcfabric.cluster.$(basename "${p%.*}")"
    ANSIBLE_COLLECTIONS_PATH="$inst" ansible-doc -t "$kind" "$p" >/dev/null || die "ansible-doc -t $kind $p failed on the installed tarball"
    echo "ansible-doc -t $kind $p: ok"
  done
  # what ansible-builder puts into an execution environment from the installed copy (building one needs a base image
  # from a registry, which CI cannot reach): every requirement of the collection's own files, nothing else
  local want got
  want="$( (grep -v '^#' requirements.txt; grep -v '^#' bindep.txt) | grep . | sed 's/$/  # from collection hpcfabric.cluster/' | sort)"
  got="$(ansible-builder introspect "$inst" | sed -n "s/^- '\(.*\)'$/\1/p" | sort)"
  [ "$want" = "$got" ] || die "ansible-builder introspect of the installed tarball gives:\n$got\nexpected:\n$want"
  echo "ansible-builder introspect: $(echo "$got" | wc -l) requirements from meta/execution-environment.yml: ok"
  # what Galaxy and Automation Hub run on upload: galaxy-importer, without a container (tools/galaxy-importer.cfg; its
  # ansible-lint is the ansible-lint stage's). An error or no success fails the stage; its warnings are shown. It sees
  # the collection alone, so the dependency collections come in on Python's path (Ansible looks for collections there
  # too); it writes its result file in the working directory.
  local gi gi_start gi_rc=0 d
  gi="$(mktemp -d)"
  trap 'rm -rf "$inst" "$gi"' RETURN
  mkdir -p "$gi/deps/ansible_collections"
  for d in "$CACHE"/collections/ansible_collections/*; do
    [ "$(basename "$d")" = hpcfabric ] || ln -s "$d" "$gi/deps/ansible_collections/"
  done
  gi_start=$SECONDS
  (cd "$gi" && PYTHONPATH="$gi/deps" GALAXY_IMPORTER_CONFIG="$ROOT/tools/galaxy-importer.cfg" GALAXY_IMPORTER_TMP_ROOT_DIR="$gi" \
    GALAXY_IMPORTER_ANSIBLE_LOCAL_TMP="$gi/ansible-tmp" python -m galaxy_importer.main "$tarball") > "$gi/log" 2>&1 || gi_rc=$?
  grep -v '^Loading ' "$gi/log" | sed 's/^/  galaxy-importer: /'
  if [ "$gi_rc" -ne 0 ] || grep -qE '^(ERROR|CRITICAL|WARNING: (ERROR|CRITICAL))' "$gi/log" ||
     ! grep -q '^Importer processing completed successfully' "$gi/log"; then
    die "galaxy-importer rejects $(basename "$tarball") (its output above)"
  fi
  echo "galaxy-importer: $(grep -c '^WARNING' "$gi/log") warnings, $((SECONDS - gi_start))s: ok"
}

record_stage() {  # NAME SECONDS RC: one line of the summary
  local verdict=passed
  if [ "$3" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); verdict=FAILED; fi
  summary+="$(printf '  %-16s %s  %5ss' "$1" "$verdict" "$2")"$'\n'
}

# the stages "$@" one after another; one line "NAME SECONDS RC" per stage on fd 3
run_stages() {
  local s start rc
  for s in "$@"; do
    start=$SECONDS
    step "stage ${s//_/-}"
    rc=0; (set -e; "stage_$s") || rc=$?
    echo "${s//_/-} $((SECONDS - start)) $rc" >&3
  done
}

# The labs wait on apt, SSH and systemd far more than they compute, so the shared scenarios run in the background, in
# SHARED_LANES lanes side by side, and the scenarios with .alone (their verify measures the lab's bandwidth) after
# them, without other labs. The lab-free stages take the cores the labs leave: NICE_STAGES one after another from the
# start at nice 19, so the kernel runs them only where no scenario wants the core; pytest at the usual priority beside
# the lanes, as its tests time stand-in servers, and before the .alone scenarios start.
SHARED_LANES=2
NICE_STAGES=(sanity units ansible_lint build)
run_all() {
  local start rc lane lane_start lane_pids=() lane_rc=0 lane_logs=() passed=0 failed=0 summary="" name secs
  local results="$CACHE/test-logs/stages" nice_log="$CACHE/test-logs/nice-stages.log" nice_pid
  mkdir -p "$CACHE/test-logs"
  : > "$results"
  lane_start=$SECONDS
  for lane in $(seq 0 $((SHARED_LANES - 1))); do
    lane_logs+=("$CACHE/test-logs/molecule-shared-$lane.log")
    step "stage molecule-shared, lane $((lane + 1)) of $SHARED_LANES: in the background (output: ${lane_logs[lane]}, shown when it ends)"
    (set -e; stage_molecule shared "$lane" "$SHARED_LANES") > "${lane_logs[lane]}" 2>&1 &
    lane_pids+=($!)
  done
  step "stages ${NICE_STAGES[*]//_/-}: in the background at nice 19 (output: $nice_log, shown when they end)"
  (renice -n 19 -p "$BASHPID" > /dev/null || true; run_stages "${NICE_STAGES[@]}" 3>> "$results") > "$nice_log" 2>&1 &
  nice_pid=$!
  run_stages pytest 3>> "$results"
  for lane in "${!lane_pids[@]}"; do
    wait "${lane_pids[lane]}" || lane_rc=1
    step "stage molecule-shared, lane $((lane + 1)) of $SHARED_LANES: ended; its output"
    cat "${lane_logs[lane]}"
  done
  echo "molecule-shared $((SECONDS - lane_start)) $lane_rc" >> "$results"
  start=$SECONDS
  step "stage molecule-alone"
  rc=0; (set -e; stage_molecule alone) || rc=$?
  echo "molecule-alone $((SECONDS - start)) $rc" >> "$results"
  wait "$nice_pid" || true
  step "stages ${NICE_STAGES[*]//_/-}: ended; their output"
  cat "$nice_log"
  # a stage that never reported (its shell died) fails the run rather than going missing from the summary
  for name in pytest "${NICE_STAGES[@]//_/-}" molecule-shared molecule-alone; do
    grep -q "^$name " "$results" || echo "$name 0 1" >> "$results"
  done
  while read -r name secs rc; do record_stage "$name" "$secs" "$rc"; done < "$results"
  echo
  echo "make test stages (each from its own start; ${NICE_STAGES[*]//_/-} at nice 19 beside the others), $((SECONDS - lane_start))s in all:"
  printf '%s' "$summary"
  echo "stages: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}

# `tools/run.sh sanity|units [ansible-test targets...]` narrows a stage to some files while working on them
cmd="${1:-}"; shift || true
case "$cmd" in
  ansible-lint) stage_ansible_lint ;;
  sanity) stage_sanity "$@" ;;
  units) stage_units "$@" ;;
  pytest) stage_pytest ;;
  molecule) stage_molecule ;;
  build) stage_build ;;
  test) run_all ;;
  *) die "usage: tools/run.sh ansible-lint|sanity|units|pytest|molecule|build|test" ;;
esac
