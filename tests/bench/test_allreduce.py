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


@pytest.mark.parametrize('text, engines', [('ring', ['ring']), ('mpi,ring,mpi', ['mpi', 'ring']), (' nccl , mpi', ['nccl', 'mpi']),
                                           ('all', ['ring', 'mpi', 'nccl', 'ipc'])])
def test_engines_are_a_comma_list_each_once_in_order(bench, text, engines):
    assert bench.parse_engines(text) == engines


def test_bus_factor_is_nccl_tests(bench):
    assert bench.bus_factor(1) == 0
    assert bench.bus_factor(2) == 1
    assert bench.bus_factor(4) == 1.5


@pytest.mark.parametrize('ranks', [1, 2, 3])
def test_sweep_is_correct_and_follows_nccl_tests(mpirun, read_json, tmp_path, ranks):
    out = tmp_path / 'out' / 'allreduce.json'
    proc = mpirun('allreduce.py', *SWEEP, '--engine', 'mpi,ring', '--min-bytes', '1K', '--max-bytes', '64K', '--json', out,
                  np=ranks)
    assert proc.returncode == 0, proc.stderr
    report = read_json(out)
    assert {'world_size', 'device', 'hosts', 'mpi', 'results', 'engines', 'correct'} <= set(report)
    assert report['world_size'] == ranks
    assert report['device'] == 'cpu'
    assert report['hosts'] == [socket.gethostname()]
    assert report['correct'] is True and report['errors'] == []
    assert report['mpi']['library_version'].startswith('Open MPI')
    # Open MPI answers MPIX_Query_cuda_support(); Debian's build is not CUDA-aware
    assert report['mpi']['cuda_aware'] is False
    assert list(report['engines']) == ['mpi', 'ring']
    assert [(r['engine'], r['size_bytes']) for r in report['results']] == [
        (engine, 1024 << k) for engine in ('mpi', 'ring') for k in range(7)]
    for row in report['results']:
        assert set(row) >= {'engine', 'size_bytes', 'time_us', 'algbw_gbs', 'busbw_gbs'}
        assert row['correct'] is True
        assert row['time_us'] > 0
        assert row['algbw_gbs'] == pytest.approx(row['size_bytes'] / (row['time_us'] * 1e-6) / 1e9)
        assert row['busbw_gbs'] == pytest.approx(row['algbw_gbs'] * 2 * (ranks - 1) / ranks)
    # the table comes from rank 0 alone, one block per engine
    assert proc.stdout.count('# all results correct') == 1
    assert proc.stdout.count('# allreduce sum float32  ranks %d' % ranks) == 1
    assert proc.stdout.count('# engine ') == 2


# (nodes, ranks per node): one rank, one node of 8, 8 nodes of one, rails of 2, 3, 5 and 8 across 2 or 3 nodes
@pytest.mark.parametrize('nodes, per_node', [(1, 1), (1, 8), (2, 1), (8, 1), (2, 2), (3, 3), (3, 5), (2, 8)])
def test_the_ring_is_correct_on_every_layout_and_size(mpirun, read_json, tmp_path, nodes, per_node):
    out = tmp_path / 'allreduce.json'
    # 7 elements and its doublings divide by none of the layouts' rank counts; with one-element chunks and a pipeline
    # of 3, most parts run in several chunks and the small ones have fewer elements than ranks
    proc = mpirun('allreduce.py', '--device', 'cpu', '--engine', 'ring', '--iters', '2', '--warmup', '1',
                  '--min-bytes', '28', '--max-bytes', '28K', '--ranks-per-node', per_node, '--ring-pipeline', '3',
                  '--ring-min-chunk', '4', '--probe-bytes', '4K', '--json', out, np=nodes * per_node)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = read_json(out)
    assert report['correct'] is True
    ring = report['engines']['ring']
    assert (ring['nodes'], ring['ranks_per_node'], ring['hierarchical']) == (nodes, per_node, True)
    rows = report['results']
    assert [row['count'] for row in rows] == [7 << k for k in range(11)]
    for row in rows:
        assert row['correct'] is True
        assert set(row['phases_us']) == {'intra_reduce_scatter', 'inter', 'intra_allgather'}
        assert [rail['local_rank'] for rail in row['rails']] == list(range(per_node))
        # each rail carries its local rank's segment: together they are the whole buffer
        assert sum(rail['segment_bytes'] for rail in row['rails']) == row['size_bytes']
        # a rail moves nothing across nodes with one node, or when its segment is empty (fewer elements than ranks)
        assert all((rail['busbw_gbs'] is None) == (nodes == 1 or rail['segment_bytes'] == 0) for rail in row['rails'])
    # every rank times its link from the left neighbour, and from the right one where that is another node
    directions = 0 if nodes == 1 else (1 if nodes == 2 else 2)
    assert len(ring['links']) == directions * nodes * per_node
    hosts = set(link['dst'] for link in ring['links'])
    assert len(hosts) == (nodes if nodes > 1 else 0)
    assert all(link['src'] != link['dst'] and link['gbs'] > 0 and link['bytes'] == 4096 for link in ring['links'])


