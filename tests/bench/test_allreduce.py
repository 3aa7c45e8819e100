# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""files/bench/allreduce.py under a real mpirun: the sweep, the nccl-tests arithmetic, the correctness check, errors."""
from __future__ import annotations
import socket

import pytest

SWEEP = ['--device', 'cpu', '--iters', '3', '--warmup', '1']


@pytest.mark.parametrize('text, size', [('4', 4), ('4096', 4096), ('1K', 1024), ('8M', 8 << 20), ('1G', 1 << 30),
                                        ('64k', 65536), ('2MB', 2 << 20)])
def test_sizes_take_binary_suffixes(bench, text, size):
    assert bench.parse_size(text) == size


def test_sweep_doubles_up_to_max(bench):
    assert bench.sweep_sizes(1024, 8192) == [1024, 2048, 4096, 8192]
    assert bench.sweep_sizes(12, 100) == [12, 24, 48, 96]
    assert bench.sweep_sizes(64, 64) == [64]


@pytest.mark.parametrize('world', [1, 2, 3, 7, 8, 9, 17, 1000])
def test_expected_sum_matches_a_brute_force_sum(bench, world):
    brute = [sum(bench.rank_pattern(r)[k] for r in range(world)) for k in range(bench.PERIOD)]
    assert bench.expected_pattern(world) == brute
    # small integers: float32 holds the sum exactly far beyond any cluster size
    assert max(brute) < 2 ** 24


def test_bus_factor_is_nccl_tests(bench):
    assert bench.bus_factor(1) == 0
    assert bench.bus_factor(2) == 1
    assert bench.bus_factor(4) == 1.5


@pytest.mark.parametrize('ranks', [1, 2, 3])
def test_sweep_is_correct_and_follows_nccl_tests(mpirun, read_json, tmp_path, ranks):
    out = tmp_path / 'out' / 'allreduce.json'
    proc = mpirun('allreduce.py', *SWEEP, '--min-bytes', '1K', '--max-bytes', '64K', '--json', out, np=ranks)
    assert proc.returncode == 0, proc.stderr
    report = read_json(out)
    assert {'world_size', 'device', 'hosts', 'mpi', 'results', 'correct'} <= set(report)
    assert report['world_size'] == ranks
    assert report['device'] == 'cpu'
    assert report['hosts'] == [socket.gethostname()]
    assert report['correct'] is True and report['errors'] == []
    assert report['mpi']['library_version'].startswith('Open MPI')
    # Open MPI answers MPIX_Query_cuda_support(); Debian's build is not CUDA-aware
    assert report['mpi']['cuda_aware'] is False
    assert [r['size_bytes'] for r in report['results']] == [1024 << k for k in range(7)]
    for row in report['results']:
        assert set(row) >= {'size_bytes', 'time_us', 'algbw_gbs', 'busbw_gbs'}
        assert row['correct'] is True
        assert row['time_us'] > 0
        assert row['algbw_gbs'] == pytest.approx(row['size_bytes'] / (row['time_us'] * 1e-6) / 1e9)
        assert row['busbw_gbs'] == pytest.approx(row['algbw_gbs'] * 2 * (ranks - 1) / ranks)
    # the table comes from rank 0 alone
    assert proc.stdout.count('# all results correct') == 1
    assert proc.stdout.count('# allreduce sum float32  ranks %d' % ranks) == 1


def test_a_wrong_result_is_caught_named_and_still_written(mpirun, read_json, tmp_path):
    out = tmp_path / 'allreduce.json'
    proc = mpirun('allreduce.py', *SWEEP, '--min-bytes', '1K', '--max-bytes', '16K', '--inject-wrong-result', '--json', out, np=2)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    report = read_json(out)
    assert report['correct'] is False
    # the last rank corrupted the element only the largest size reads: the smaller sizes stay correct
    assert [r['correct'] for r in report['results']] == [True, True, True, True, False]
    host = socket.gethostname()
    assert 'size 16384: rank 0 on %s got 10.0 at index 4095, expected 9.0 (1 of 4096 elements wrong)' % host in report['errors']
    assert any(e.startswith('size 16384: rank 1 on %s ' % host) for e in report['errors'])
    assert '# WRONG RESULTS' in proc.stdout


@pytest.mark.usefixtures('without_cupy')
def test_cuda_without_cupy_refuses_instead_of_falling_back(mpirun, tmp_path):
    out = tmp_path / 'allreduce.json'
    proc = mpirun('allreduce.py', '--device', 'cuda', '--min-bytes', '1K', '--max-bytes', '1K', '--json', out, np=2)
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if line.startswith('allreduce.py: error:')]
    # one line for all ranks, printed by rank 0
    assert len(errors) == 1
    assert '--device cuda needs CuPy' in errors[0] and 'ranks 0-1 on' in errors[0]
    assert not out.exists()


@pytest.mark.parametrize('args, message', [
    (['--min-bytes', '8M', '--max-bytes', '1M'], '--min-bytes (8388608) is larger than --max-bytes (1048576)'),
    (['--iters', '0'], "'0': must be at least 1"),
    (['--warmup', '-1'], "'-1': must not be negative"),
    (['--min-bytes', '6'], 'multiple of 4 bytes'),
    (['--max-bytes', '1X'], "'1X' is not a size"),
    (['--device', 'rocm'], "invalid choice: 'rocm'"),
])
def test_bad_arguments_are_refused(plain, args, message):
    proc = plain('allreduce.py', *args)
    assert proc.returncode == 2
    assert message in proc.stderr


def test_bad_arguments_print_once_under_mpirun(mpirun):
    proc = mpirun('allreduce.py', '--iters', '0', np=2)
    assert proc.returncode == 2
    assert proc.stderr.count('allreduce.py: error:') == 1
