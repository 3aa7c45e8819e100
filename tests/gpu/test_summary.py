# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The summary judges what the proof wrote: a missing output never passes, a CPU result is not a GPU result."""
from __future__ import annotations
import json
import shutil

import summary
from proof_paths import FIXTURES, RUNS

MIB = 1024 * 1024


def write(out, name, data):
    path = out / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def by_name(checks):
    return dict((check['name'], check) for check in checks)


def test_an_empty_outputs_folder_fails_every_check_and_exits_1(tmp_path, capsys):
    assert summary.main([str(tmp_path)]) == 1
    checks = json.loads((tmp_path / 'checks.json').read_text())
    assert checks['passed'] is False
    # ib_facts too: on a node without RDMA it still runs and says so, so no record at all is a failure
    assert [c['status'] for c in checks['checks']] == [summary.FAIL] * len(summary.CHECKS)
    assert (tmp_path / 'summary.md').read_text().startswith('# GPU proof: FAIL (11 of 11 checks)')
    assert len(capsys.readouterr().out.splitlines()) == len(summary.CHECKS)


def test_a_recorded_cpu_run_is_not_taken_for_a_gpu_result(tmp_path):
    shutil.copy(FIXTURES / 'allreduce-cpu-2ranks.json', tmp_path / 'allreduce.json')
    write(tmp_path, 'jobs.json', {'allreduce': 0, 'train-first': None, 'train-resumed': None, 'ranks': 2})
    assert summary.main([str(tmp_path)]) == 1
    check = by_name(json.loads((tmp_path / 'checks.json').read_text())['checks'])['Allreduce on GPU buffers']
    assert check['status'] == summary.FAIL
    assert check['detail'] == 'device cpu, not cuda, MPIX_Query_cuda_support() said False'
    text = (tmp_path / 'summary.md').read_text()
    # the table shows the run as recorded: every size of the sweep, 1 MiB to 16 MiB
    assert '## Allreduce (2 ranks, device cpu, hosts vm)' in text
    assert [line.split('|')[2].strip() for line in text.splitlines() if line.startswith('| ') and 'MiB |' in line] == [
        '1 MiB', '2 MiB', '4 MiB', '8 MiB', '16 MiB']


def outputs_that_pass():
    """Outputs shaped as the scripts' JSON contracts (files/bench/README.md, the modules' RETURN docs) with the values
    a passing proof has: input for the judge, not a recorded GPU run (those are in docs/gpu_proof_runs/)."""
    results = [{'engine': engine, 'size_bytes': size, 'time_us': 1.0, 'algbw_gbs': busbw, 'busbw_gbs': busbw, 'correct': True}
               for engine, size, busbw in (('ring', 64 * MIB, 50.0), ('ring', 256 * MIB, 120.0), ('mpi', 256 * MIB, 0.37),
                                           ('ipc', 64 * MIB, 100.0), ('ipc', 256 * MIB, 150.0))]
    return {
        'mpi_local_fact': {'flavour': 'source', 'cuda_aware': True, 'prefix': '/opt/hpcfabric/openmpi-5.0.7-ucx-1.13.1-cuda'},
        'gpu_topology': {'gpu_count': 1, 'nic_count': 0, 'nvlink': False,
                         'nvml': [{'index': 0, 'name': 'NVIDIA H100 80GB HBM3', 'driver_version': '580.95.05'}]},
        'mpi_facts': {'implementation': 'Open MPI', 'version': '5.0.7', 'cuda_aware': True,
                      'ucx': {'version': '1.13.1', 'transports': ['posix', 'sysv', 'self', 'tcp', 'cuda_copy', 'cuda_ipc']}},
        'ib_facts': {'failed': True, 'msg': 'ibstat not found'},
        'allreduce': {'world_size': 2, 'device': 'cuda', 'hosts': ['gpu1'], 'mpi': {'cuda_aware': True, 'library_version': 'Open MPI v5.0.7'},
                      'results': results, 'correct': True, 'errors': [], 'engines': {'ipc': {'device_copy_gbs': 2070.0}}},
        'train-first': {'device': 'cuda', 'ok': True, 'start_step': 0, 'end_step': 10, 'initial_loss': 1.5, 'final_loss': 0.9},
        'train-resumed': {'device': 'cuda', 'ok': True, 'resumed': True, 'start_step': 10, 'end_step': 20,
                          'initial_loss': 0.9, 'final_loss': 0.5},
        'jobs': {'allreduce': 0, 'train-first': 0, 'train-resumed': 0, 'ranks': 2, 'engines': ['ring', 'mpi', 'ipc'],
                 'nccl_note': 'NCCL 2.28.9 in the GPU Python refuses two ranks on one GPU'},
        'versions': None, 'preflight': None, 'failed': None,
        'report': {'preflight': {'gpu1': []}, 'verdict': {'passed': True, 'reason': 'all 1 large sizes ≥ threshold'}},
    }