def test_the_json_says_what_job_environment_the_ranks_ran_with(mpirun, read_json, tmp_path):
    out = tmp_path / 'allreduce.json'
    # local ranks inherit mpirun's environment, as remote ones get the job environment from the MCA file
    proc = mpirun('allreduce.py', *SWEEP, '--engine', 'ring', '--min-bytes', '1K', '--max-bytes', '1K', '--json', out,
                  np=2, env={'UCX_TLS': 'tcp,self', 'NCCL_IB_TC': '106', 'HPCFABRIC_RAIL': '1'})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    environment = read_json(out)['job_environment']
    assert environment['host'] == socket.gethostname() and environment['differs_on'] == []
    assert [rank['local_rank'] for rank in environment['ranks']] == [0, 1]
    # the job's UCX and NCCL settings and the wrapper's rail, never the launcher's own OMPI_MCA_ variables
    assert all(rank['variables'] == {'UCX_TLS': 'tcp,self', 'NCCL_IB_TC': '106', 'HPCFABRIC_RAIL': '1'}
               for rank in environment['ranks'])
    # and the rail the ring reports for each rank is the one the wrapper named
    assert read_json(out)['results'][0]['rails'][0]['rail'] == 1


def test_nodes_of_different_sizes_run_one_flat_ring(mpirun, read_json, tmp_path):
    out = tmp_path / 'allreduce.json'
    # 7 ranks in nodes of 3: 3 + 3 + 1, no rail pairs every node's rank 2
    proc = mpirun('allreduce.py', *SWEEP, '--engine', 'ring', '--min-bytes', '28', '--max-bytes', '7K',
                  '--ranks-per-node', 3, '--json', out, np=7)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = read_json(out)
    ring = report['engines']['ring']
    assert report['correct'] is True
    assert (ring['hierarchical'], ring['nodes'], ring['ranks_per_node']) == (False, 7, 1)
    assert ring['algorithm'].startswith('flat ring over all 7 ranks')


@pytest.mark.parametrize('ranks', [1, 2, 3, 5])
def test_the_node_limit_sums_every_part_of_every_rank_through_shared_memory(mpirun, read_json, tmp_path, ranks):
    out = tmp_path / 'allreduce.json'
    # 1000 elements: parts that do not divide evenly, the last one the longest
    proc = mpirun('allreduce.py', *SWEEP, '--engine', 'ipc,mpi', '--min-bytes', '4000', '--max-bytes', '4000',
                  '--json', out, np=ranks)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = read_json(out)
    assert report['correct'] is True
    assert [(r['engine'], r['count'], r['correct']) for r in report['results']] == [('ipc', 1000, True), ('mpi', 1000, True)]
    ipc = report['engines']['ipc']
    assert 'an MPI shared-memory window' in ipc['algorithm'] and ('each of %d ranks' % ranks) in ipc['algorithm']
    assert ipc['device_copy_gbs'] > 0


