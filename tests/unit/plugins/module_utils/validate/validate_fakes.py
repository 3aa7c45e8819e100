# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""What the validate package's tests hand it: bench JSON of files/bench/allreduce.py, and the results Ansible
registers for a job's mpirun (``command``) and its fetched JSON (``slurp``)."""
from __future__ import annotations

import base64
import json

from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.thresholds import allreduce_threshold

MIB = 1024 * 1024
# the large sizes of bench(), from 64 MiB, and a threshold they are judged against
LARGE = 64 * MIB
EXPLICIT = allreduce_threshold('explicit', min_busbw_gbs=1.5)
# an all-node bench JSON of one size
BENCH = {'world_size': 16, 'device': 'cuda', 'hosts': ['node01', 'node02'],
         'mpi': {'library_version': 'Open MPI v4.1.7', 'cuda_aware': True},
         'results': [{'size_bytes': 1048576, 'time_us': 80.0, 'algbw_gbs': 13.1, 'busbw_gbs': 24.6}], 'correct': True}


def bench(busbw, correct=True, errors=None, world_size=2):
    """A bench JSON with 1 MiB .. 128 MiB; busbw maps size to GB/s (a number: every size)."""
    results = []
    for power in range(8):
        size = MIB << power
        value = busbw(size) if callable(busbw) else busbw
        results.append({'size_bytes': size, 'time_us': 100.0 * (power + 1), 'algbw_gbs': value / 2,
                        'busbw_gbs': value, 'correct': correct})
    data = {'world_size': world_size, 'device': 'cpu', 'hosts': ['node01', 'node02'],
            'mpi': {'library_version': 'Open MPI v4.1.4', 'cuda_aware': False}, 'results': results,
            'correct': correct}
    if errors is not None:
        data['errors'] = errors
    return data


def slurped(data):
    """What ansible.builtin.slurp registers for a file holding ``data`` as JSON."""
    return {'changed': False, 'failed': False, 'encoding': 'base64', 'source': '/var/tmp/hpcfabric-validate/pair.json',
            'content': base64.b64encode(json.dumps(data).encode()).decode()}


# slurp of a missing file, kept by failed_when: false
NOT_FETCHED = {'changed': False, 'failed': False, 'failed_when_result': False,
               'msg': 'file not found: /var/tmp/hpcfabric-validate/pair.json'}


def mpirun(rc, stderr=''):
    """What ansible.builtin.command registers for the pair's mpirun."""
    return {'changed': False, 'failed': False, 'rc': rc, 'cmd': ['su', '-', 'mpiuser', '-c', '...'],
            'stdout': '', 'stdout_lines': [], 'stderr': stderr, 'stderr_lines': stderr.splitlines()}
