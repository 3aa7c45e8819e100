#!/usr/bin/env bash
# `make gpu-proof`: prove the GPU path on this NVIDIA node, which needs no network and compiles nothing - install the
# CUDA-aware `source` flavour with the mpi role from the package the bundle carries (`make gpu-proof-bundle`), read
# the facts, run every allreduce engine on GPU buffers with 2 ranks beside the node's own limit (the ipc engine) and
# the smoke training, write JSON, the validation report and a one-page summary to GPU_PROOF_OUT, and exit non-zero on
# any wrong result or a ring below its share of that limit. docs/gpu_proof.md says what it checks.
#
#   tests/gpu/proof.sh           the whole proof
#   tests/gpu/proof.sh --check   only what the machine lacks: one line (nothing when it lacks nothing), in seconds
#
# Settings (environment): GPU_PROOF_OUT (.cache/gpu-proof), GPU_PROOF_BUNDLE (.cache/gpu-proof-bundle),
# GPU_PROOF_PYTHON (python3: the Python with CuPy), GPU_PROOF_CUDA_HOME (the toolkit of the nvcc on PATH, else
# /usr/local/cuda), GPU_PROOF_WORK (.cache/gpu-proof-work: Ansible's venv and collections path), GPU_PROOF_RANKS (2),
# GPU_PROOF_MIN_BYTES (1M), GPU_PROOF_MAX_BYTES (256M), GPU_PROOF_ITERS (20), GPU_PROOF_ENGINES (auto: ring, mpi and
# ipc, and nccl where the GPU Python's NCCL lets two ranks share a GPU; a comma list of them otherwise, the first
# judged), GPU_PROOF_LIMIT_FRACTION (0.5: the judged engine's busbw from 256 MiB up, or at the largest size if smaller,
# must reach this share of the ipc engine's there), GPU_PROOF_JOB_TIMEOUT (900 s per MPI job).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/tests/gpu"
OUT="${GPU_PROOF_OUT:-$ROOT/.cache/gpu-proof}"
BUNDLE="${GPU_PROOF_BUNDLE:-$ROOT/.cache/gpu-proof-bundle}"
WORK="${GPU_PROOF_WORK:-$ROOT/.cache/gpu-proof-work}"
PY="${GPU_PROOF_PYTHON:-python3}"
RANKS="${GPU_PROOF_RANKS:-2}"
MIN_BYTES="${GPU_PROOF_MIN_BYTES:-1M}"
MAX_BYTES="${GPU_PROOF_MAX_BYTES:-256M}"
ITERS="${GPU_PROOF_ITERS:-20}"
ENGINES="${GPU_PROOF_ENGINES:-auto}"
FRACTION="${GPU_PROOF_LIMIT_FRACTION:-0.5}"
JOB_TIMEOUT="${GPU_PROOF_JOB_TIMEOUT:-900}"
export NO_COLOR=1 ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0 PIP_DISABLE_PIP_VERSION_CHECK=1

# every way this script stops is one line on stdout
stop() { echo "gpu-proof: $*"; exit 1; }

settings_problems() {
  local problems=()
  [[ "$RANKS" =~ ^[0-9]+$ && "$RANKS" -ge 2 ]] || problems+=("GPU_PROOF_RANKS must be a whole number >= 2, got '$RANKS'")
  [[ "$ITERS" =~ ^[0-9]+$ && "$ITERS" -ge 1 ]] || problems+=("GPU_PROOF_ITERS must be a whole number >= 1, got '$ITERS'")
  [[ "$ENGINES" =~ ^(auto|(ring|mpi|nccl|ipc)(,(ring|mpi|nccl|ipc))*)$ ]] || problems+=("GPU_PROOF_ENGINES must be auto or a comma list of ring, mpi, nccl and ipc, got '$ENGINES'")
  [[ "$JOB_TIMEOUT" =~ ^[0-9]+$ && "$JOB_TIMEOUT" -ge 1 ]] || problems+=("GPU_PROOF_JOB_TIMEOUT must be seconds >= 1, got '$JOB_TIMEOUT'")
  [[ "$FRACTION" =~ ^(0([.][0-9]+)?|1([.]0+)?)$ ]] || problems+=("GPU_PROOF_LIMIT_FRACTION must be a number from 0 to 1, got '$FRACTION'")
  local size
  for size in "$MIN_BYTES" "$MAX_BYTES"; do
    [[ "$size" =~ ^[0-9]+[KMG]?$ ]] || problems+=("GPU_PROOF_MIN_BYTES/GPU_PROOF_MAX_BYTES must be bytes or a K, M or G size, got '$size'")
  done
  local IFS='; '
  [ "${#problems[@]}" -eq 0 ] || echo "${problems[*]}"
}

