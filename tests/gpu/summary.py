# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Judge a GPU proof's outputs and write its one-page summary.

    python summary.py OUT_DIR

Reads what tests/gpu/proof.yml wrote into OUT_DIR (the mpi role's local fact, the facts modules' JSON, the bench and
smoke-training JSON, the jobs' exit status, the versions, the report), writes OUT_DIR/summary.md and
OUT_DIR/checks.json, prints one line per check and exits 1 when any check failed (0 when all passed). A file that is
missing is a failed check, never a pass. Standard library only.
"""

from __future__ import annotations

import json
import os
import sys

PASS, FAIL, INFO = 'PASS', 'FAIL', 'info'
UCX_CUDA_TRANSPORTS = ('cuda_copy', 'cuda_ipc')
MIB = 1024 * 1024


def load(out, name):
    """The JSON in OUT/name, or None when it is missing or unreadable."""
    try:
        with open(os.path.join(out, name)) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def read_outputs(out):
    names = ('mpi_local_fact', 'gpu_topology', 'mpi_facts', 'ib_facts', 'allreduce', 'train-first', 'train-resumed',
             'jobs', 'versions', 'preflight')
    outputs = dict((name, load(out, name + '.json')) for name in names)
    outputs['report'] = load(out, os.path.join('report', 'report.json'))
    try:
        with open(os.path.join(out, 'failed.txt')) as handle:
            outputs['failed'] = handle.read().strip()
    except OSError:
        outputs['failed'] = None
    return outputs


def _failed(data, what):
    if data is None:
        return '%s was not written' % what
    if isinstance(data, dict) and data.get('failed'):
        return '%s failed: %s' % (what, data.get('msg'))
    return None


def check_build(o):
    fact = o['mpi_local_fact']
    if not isinstance(fact, dict):
        return FAIL, 'no local fact from the mpi role (%s)' % (o['failed'] or 'the install did not finish')
    if fact.get('flavour') != 'source' or fact.get('cuda_aware') is not True:
        return FAIL, 'flavour %s, cuda_aware %s (expected source, true)' % (fact.get('flavour'), fact.get('cuda_aware'))
    return PASS, 'the source build\'s package at %s, cuda_aware true (the role read it back with mpi_facts)' % fact.get('prefix')


def check_gpus(o):
    topology = o['gpu_topology']
    problem = _failed(topology, 'gpu_topology_facts')
    if problem:
        return FAIL, problem
    count = topology.get('gpu_count') or 0
    if count < 1:
        return FAIL, 'nvidia-smi topo -m shows no GPU'
    return PASS, '%d GPU(s), %d NIC(s) in nvidia-smi topo -m, NVLink %s' % (
        count, topology.get('nic_count') or 0, 'yes' if topology.get('nvlink') else 'no')


def check_nvml(o):
    topology = o['gpu_topology']
    nvml = topology.get('nvml') if isinstance(topology, dict) else None
    if not nvml:
        return FAIL, 'no NVML inventory (nvidia-ml-py from the bundle, or NVML itself, did not answer)'
    gpus = [gpu for gpu in nvml if isinstance(gpu, dict)] if isinstance(nvml, list) else []
    if not gpus:
        return FAIL, 'NVML lists no GPU'
    names = sorted({gpu.get('name') for gpu in gpus} - {None})
    drivers = sorted({gpu.get('driver_version') for gpu in gpus} - {None})
    return PASS, '%d GPU(s): %s, driver %s' % (len(gpus), ', '.join(names) or 'unnamed', ', '.join(drivers) or 'unknown')


def check_mpi_cuda(o):
    mpi = o['mpi_facts']
    problem = _failed(mpi, 'mpi_facts')
    if problem:
        return FAIL, problem
    if mpi.get('cuda_aware') is not True:
        return FAIL, '%s %s: cuda_aware %s' % (mpi.get('implementation'), mpi.get('version'), mpi.get('cuda_aware'))
    return PASS, '%s %s, mpi_built_with_cuda_support true' % (mpi.get('implementation'), mpi.get('version'))


def check_ucx_cuda(o):
    mpi = o['mpi_facts']
    if _failed(mpi, 'mpi_facts'):
        return FAIL, _failed(mpi, 'mpi_facts')
    ucx = mpi.get('ucx') or {}
    transports = ucx.get('transports') or []
    missing = [name for name in UCX_CUDA_TRANSPORTS if name not in transports]
    if missing:
        return FAIL, 'UCX %s lacks %s (transports: %s)' % (ucx.get('version'), ', '.join(missing), ', '.join(transports) or 'none')
    return PASS, 'UCX %s: %s' % (ucx.get('version'), ', '.join(transports))


def check_ib(o):
    ib = o['ib_facts']
    if ib is None:
        return FAIL, 'ib_facts did not run'
    if ib.get('failed'):
        # a one-node proof needs no RDMA device: the module ran and said why there is none
        return INFO, 'no RDMA ports read: %s' % ib.get('msg')
    return INFO, '%d CA(s), %d active port(s), link layers %s' % (
        len(ib.get('ca_names') or []), ib.get('active_ports') or 0, ', '.join(ib.get('link_layers') or []) or 'none')


def check_preflight(o):
    report = o['report']
    if not isinstance(report, dict):
        return FAIL, 'no report.json (the allreduce wrote no results)'
    problems = [problem for host_problems in (report.get('preflight') or {}).values() for problem in host_problems]
    if problems:
        return FAIL, '; '.join(problems)
    return PASS, "the validate role's checks for one node: GPUs, MPI CUDA-aware, UCX cuda transports"


def check_allreduce(o):
    bench, jobs = o['allreduce'], o['jobs'] or {}
    if not isinstance(bench, dict):
        return FAIL, 'no allreduce.json (mpirun exit %s; see allreduce.log)' % jobs.get('allreduce')
    wrong = []
    if jobs.get('allreduce') != 0:
        wrong.append('exit %s' % jobs.get('allreduce'))
    if bench.get('device') != 'cuda':
        wrong.append('device %s, not cuda' % bench.get('device'))
    if bench.get('world_size') != jobs.get('ranks', 2):
        wrong.append('%s ranks, expected %s' % (bench.get('world_size'), jobs.get('ranks', 2)))
    if (bench.get('mpi') or {}).get('cuda_aware') is not True:
        wrong.append('MPIX_Query_cuda_support() said %s' % (bench.get('mpi') or {}).get('cuda_aware'))
    if not bench.get('results'):
        wrong.append('no sizes measured')
    if bench.get('correct') is not True:
        wrong.append('wrong results: %s' % '; '.join(bench.get('errors') or ['correct is not true']))
    if wrong:
        return FAIL, ', '.join(wrong)
    engines, shares = [], ratios(bench)
    for engine in dict.fromkeys(row.get('engine', 'mpi') for row in bench['results']):
        rows = engine_rows(bench, engine)
        largest = max(rows)
        share = shares.get(engine, {}).get(largest)
        engines.append('%s %.2f GB/s%s' % (engine, rows[largest]['busbw_gbs'],
                                           ' (%.3g of the limit)' % share if share is not None else ''))
    return PASS, '%d results correct on GPU buffers; busbw at %s: %s' % (
        len(bench['results']), human_size(max(row['size_bytes'] for row in bench['results'])), ', '.join(engines))


def engine_rows(bench, engine):
    """The results of one engine, by size."""
    return dict((row['size_bytes'], row) for row in (bench or {}).get('results') or [] if row.get('engine', 'mpi') == engine)


def ratios(bench):
    """{engine: {size: busbw / the ipc engine's busbw at that size}} for the sizes both measured; {} without ipc."""
    limit = engine_rows(bench, 'ipc')
    out = {}
    for row in (bench or {}).get('results') or []:
        engine, size = row.get('engine', 'mpi'), row['size_bytes']
        if engine != 'ipc' and size in limit and limit[size]['busbw_gbs'] > 0:
            out.setdefault(engine, {})[size] = row['busbw_gbs'] / limit[size]['busbw_gbs']
    return out


def check_limit(o):
    bench, jobs = o['allreduce'], o['jobs'] or {}
    if 'ipc' not in (jobs.get('engines') or ['ipc']):
        return INFO, 'not measured: GPU_PROOF_ENGINES left out ipc'
    limit = engine_rows(bench, 'ipc')
    if not limit:
        return FAIL, 'no ipc engine results (the node limit) in allreduce.json'
    if not all(row.get('correct') for row in limit.values()):
        return FAIL, 'the ipc engine summed wrong'
    largest = limit[max(limit)]
    copy = ((bench.get('engines') or {}).get('ipc') or {}).get('device_copy_gbs')
    return PASS, '%.1f GB/s busbw at %s through CUDA IPC with the sums on the GPU; device copy %s' % (
        largest['busbw_gbs'], human_size(max(limit)), '%.0f GB/s' % copy if copy else 'not measured')


def check_threshold(o):
    report = o['report']
    verdict = report.get('verdict') if isinstance(report, dict) else None
    if not isinstance(verdict, dict):
        return FAIL, 'no verdict (no report.json)'
    return (PASS if verdict.get('passed') else FAIL), verdict.get('reason')


def check_train(o):
    first, resumed, jobs = o['train-first'], o['train-resumed'], o['jobs'] or {}
    wrong = []
    for name, data in (('first', first), ('resumed', resumed)):
        if not isinstance(data, dict):
            wrong.append('no train-%s.json (exit %s; see train-%s.log)' % (name, jobs.get('train-' + name), name))
            continue
        if data.get('device') != 'cuda':
            wrong.append('%s ran on %s' % (name, data.get('device')))
        if data.get('ok') is not True:
            wrong.append('%s not ok: %s' % (name, '; '.join(data.get('errors') or ['ok is not true'])))
    if isinstance(first, dict) and isinstance(resumed, dict):
        if not resumed.get('resumed') or resumed.get('start_step') != first.get('end_step'):
            wrong.append('the restart began at step %s, the first job ended at %s' % (resumed.get('start_step'), first.get('end_step')))
    if wrong:
        return FAIL, ', '.join(wrong)
    return PASS, 'steps %s-%s then %s-%s from the checkpoint, loss %.4g -> %.4g, parameters identical on every rank' % (
        first.get('start_step'), first.get('end_step'), resumed.get('start_step'), resumed.get('end_step'),
        first.get('initial_loss'), resumed.get('final_loss'))


CHECKS = (
    ('CUDA-aware MPI installed by the mpi role', check_build),
    ('GPUs (nvidia-smi topo -m)', check_gpus),
    ('GPUs (NVML)', check_nvml),
    ('Open MPI CUDA-aware (mpi_facts)', check_mpi_cuda),
    ('UCX CUDA transports (mpi_facts)', check_ucx_cuda),
    ('RDMA ports (ib_facts)', check_ib),
    ('Validation preflight', check_preflight),
    ('Allreduce on GPU buffers', check_allreduce),
    ('Node limit (ipc engine)', check_limit),
    ('Allreduce threshold', check_threshold),
    ('Smoke training on the GPU', check_train),
)


def judge(outputs):
    """[{name, status, detail}] for every check, in order."""
    return [dict(zip(('name', 'status', 'detail'), (name,) + check(outputs))) for name, check in CHECKS]


def human_size(size):
    for unit, factor in (('GiB', 1024 ** 3), ('MiB', MIB), ('KiB', 1024)):
        if size >= factor and size % factor == 0:
            return '%d %s' % (size // factor, unit)
    return '%d B' % size


def _cell(text):
    return str(text).replace('|', '\\|').replace('\n', ' ')


def _versions_rows(o):
    versions, bench, fact = o['versions'] or {}, o['allreduce'] or {}, o['mpi_local_fact'] or {}
    mpi = o['mpi_facts'] if isinstance(o['mpi_facts'], dict) else {}
    cupy = versions.get('cupy') or {}
    library = ((bench.get('mpi') or {}).get('library_version') or '').splitlines()
    nvcc = ((versions.get('nvcc') or {}).get('output') or '?').splitlines()[-1]
    cupy_text = '%s (CUDA runtime %s, driver %s)' % (cupy.get('version', cupy.get('error', '?')), cupy.get('cuda_runtime', '?'),
                                                     cupy.get('cuda_driver', '?'))
    ucx_version = (mpi.get('ucx') or {}).get('version', '?')
    rows = [
        ('OS, kernel', '%s, %s' % (versions.get('os', '?'), versions.get('kernel', '?'))),
        ('GPUs (nvidia-smi)', (versions.get('gpus') or {}).get('output', (versions.get('gpus') or {}).get('error', '?'))),
        ('CUDA toolkit', '%s: %s' % (versions.get('cuda_home', '?'), nvcc)),
        ('CuPy', cupy_text),
        ('Python', (versions.get('python') or {}).get('version', '?')),
        ('Open MPI, UCX', '%s %s, UCX %s' % (mpi.get('implementation', '?'), mpi.get('version', '?'), ucx_version)),
        ('MPI library (bench)', library[0] if library else '?'),
        ('mpi4py', (versions.get('mpi4py') or {}).get('output', '?').split(' ')[0]),
        ('MPI prefix', fact.get('prefix', '?')),
    ]
    return rows


def render(outputs, checks, out):
    failed = [check for check in checks if check['status'] == FAIL]
    lines = ['# GPU proof: %s' % ('PASS' if not failed else 'FAIL (%d of %d checks)' % (
        len(failed), len([c for c in checks if c['status'] != INFO]))), '']
    if outputs['failed']:
        lines += ['Stopped early: %s' % outputs['failed'], '']
    lines += ['Outputs in `%s` (JSON of every step, `report/report.md`, the jobs\' logs).' % out, '',
              '## Checks', '', '| Check | Result | Detail |', '|---|---|---|']
    lines += ['| %s | %s | %s |' % (c['name'], c['status'], _cell(c['detail'])) for c in checks]
    lines += ['', '## Versions', '', '| | |', '|---|---|']
    lines += ['| %s | %s |' % (name, _cell(value)) for name, value in _versions_rows(outputs)]
    bench = outputs['allreduce']
    if isinstance(bench, dict) and bench.get('results'):
        lines += ['', '## Allreduce (%s ranks, device %s, hosts %s)' % (
            bench.get('world_size'), bench.get('device'), ', '.join(bench.get('hosts') or [])), '',
            '| Engine | Size | Time (µs) | algbw (GB/s) | busbw (GB/s) | Correct |', '|---|---:|---:|---:|---:|:---:|']
        for row in bench['results']:
            cells = (row.get('engine', 'mpi'), human_size(row['size_bytes']), row['time_us'], row['algbw_gbs'],
                     row['busbw_gbs'], 'yes' if row.get('correct', True) else 'NO')
            lines.append('| %s | %s | %.1f | %.2f | %.2f | %s |' % cells)
        shares = ratios(bench)
        if shares:
            sizes = sorted(set(size for values in shares.values() for size in values))
            lines += ['', '## Against the node limit (busbw / the ipc engine\'s busbw at the same size)', '',
                      '| Engine | ' + ' | '.join(human_size(size) for size in sizes) + ' |',
                      '|---|' + '---:|' * len(sizes)]
            for engine, values in shares.items():
                lines.append('| %s | %s |' % (engine, ' | '.join('%.3g' % values[size] if size in values else '-'
                                                                 for size in sizes)))
    note = (outputs['jobs'] or {}).get('nccl_note')
    if note:
        lines += ['', 'NCCL did not run: %s.' % note]
    lines += ['', 'Two ranks on one node measure the CUDA-aware path (UCX cuda_copy/cuda_ipc, shared memory), not a '
              'fabric. The limit is what the GPU\'s memory allows two processes: the ipc engine reads the other '
              'rank\'s buffer through CUDA IPC and sums on the GPU, with no message. The threshold is '
              'GPU_PROOF_LIMIT_FRACTION of it at 256 MiB (or the largest size, if smaller), for every size from there '
              'up.', '']
    return '\n'.join(lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print('usage: summary.py OUT_DIR', file=sys.stderr)
        return 2
    out = argv[0]
    outputs = read_outputs(out)
    checks = judge(outputs)
    with open(os.path.join(out, 'summary.md'), 'w') as handle:
        handle.write(render(outputs, checks, out))
    with open(os.path.join(out, 'checks.json'), 'w') as handle:
        json.dump({'passed': not any(c['status'] == FAIL for c in checks), 'checks': checks}, handle, indent=2)
        handle.write('\n')
    for check in checks:
        print('%-4s  %-38s %s' % (check['status'], check['name'], check['detail']))
    return 1 if any(check['status'] == FAIL for check in checks) else 0


if __name__ == '__main__':
    sys.exit(main())
