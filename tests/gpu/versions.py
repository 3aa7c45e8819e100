# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Record the versions a GPU proof ran with, as JSON: driver, GPUs, CUDA toolkit, CuPy, NumPy, mpi4py, OS.

Run by the proof's playbook under the GPU Python, with the bench's PYTHONPATH (mpi4py for the built MPI first):

    python versions.py --cuda-home /usr/local/cuda --mpi4py-python VENV/bin/python --out versions.json

A value that cannot be read is recorded as the error that stopped it, never guessed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys


def _run(argv):
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {'error': str(exc)}
    if proc.returncode:
        return {'error': 'exit %d: %s' % (proc.returncode, (proc.stderr or proc.stdout).strip()[:300])}
    return {'output': proc.stdout.strip()}


def _module(name, extra=None):
    try:
        module = __import__(name)
        found = {'version': getattr(module, '__version__', None), 'path': os.path.dirname(module.__file__)}
        if extra:
            found.update(extra(module))
        return found
    except Exception as exc:  # pylint: disable=broad-except
        return {'error': '%s: %s' % (type(exc).__name__, exc)}


def _cupy_cuda(cupy):
    runtime = cupy.cuda.runtime
    return {'cuda_runtime': runtime.runtimeGetVersion(), 'cuda_driver': runtime.driverGetVersion(),
            'device_count': runtime.getDeviceCount()}


def _os_release():
    try:
        with open('/etc/os-release') as handle:
            fields = dict(line.rstrip('\n').split('=', 1) for line in handle if '=' in line)
        return fields.get('PRETTY_NAME', '').strip('"')
    except OSError as exc:
        return 'unknown (%s)' % exc


def collect(cuda_home, mpi4py_python):
    return {
        'os': _os_release(),
        'kernel': platform.release(),
        'python': {'version': platform.python_version(), 'executable': sys.executable},
        'gpus': _run(['nvidia-smi', '--query-gpu=index,name,driver_version,memory.total,pci.bus_id', '--format=csv,noheader']),
        'nvcc': _run([os.path.join(cuda_home, 'bin', 'nvcc'), '--version']),
        'cuda_home': cuda_home,
        'cupy': _module('cupy', _cupy_cuda),
        'numpy': _module('numpy'),
        # mpi4py's version without MPI_Init; the MPI library's own version is in the bench JSON
        'mpi4py': _run([mpi4py_python, '-c', 'import mpi4py; print(mpi4py.__version__, mpi4py.__file__)']),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--cuda-home', required=True)
    parser.add_argument('--mpi4py-python', required=True)
    parser.add_argument('--out', required=True)
    args = parser.parse_args(argv)
    with open(args.out, 'w') as handle:
        json.dump(collect(args.cuda_home, args.mpi4py_python), handle, indent=2, sort_keys=True)
        handle.write('\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