def test_the_node_limit_refuses_ranks_of_several_nodes_in_one_line(ipc_engine):
    class Comm:  # what Split_type(COMM_TYPE_SHARED) gives a rank of a 4-rank job over two nodes
        def __init__(self, size):
            self.size = size

        def Split_type(self, _kind):  # noqa: N802 - mpi4py's name
            return Comm(2)

        def Get_size(self):  # noqa: N802
            return self.size

        def allreduce(self, value, op):  # noqa: ARG002 - every rank sees a node smaller than the world
            return value

        def Free(self):  # noqa: N802
            pass

    class MPI:  # pylint: disable=too-few-public-methods
        COMM_TYPE_SHARED = 'shared'
        MIN = 'min'

    with pytest.raises(ipc_engine.Unavailable, match='every rank must be on the same node'):
        ipc_engine.node_communicator(MPI, Comm(4))


@pytest.mark.parametrize('count, parts, bounds', [
    (10, 3, [(0, 3), (3, 6), (6, 10)]), (2, 2, [(0, 1), (1, 2)]), (1, 2, [(0, 0), (0, 1)])])
def test_the_parts_cover_the_buffer_once(ipc_engine, count, parts, bounds):
    assert ipc_engine.chunk_bounds(count, parts) == bounds


@pytest.mark.parametrize('engine', ['mpi', 'ring', 'ipc'])
def test_a_wrong_result_in_any_engine_is_caught_named_and_still_written(mpirun, read_json, tmp_path, engine):
    out = tmp_path / 'allreduce.json'
    proc = mpirun('allreduce.py', *SWEEP, '--engine', 'mpi,ring,ipc', '--min-bytes', '1K', '--max-bytes', '16K',
                  '--inject-wrong-result', engine, '--json', out, np=2)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    report = read_json(out)
    assert report['correct'] is False
    # the last rank corrupted the element only the largest size reads, and only for the engine named
    assert [(r['engine'], r['correct']) for r in report['results']] == [
        (name, name != engine or k < 4) for name in ('mpi', 'ring', 'ipc') for k in range(5)]
    host = socket.gethostname()
    assert ('%s: size 16384: rank 0 on %s got 10.0 at index 4095, expected 9.0 (1 of 4096 elements wrong)'
            % (engine, host)) in report['errors']
    assert any(e.startswith('%s: size 16384: rank 1 on %s ' % (engine, host)) for e in report['errors'])
    assert '# WRONG RESULTS' in proc.stdout


def test_the_mpi_engine_names_the_component_open_mpi_chose(mpirun, read_json, tmp_path, bench):
    out = tmp_path / 'allreduce.json'
    proc = mpirun('allreduce.py', *SWEEP, '--engine', 'mpi', '--min-bytes', '1K', '--max-bytes', '4K', '--json', out,
                  np=2)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    mpi = read_json(out)['engines']['mpi']
    # what this Open MPI enabled on MPI_COMM_WORLD, lowest priority first; the serving one implements MPI_Allreduce
    assert mpi['components'] and mpi['component'] in bench.ALLREDUCE_COMPONENTS
    priorities = dict((name, priority) for name, priority in mpi['components'])
    assert priorities[mpi['component']] == max(priorities[name] for name in priorities if name in bench.ALLREDUCE_COMPONENTS)
    assert 'MPI_Allreduce served by coll/%s' % mpi['component'] in proc.stdout
    # the selection Open MPI printed for it is kept out of the job's standard error
    assert 'coll:' not in proc.stderr and 'disqualifying' not in proc.stderr


def test_a_job_that_asks_for_coll_verbosity_keeps_its_output(mpirun, read_json, tmp_path):
    out = tmp_path / 'allreduce.json'
    proc = mpirun('allreduce.py', *SWEEP, '--engine', 'mpi', '--min-bytes', '1K', '--max-bytes', '4K', '--json', out,
                  np=2, env={'OMPI_MCA_coll_base_verbose': '9'})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    mpi = read_json(out)['engines']['mpi']
    assert mpi['component'] is None and 'coll_base_verbose' in mpi['note']
    assert 'coll:base:comm_select: selecting' in proc.stderr


