# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""What `make gpu-proof` needs of the machine, checked in seconds before anything is built.

Prints nothing and exits 0 when the machine has it all; otherwise prints ONE line naming everything that is missing
and exits 1. Standard library only: it runs before the bundle's Ansible is installed, under any python3.

    python3 tests/gpu/preflight.py --bundle DIR [--python PY] [--cuda-home DIR]

Nothing is compiled on the node: the bundle carries the CUDA-aware MPI prebuilt, and the libraries it leaves to
the node (its manifest's ``system_libraries.required``) are checked here. The OS packages the mpi role installs to
unpack it are checked later, by the proof's playbook, from the role's own lists.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys

# the nccl engine's own rule for two ranks on one GPU (standard library only, like this script)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'files', 'bench'))
from allreduce_nccl import MULTI_RANK_GPU_VERSION, version_tuple  # noqa: E402  pylint: disable=wrong-import-position

PREFIX = 'gpu-proof: cannot run here: '
MANIFEST = 'manifest.json'
# nvidia-smi -L answers in well under a second on a healthy node; a hung driver must not hold the proof
NVIDIA_SMI_TIMEOUT_S = 20
PYTHON_PROBE_TIMEOUT_S = 30
# what the interpreter that runs the bench reports about itself, NCCL's version through CuPy included; importing
# CuPy does not touch the GPU
PYTHON_PROBE = r'''
import importlib, json, sys
out = {'version': '%d.%d' % sys.version_info[:2], 'executable': sys.executable, 'modules': {}}
for name in ('cupy', 'numpy', 'venv', 'ensurepip', 'matplotlib', 'cupy.cuda.nccl'):
    try:
        module = importlib.import_module(name)
    except Exception as exc:  # an import can fail with more than ImportError (a broken CUDA library)
        out['modules'][name] = {'ok': False, 'error': '%s: %s' % (type(exc).__name__, exc)}
    else:
        out['modules'][name] = {'ok': True, 'version': getattr(module, '__version__', None)}
nccl = sys.modules.get('cupy.cuda.nccl')
if nccl is not None and getattr(nccl, 'available', False):
    out['modules']['cupy.cuda.nccl']['version'] = nccl.get_version()
elif nccl is not None:
    out['modules']['cupy.cuda.nccl'] = {'ok': False, 'error': 'CuPy finds no NCCL library'}
print(json.dumps(out))
'''
# the engines every proof runs: the ring judged, the MPI library's allreduce and the node limit reported; nccl joins
# them where the GPU Python's NCCL lets two ranks share a GPU
ENGINES = ('ring', 'mpi', 'ipc')


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as handle:
        for block in iter(lambda: handle.read(1 << 20), b''):
            digest.update(block)
    return digest.hexdigest()


def bundle_problems(bundle, python_version=None):
    """What is wrong with the bundle directory: missing, incomplete, changed, or made for another Python."""
    manifest_path = os.path.join(bundle, MANIFEST)
    if not os.path.isfile(manifest_path):
        return ['no bundle at %s (no %s): run `make gpu-proof-bundle` on a machine with network access and carry '
                'that folder along (GPU_PROOF_BUNDLE)' % (bundle, MANIFEST)]
    try:
        with open(manifest_path) as handle:
            manifest = json.load(handle)
        files = manifest['files']
        wanted_python = manifest['python_version']
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return ['%s is not a gpu-proof bundle manifest (%s): rebuild it with `make gpu-proof-bundle`' % (manifest_path, exc)]
    problems = []
    missing = [name for name in sorted(files) if not os.path.isfile(os.path.join(bundle, name))]
    changed = [name for name in sorted(files) if name not in missing
               and sha256_of(os.path.join(bundle, name)) != files[name]['sha256']]
    if missing:
        problems.append('bundle %s lacks %s' % (bundle, ', '.join(missing)))
    if changed:
        problems.append('bundle %s: %s changed since it was made (sha256 differs from %s)' % (
            bundle, ', '.join(changed), MANIFEST))
    if python_version and python_version != wanted_python:
        problems.append('bundle %s holds wheels for Python %s, the GPU Python is %s: rebuild it with '
                        'GPU_PROOF_PYVER=%s make gpu-proof-bundle' % (bundle, wanted_python, python_version, python_version))
    return problems


def gpu_problems():
    nvidia_smi = shutil.which('nvidia-smi')
    if nvidia_smi is None:
        return ['no NVIDIA GPU: nvidia-smi is not on PATH']
    try:
        proc = subprocess.run([nvidia_smi, '-L'], capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return ['nvidia-smi -L did not answer within %d s (driver hung?)' % NVIDIA_SMI_TIMEOUT_S]
    first = (proc.stdout + proc.stderr).strip().splitlines()[:1]
    if proc.returncode:
        return ['nvidia-smi -L failed (exit %d): %s' % (proc.returncode, first[0] if first else 'no output')]
    if not any(line.startswith('GPU ') for line in proc.stdout.splitlines()):
        return ['nvidia-smi -L lists no GPU']
    return []


def find_cuda_home(given=None):
    """The CUDA toolkit: the one given, else the one whose nvcc is on PATH, else /usr/local/cuda.

    An nvcc on PATH may be a wrapper script elsewhere (/usr/local/bin/nvcc): its directory counts only when it holds
    include/cuda.h.
    """
    if given:
        return given
    nvcc = shutil.which('nvcc')
    if nvcc:
        home = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
        if os.path.exists(os.path.join(home, 'include', 'cuda.h')):
            return home
    return '/usr/local/cuda'


def missing_libraries(sonames, ldconfig_output=None):
    """The sonames neither the loader's cache (ldconfig -p) nor LD_LIBRARY_PATH has."""
    if ldconfig_output is None:
        ldconfig = shutil.which('ldconfig') or '/sbin/ldconfig'
        try:
            ldconfig_output = subprocess.run([ldconfig, '-p'], capture_output=True, text=True, check=False).stdout
        except OSError:
            ldconfig_output = ''
    known = set(line.split()[0] for line in ldconfig_output.splitlines()[1:] if line.strip())
    for directory in os.environ.get('LD_LIBRARY_PATH', '').split(':'):
        if directory and os.path.isdir(directory):
            known.update(os.listdir(directory))
    return [soname for soname in sonames if soname not in known]


def library_problems(bundle):
    """The system libraries the bundle's MPI needs (manifest) that this node lacks, as one problem."""
    try:
        with open(os.path.join(bundle, MANIFEST)) as handle:
            needed = json.load(handle)['mpi_package']['system_libraries']['required']
    except (OSError, ValueError, KeyError, TypeError):
        return []
    missing = missing_libraries(needed)
    if not missing:
        return []
    return ['the bundle\'s Open MPI and UCX need %s, which this node lacks (Debian/Ubuntu: libnuma.so.1 is libnuma1, '
            'libz.so.1 zlib1g)' % ', '.join(missing)]


def engines_for(report):
    """(engines, why nccl does not run or None): the bench's engines for the GPU Python ``report`` describes."""
    nccl = (report or {}).get('modules', {}).get('cupy.cuda.nccl') or {}
    if not nccl.get('ok'):
        return list(ENGINES), 'no NCCL in the GPU Python (%s); the bundle carries no NCCL wheel' % nccl.get('error', 'not probed')
    version = version_tuple(nccl.get('version') or 0)
    if version < MULTI_RANK_GPU_VERSION:
        return list(ENGINES), ('NCCL %d.%d.%d in the GPU Python refuses two ranks on one GPU ("Duplicate GPU '
                               'detected"; 2.30 and later allow it); the bundle carries no NCCL wheel' % version)
    return list(ENGINES) + ['nccl'], None


def probe_python(python):
    """(report, problem): what PYTHON_PROBE says of the interpreter, or why it could not be asked."""
    path = shutil.which(python)
    if path is None:
        return None, 'GPU Python %s not found: set GPU_PROOF_PYTHON to a Python with CuPy' % python
    try:
        proc = subprocess.run([path, '-c', PYTHON_PROBE], capture_output=True, text=True,
                              timeout=PYTHON_PROBE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return None, 'GPU Python %s did not answer within %d s' % (path, PYTHON_PROBE_TIMEOUT_S)
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1]), None
    except (ValueError, IndexError):
        last = (proc.stderr.strip().splitlines() or ['no output'])[-1]
        return None, 'GPU Python %s could not be probed: %s' % (path, last)


def python_problems(report):
    problems = []
    modules = report['modules']
    for name, why in (('cupy', 'set GPU_PROOF_PYTHON to a Python with CuPy'),
                      ('numpy', 'the bench needs it'),
                      ('venv', 'the mpi role makes the mpi4py virtualenv from it'),
                      ('ensurepip', 'the mpi role makes the mpi4py virtualenv, with pip, from it')):
        if not modules[name]['ok']:
            problems.append('GPU Python %s cannot import %s (%s): %s' % (report['executable'], name, modules[name]['error'], why))
    return problems


def check(bundle, python, cuda_home=None, is_root=None):
    """(problems, python report or None): every problem found, in the order a person would fix them."""
    problems = []
    if not (os.geteuid() == 0 if is_root is None else is_root):
        problems.append('not root (the mpi role installs into /opt and writes /etc)')
    problems.extend(gpu_problems())
    report, problem = probe_python(python)
    if problem:
        problems.append(problem)
        report = None
    elif python_problems(report):
        problems.extend(python_problems(report))
        # the wheels' Python version matters only once the right interpreter is named
        report = None
    problems.extend(bundle_problems(bundle, report['version'] if report else None))
    problems.extend(library_problems(bundle))
    return problems, report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--bundle', required=True, help='the folder `make gpu-proof-bundle` made')
    parser.add_argument('--python', default='python3', help='the Python with CuPy that runs the bench')
    parser.add_argument('--cuda-home', help='the CUDA toolkit whose version the proof records, when there is one (default: '
                                            'the one whose nvcc is on PATH, else /usr/local/cuda)')
    parser.add_argument('--report', metavar='PATH', help='also write what was found (JSON) here when nothing is missing')
    args = parser.parse_args(argv)
    problems, report = check(args.bundle, args.python, args.cuda_home)
    if problems:
        print(PREFIX + '; '.join(problems))
        return 1
    if args.report:
        engines, nccl_note = engines_for(report)
        with open(args.report, 'w') as handle:
            json.dump({'python': report, 'cuda_home': find_cuda_home(args.cuda_home), 'engines': engines,
                       'nccl_note': nccl_note}, handle, indent=2, sort_keys=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