# prints nothing, or the one line that says everything this machine lacks
check() {
  local bad runner
  bad="$(settings_problems)"
  [ -z "$bad" ] || { echo "gpu-proof: bad settings: $bad"; return 1; }
  # the preflight is plain Python 3: the system's, or the GPU Python when there is no python3 on PATH
  runner="$(command -v python3 || command -v "$PY" || true)"
  [ -n "$runner" ] || { echo "gpu-proof: cannot run here: no python3 on PATH and GPU Python '$PY' not found (set GPU_PROOF_PYTHON)"; return 1; }
  local out rc=0
  out="$("$runner" "$HERE/preflight.py" --bundle "$BUNDLE" --python "$PY" ${GPU_PROOF_CUDA_HOME:+--cuda-home "$GPU_PROOF_CUDA_HOME"} "$@" 2>&1)" || rc=$?
  [ "$rc" -ne 0 ] || return 0
  case "$out" in
    "gpu-proof: "*) echo "$out" ;;
    *) out="${out##*$'\n'}"; echo "gpu-proof: cannot run here: $runner could not run tests/gpu/preflight.py (exit $rc): ${out:-no output}" ;;
  esac
  return 1
}

if [ "${1:-}" = --check ]; then
  check
  exit $?
fi
[ $# -eq 0 ] || stop "usage: tests/gpu/proof.sh [--check]"

# the outputs folder is the proof's own: a rerun replaces it, a folder holding anything else is left alone
if [ -e "$OUT" ] && [ ! -e "$OUT/.gpu-proof" ] && [ -n "$(ls -A "$OUT" 2>/dev/null)" ]; then
  stop "GPU_PROOF_OUT $OUT is not empty and is not an earlier proof's folder: choose another"
fi
rm -rf "$OUT"
mkdir -p "$OUT" "$WORK"
touch "$OUT/.gpu-proof"
START=$SECONDS

line="$(check --report "$OUT/preflight.json")" || stop "${line#gpu-proof: }"
PY="$(command -v "$PY")"
CUDA_HOME_USED="$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["cuda_home"])' "$OUT/preflight.json")"

# Ansible from the bundle's wheels, in a venv of the GPU Python (its version is the one the wheels are for); pip runs
# from its own wheel, so the venv needs no ensurepip. Made again when the bundle changes.
VENV="$WORK/ansible-venv"
stamp="$(sha256sum "$BUNDLE/manifest.json" | cut -c1-64)"
if [ "$(cat "$VENV/.bundle" 2>/dev/null)" != "$stamp" ]; then
  echo "gpu-proof: installing Ansible from the bundle into $VENV"
  rm -rf "$VENV"
  "$PY" -m venv --without-pip "$VENV" >"$OUT/setup.log" 2>&1 || stop "could not create $VENV with $PY -m venv (see $OUT/setup.log)"
  pip_wheel="$(ls "$BUNDLE"/wheels/pip-*.whl)"
  core="$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["ansible_core"])' "$BUNDLE/manifest.json")"
  "$VENV/bin/python" "$pip_wheel/pip" install --quiet --no-index --find-links "$BUNDLE/wheels" \
    "ansible-core==$core" nvidia-ml-py >>"$OUT/setup.log" 2>&1 || stop "pip could not install ansible-core $core from $BUNDLE/wheels (see $OUT/setup.log)"
  echo "$stamp" >"$VENV/.bundle"
fi

# this checkout is the collection; it needs no other collection for what the proof runs
COLLECTIONS="$WORK/collections"
mkdir -p "$COLLECTIONS/ansible_collections/hpcfabric"
ln -sfn "$ROOT" "$COLLECTIONS/ansible_collections/hpcfabric/cluster"

png=false
"$PY" -c 'import matplotlib' 2>/dev/null && png=true
# the settings reach Python through its environment, never through its source text
GP_BUNDLE="$BUNDLE" GP_WORK="$WORK" GP_OUT="$OUT" GP_ROOT="$ROOT" GP_PYTHON="$PY" GP_CUDA_HOME="$CUDA_HOME_USED" \
  GP_RANKS="$RANKS" GP_MIN_BYTES="$MIN_BYTES" GP_MAX_BYTES="$MAX_BYTES" GP_ITERS="$ITERS" GP_FRACTION="$FRACTION" GP_ENGINES="$ENGINES" \
  GP_JOB_TIMEOUT="$JOB_TIMEOUT" GP_PNG="$png" "$VENV/bin/python" - <<'EOF' || stop "could not write the proof's inventory in $WORK"
import json, os
env = os.environ
bundle, work = env['GP_BUNDLE'], env['GP_WORK']
with open(os.path.join(bundle, 'manifest.json')) as handle:
    manifest = json.load(handle)
with open(os.path.join(env['GP_OUT'], 'preflight.json')) as handle:
    preflight = json.load(handle)
package = manifest['mpi_package']
engines = ','.join(preflight['engines']) if env['GP_ENGINES'] == 'auto' else env['GP_ENGINES']
settings = {
    # the mpi role: the bundle's CUDA-aware package (no host compiles), mpi4py's wheel into a venv of the GPU Python
    'mpi_flavour': 'source', 'mpi_cuda': True, 'mpi_cuda_home': env['GP_CUDA_HOME'],
    'mpi_source_package_src': os.path.join(bundle, package['file']),
    'mpi_source_package_checksum': 'sha256:' + manifest['files'][package['file']]['sha256'],
    'mpi_source_ompi_version': package['versions']['ompi'], 'mpi_source_ucx_version': package['versions']['ucx'],
    'mpi_mpi4py_package': 'mpi4py==' + manifest['mpi4py'], 'mpi_mpi4py_wheelhouse_src': os.path.join(bundle, 'wheelhouse'),
    'mpi_mpi4py_python': env['GP_PYTHON'],
    # one node, maybe without an RDMA device: pml ucx over shared memory and the cuda transports
    'mpi_mca_params_extra': {'pml_ucx_tls': 'any', 'pml_ucx_devices': 'any'},
    'gpu_proof_out': env['GP_OUT'], 'gpu_proof_python': env['GP_PYTHON'], 'gpu_proof_dir': os.path.join(env['GP_ROOT'], 'tests', 'gpu'),
    'gpu_proof_bench_dir': os.path.join(env['GP_ROOT'], 'files', 'bench'),
    'gpu_proof_ranks': int(env['GP_RANKS']), 'gpu_proof_min_bytes': env['GP_MIN_BYTES'], 'gpu_proof_max_bytes': env['GP_MAX_BYTES'],
    'gpu_proof_iters': int(env['GP_ITERS']), 'gpu_proof_limit_fraction': float(env['GP_FRACTION']),
    'gpu_proof_engines': engines, 'gpu_proof_nccl_note': preflight['nccl_note'] if env['GP_ENGINES'] == 'auto' else None,
    'gpu_proof_job_timeout': int(env['GP_JOB_TIMEOUT']), 'gpu_proof_png': env['GP_PNG'] == 'true',
}
host = {'ansible_connection': 'local', 'ansible_python_interpreter': os.path.join(work, 'ansible-venv', 'bin', 'python')}
with open(os.path.join(work, 'settings.json'), 'w') as handle:
    json.dump(settings, handle, indent=2)
with open(os.path.join(work, 'inventory.json'), 'w') as handle:
    json.dump({'all': {'children': {'gpu_nodes': {'hosts': {os.uname().nodename.split('.')[0]: host}}}}}, handle, indent=2)
EOF

echo "gpu-proof: installing the bundle's CUDA-aware UCX and Open MPI, then the bench and the smoke training (log: $OUT/ansible.log)"
rc=0
ANSIBLE_CONFIG="$ROOT/ansible.cfg" ANSIBLE_COLLECTIONS_PATH="$COLLECTIONS" \
  "$VENV/bin/ansible-playbook" -i "$WORK/inventory.json" -e "@$WORK/settings.json" "$HERE/proof.yml" \
  >"$OUT/ansible.log" 2>&1 || rc=$?

summary_rc=0
"$PY" "$HERE/summary.py" "$OUT" || summary_rc=$?
elapsed=$((SECONDS - START))
if [ "$rc" -ne 0 ]; then
  why="$(cat "$OUT/failed.txt" 2>/dev/null || grep -m1 -E '^(fatal|ERROR)' "$OUT/ansible.log" || echo "ansible-playbook exit $rc")"
  stop "FAILED after ${elapsed}s: ${why//$'\n'/ } (log: $OUT/ansible.log, summary: $OUT/summary.md)"
fi
[ "$summary_rc" -eq 0 ] || stop "FAILED after ${elapsed}s: see $OUT/summary.md"
echo "gpu-proof: PASS in ${elapsed}s: $OUT/summary.md"