def test_coll_selection_reads_the_world_communicators_enabled_components(bench, fixture_text):
    text = fixture_text('openmpi-4.1.4-coll-verbose-9.txt')
    enabled = bench.coll_selection(text)
    assert enabled == [('libnbc', 10), ('basic', 10), ('tuned', 30)]
    assert bench.allreduce_component(enabled) == 'tuned'
    # MPI_COMM_SELF's own selection follows in the same output
    assert bench.coll_selection(text, 'MPI_COMM_SELF') == [('libnbc', 10), ('basic', 10), ('self', 75)]
    assert bench.coll_selection('no Open MPI here') is None
    # libnbc has no blocking MPI_Allreduce: it never serves one, whatever its priority
    assert bench.allreduce_component([('libnbc', 90), ('basic', 10)]) == 'basic'
    assert bench.allreduce_component([('cuda', 78), ('han', 35), ('tuned', 30)]) == 'cuda'


def test_coll_selection_reads_open_mpi_5(bench, fixture_text):
    enabled = bench.coll_selection(fixture_text('openmpi-5.0.7-coll-verbose-9.txt'))
    assert enabled == [('basic', 10), ('libnbc', 10), ('tuned', 30)]
    assert bench.allreduce_component(enabled) == 'tuned'


@pytest.mark.parametrize('engines, message', [
    ('nccl', '--engine nccl needs --device cuda: NCCL reduces GPU buffers only (ranks 0-1 on '),
    ('ring,nccl', '--engine nccl needs --device cuda: NCCL reduces GPU buffers only (ranks 0-1 on '),
])
def test_nccl_without_a_gpu_refuses_in_one_line(mpirun, tmp_path, engines, message):
    out = tmp_path / 'allreduce.json'
    proc = mpirun('allreduce.py', '--device', 'cpu', '--engine', engines, '--max-bytes', '1M', '--json', out, np=2)
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if line.startswith('allreduce.py: error:')]
    assert len(errors) == 1 and message in errors[0]
    assert not out.exists()


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
    (['--engine', 'gloo'], "'gloo': engines are a comma list of ring, mpi, nccl, ipc (or all)"),
    (['--engine', ','], "',': engines are a comma list of ring, mpi, nccl, ipc (or all)"),
    (['--ranks-per-node', '0'], "'0': must be at least 1"),
])
def test_bad_arguments_are_refused(plain, args, message):
    proc = plain('allreduce.py', *args)
    assert proc.returncode == 2
    assert message in proc.stderr


def test_bad_arguments_print_once_under_mpirun(mpirun):
    proc = mpirun('allreduce.py', '--iters', '0', np=2)
    assert proc.returncode == 2
    assert proc.stderr.count('allreduce.py: error:') == 1


def test_the_nccl_engine_keeps_the_lines_that_say_what_nccl_used(nccl_engine):
    from pathlib import Path  # pylint: disable=import-outside-toplevel
    text = (Path(__file__).resolve().parents[1] / 'unit' / 'fixtures' / 'nccl-debug' / 'nccl-tests-373-merged-nics.txt').read_text()
    kept = nccl_engine.kept_debug_lines(text)
    # the host:pid:tid prefix dropped; what names the network, its devices, the variables and the ranks kept
    assert kept[0] == 'NCCL INFO cudaDriverVersion 12020'
    assert ('NCCL INFO NET/IB : Using [0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE} [1]={[2] mlx5_0:1/RoCE, [3] '
            'mlx5_1:1/RoCE} [RO]; OOB bond0.526:169.136.106.9<0>') in kept
    assert 'NCCL INFO Using network IBext_v8' in kept and 'NCCL INFO NCCL_P2P_LEVEL set by environment to LOC' in kept
    assert not any('Setting affinity' in line or 'Plugin Path' in line for line in kept)


@pytest.mark.parametrize('code, version', [(22809, (2, 28, 9)), (23004, (2, 30, 4)), (2708, (2, 7, 8))])
def test_nccl_version_codes(nccl_engine, code, version):
    assert nccl_engine.version_tuple(code) == version
