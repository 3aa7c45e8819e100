# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Run by an interpreter with comma-separated module names as arguments; prints one JSON line: the interpreter's
version, prefixes and library directories, and each module's file and version or why it does not import (and, for a
module with a boolean ``available``, such as CuPy's NCCL bindings, that flag). The bench_env_plan and
bench_env_problems filters read it (module_utils/bench_env.py, read_report).

The bench_env role hands it on stdin to the Python the mpi role recorded and to the venv's (``python - mpi4py``), so
nothing is copied to the node; by hand: ``python3 import_probe.py mpi4py,numpy``.
"""
import importlib
import json
import sys
import sysconfig

modules = {}
for name in [name for arg in sys.argv[1:] for name in arg.split(',')]:
    try:
        module = importlib.import_module(name)
    except Exception as exc:
        modules[name] = {'error': '%s: %s' % (type(exc).__name__, exc)}
    else:
        modules[name] = {'file': module.__file__, 'version': str(getattr(module, '__version__', ''))}
        if isinstance(getattr(module, 'available', None), bool):
            modules[name]['available'] = module.available
paths = sysconfig.get_paths()
print(json.dumps({'version': list(sys.version_info[:3]), 'prefix': sys.prefix, 'base_prefix': sys.base_prefix,
                  'purelib': paths['purelib'], 'platlib': paths['platlib'], 'modules': modules}))