def test_outputs_that_meet_every_check_pass():
    checks = summary.judge(outputs_that_pass())
    assert [c['name'] for c in checks if c['status'] != summary.PASS] == ['RDMA ports (ib_facts)']
    assert by_name(checks)['GPUs (NVML)']['detail'] == '1 GPU(s): NVIDIA H100 80GB HBM3, driver 580.95.05'
    assert by_name(checks)['RDMA ports (ib_facts)']['detail'] == 'no RDMA ports read: ibstat not found'
    # each engine against the node limit at its largest size
    assert by_name(checks)['Allreduce on GPU buffers']['detail'] == (
        '5 results correct on GPU buffers; busbw at 256 MiB: ring 120.00 GB/s (0.8 of the limit), '
        'mpi 0.37 GB/s (0.00247 of the limit), ipc 150.00 GB/s')
    assert by_name(checks)['Node limit (ipc engine)']['detail'] == (
        '150.0 GB/s busbw at 256 MiB through CUDA IPC with the sums on the GPU; device copy 2070 GB/s')


def test_the_summary_tables_each_engine_against_the_limit_and_says_why_nccl_did_not_run(tmp_path):
    text = summary.render(outputs_that_pass(), summary.judge(outputs_that_pass()), str(tmp_path))
    assert '| Engine | 64 MiB | 256 MiB |' in text
    assert '| ring | 0.5 | 0.8 |' in text and '| mpi | - | 0.00247 |' in text
    assert 'NCCL did not run: NCCL 2.28.9 in the GPU Python refuses two ranks on one GPU.' in text


def test_a_proof_without_the_limit_fails_unless_it_was_left_out():
    outputs = outputs_that_pass()
    outputs['allreduce']['results'] = [row for row in outputs['allreduce']['results'] if row['engine'] != 'ipc']
    assert by_name(summary.judge(outputs))['Node limit (ipc engine)']['status'] == summary.FAIL
    outputs['jobs']['engines'] = ['ring', 'mpi']
    assert by_name(summary.judge(outputs))['Node limit (ipc engine)'] == {
        'name': 'Node limit (ipc engine)', 'status': summary.INFO, 'detail': 'not measured: GPU_PROOF_ENGINES left out ipc'}


def test_each_wrong_result_fails_its_own_check():
    outputs = outputs_that_pass()
    outputs['mpi_facts']['ucx']['transports'] = ['posix', 'tcp', 'cuda_copy']
    outputs['allreduce']['correct'] = False
    outputs['allreduce']['errors'] = ['size 1048576: rank 1 on gpu1 got 3.0 at index 7, expected 2.0 (1 of 262144 elements wrong)']
    outputs['allreduce']['results'][-1]['correct'] = False
    outputs['train-resumed']['start_step'] = 0
    outputs['gpu_topology']['nvml'] = None
    checks = by_name(summary.judge(outputs))
    assert checks['UCX CUDA transports (mpi_facts)']['detail'] == 'UCX 1.13.1 lacks cuda_ipc (transports: posix, tcp, cuda_copy)'
    assert checks['Allreduce on GPU buffers']['detail'] == (
        'wrong results: size 1048576: rank 1 on gpu1 got 3.0 at index 7, expected 2.0 (1 of 262144 elements wrong)')
    assert checks['Smoke training on the GPU']['detail'] == 'the restart began at step 0, the first job ended at 10'
    assert checks['GPUs (NVML)']['status'] == summary.FAIL
    assert [name for name, c in checks.items() if c['status'] == summary.FAIL] == [
        'GPUs (NVML)', 'UCX CUDA transports (mpi_facts)', 'Allreduce on GPU buffers', 'Node limit (ipc engine)',
        'Smoke training on the GPU']


def test_a_build_that_stopped_says_why(tmp_path):
    (tmp_path / 'failed.txt').write_text('mpi role: The copied tarball matches its checksum - mpi_source_package: failed\n')
    summary.main([str(tmp_path)])
    assert by_name(json.loads((tmp_path / 'checks.json').read_text())['checks'])['CUDA-aware MPI installed by the mpi role'][
        'detail'] == 'no local fact from the mpi role (mpi role: The copied tarball matches its checksum - mpi_source_package: failed)'
    assert 'Stopped early: mpi role: The copied tarball' in (tmp_path / 'summary.md').read_text()


def test_the_recorded_h200_run_passes(tmp_path):
    # the outputs of `make gpu-proof` on one H200 (docs/gpu_proof.md, Runs, 2026-11-28), judged again from a copy
    # without the verdicts the node wrote
    run = tmp_path / 'run'
    shutil.copytree(RUNS / '2026-11-28-h200', run, ignore=shutil.ignore_patterns('beyond', 'checks.json', 'summary.md'))
    assert summary.main([str(run)]) == 0
    checks = by_name(json.loads((run / 'checks.json').read_text())['checks'])
    assert checks['Allreduce on GPU buffers']['detail'].startswith('27 results correct on GPU buffers')
    shares = summary.ratios(json.loads((run / 'allreduce.json').read_text()))
    # the ring within sight of the node limit, MPI's own collective (host staging) far below it
    assert 0.5 < shares['ring'][256 * MIB] < 1 and shares['mpi'][256 * MIB] < 0.01
