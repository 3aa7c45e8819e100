# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""validate.report: the report's runs and the report.md a sysadmin reads."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.drift import drift_findings
from ansible_collections.hpcfabric.cluster.plugins.module_utils.isolation import isolation_step
from ansible_collections.hpcfabric.cluster.plugins.module_utils.perftest import bench_of_report
from ansible_collections.hpcfabric.cluster.plugins.module_utils.port_counters import counters_report
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.report import render_markdown, report_runs
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.thresholds import allreduce_threshold
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.units import format_gbs, human_size
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.verdicts import allreduce_verdict

_SPEC = importlib.util.spec_from_file_location('isolation_sim', Path(__file__).parents[1] / 'isolation_sim.py')
sim = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(sim)
_SPEC = importlib.util.spec_from_file_location('validate_fakes', Path(__file__).with_name('validate_fakes.py'))
fakes = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(fakes)

MIB = 1024 * 1024
LARGE = 64 * MIB


def bench(busbw, hosts, correct=True, errors=None):
    results = [{'size_bytes': MIB << power, 'time_us': 1234.56, 'algbw_gbs': busbw / 2, 'busbw_gbs': busbw}
               for power in range(8)]
    data = {'world_size': len(hosts), 'device': 'cpu', 'hosts': hosts,
            'mpi': {'library_version': 'Open MPI v4.1.4, package: Debian OpenMPI\nident: 4.1.4', 'cuda_aware': False},
            'results': results, 'correct': correct}
    if errors:
        data['errors'] = errors
    return data


LAB_RAILS = dict((host, {'0': {'interface': 'fab0', 'net_device': 'fab0'}}) for host in ['node01', 'node02', 'node03'])


def report(threshold=None, full=None, pairs=None, preflight=None, train=None, isolation=None):
    """The report; ``pairs`` are the isolation's results so far (one round of the lab's rail), ``isolation`` a finished
    one."""
    hosts = ['node01', 'node02', 'node03']
    threshold = dict(threshold or allreduce_threshold('explicit', min_busbw_gbs=1.5), min_size_bytes=LARGE)
    full = full or bench(2.0, hosts)
    runs = [{'name': 'all nodes (3 ranks)', 'hosts': hosts, 'bench': full}]
    if pairs is not None:
        isolation = isolation_step(pairs, hosts, LAB_RAILS, threshold, LARGE)
        runs += [{'name': 'pair ' + ' + '.join(pair['hosts']), 'hosts': pair['hosts'], 'bench': pair['bench']}
                 for pair in pairs if pair['bench']]
    return {
        'generated': '2025-01-02T03:04:05+00:00',
        'cluster': {'hosts': hosts, 'world_size': 3, 'device': 'cpu', 'mpi_library': full['mpi']['library_version']},
        'threshold': threshold,
        'verdict': allreduce_verdict(full, threshold, LARGE),
        'runs': runs,
        'isolation': isolation,
        'preflight': preflight if preflight is not None else {'node01': [], 'node02': [], 'node03': []},
        'train_smoke': train,
    }


def test_passing_report():
    text = render_markdown(report(), plot='allreduce.png')
    lines = text.splitlines()
    assert lines[0] == '# Allreduce validation: PASS'
    assert 'Generated 2025-01-02T03:04:05+00:00.' in lines
    assert ('**PASS**: all 2 large sizes ≥ threshold (explicit; closest: busbw 2 GB/s at 64 MiB ≥ 1.5 GB/s)'
            in lines)
    assert 'Threshold: explicit: 1.5 GB/s bus bandwidth; checked at sizes from 64 MiB.' in lines
    assert '![bus bandwidth against message size](allreduce.png)' in lines
    assert '| hosts | node01, node02, node03 (3) |' in lines
    assert '| world size | 3 |' in lines
    assert '| MPI library | Open MPI v4.1.4, package: Debian OpenMPI |' in lines
    assert '### all nodes (3 ranks)' in lines
    assert 'Hosts: node01, node02, node03; 3 ranks; results correct: yes' in lines
    assert '| size | time (µs) | algbw (GB/s) | busbw (GB/s) | threshold (GB/s) | ok |' in lines
    assert '| 1 MiB | 1234.6 | 1 | 2 | - | - |' in lines
    assert '| 64 MiB | 1234.6 | 1 | 2 | 1.5 | yes |' in lines
    assert 'No problem on any of the 3 hosts.' in lines
    assert 'Isolation' not in text
    assert 'Smoke training' not in text
    assert text.endswith('|\n') or text.endswith('.\n')


def test_failing_report_with_isolation_and_preflight():
    hosts = ['node01', 'node02', 'node03']
    pairs = [{'hosts': ['node01', 'node02'], 'bench': bench(0.01, ['node01', 'node02']), 'error': None, 'mpirun_rc': 0},
             {'hosts': ['node02', 'node03'], 'bench': None, 'mpirun_rc': 1, 'round': 1,
              'error': 'isolation pair node02 + node03 on rail 0 exited 1 (mpirun on node02): timeout'},
             {'hosts': ['node03', 'node01'], 'bench': bench(2.0, ['node03', 'node01']), 'error': None, 'mpirun_rc': 0,
              'round': 2}]
    text = render_markdown(report(full=bench(0.5, hosts), pairs=pairs,
                                  preflight={'node01': [], 'node02': ['fab0: MTU 1500, expected 9000']}))
    lines = text.splitlines()
    assert lines[0] == '# Allreduce validation: FAIL'
    assert ('**FAIL**: 2 of 2 large sizes below threshold (explicit): busbw 0.5 GB/s at 64 MiB < 1.5 GB/s, '
            'busbw 0.5 GB/s at 128 MiB < 1.5 GB/s') in lines
    assert '| 128 MiB | 1234.6 | 0.25 | 0.5 | 1.5 | **no** |' in lines
    assert '## Isolation' in lines
    assert 'Rounds: 3 (ring 3, confirm 0, repeat 0); runs: 3.' in lines
    assert ('Each pair run (one rank per node, one rail) is judged against explicit: 1.5 GB/s bus bandwidth.'
            in lines)
    assert '| 0 | ring | 0 | node01 + node02 | 0.01 | FAIL | 2 of 2 large sizes below threshold (explicit): busbw 0.01 ' \
           'GB/s at 64 MiB < 1.5 GB/s, busbw 0.01 GB/s at 128 MiB < 1.5 GB/s |' in lines
    assert '| 1 | ring | 0 | node02 + node03 | - | FAIL | run failed: isolation pair node02 + node03 on rail 0 exited 1 ' \
           '(mpirun on node02): timeout |' in lines
    assert '| 2 | ring | 0 | node03 + node01 | 2 | PASS |' in text
    assert '### pair node01 + node02' in lines
    assert '### pair node02 + node03' not in lines
    assert '- **node02**' in lines
    assert '  - fab0: MTU 1500, expected 9000' in lines
    assert 'node01**' not in text
    assert '![' not in text


def test_an_ib_write_bw_pair_is_shown_at_its_size_against_the_pair_threshold(fixture_text):
    # node01's rail passed at 22.7 GB/s against a 10 GB/s pair threshold, whatever the all-node run's 1.5 GB/s window
    report_bw = bench_of_report(fixture_text('perftest', 'ib_write_bw-a40-cuda-duration.txt'), ['node01', 'node02'], True)
    pairs = [{'hosts': ['node01', 'node02'], 'rail': 0, 'round': 0, 'stage': 'ring', 'tool': 'ib_write_bw',
              'bench': report_bw, 'error': None, 'mpirun_rc': 0}]
    data = report(pairs=pairs)
    pair = dict(allreduce_threshold('explicit', min_busbw_gbs=10), description='explicit: 10 GB/s per rail')
    data['isolation'] = isolation_step(pairs, ['node01', 'node02', 'node03'], LAB_RAILS, pair, LARGE)
    lines = render_markdown(data).splitlines()
    assert 'Hosts: node01, node02; ib_write_bw, buffers in GPU memory; results not checked' \
        in lines
    assert '| 64 KiB | 2.9 | 22.7 | 22.7 | 10 | yes |' in lines
    assert 'Each pair run (one rank per node, one rail) is judged against explicit: 10 GB/s per rail.' in lines


def test_findings_table_with_actions_and_pass_ratios():
    hosts = sim.names(6)
    threshold = dict(allreduce_threshold('explicit', min_busbw_gbs=1.5), min_size_bytes=LARGE)
    rails = sim.rails_of(hosts, 2)
    step, dummy, dummy = sim.drive(hosts, rails, sim.Fabric(bad_nodes=['node0002'], bad_ports=[('node0005', 1)]),
                                   threshold, LARGE, repeats=1)
    text = render_markdown(report(isolation=step))
    lines = text.splitlines()
    assert '| kind | host | rail | interface | action | evidence |' in lines
    node = [line for line in lines
            if line.startswith('| node | node0002 | - | - | drain node0002: it fails with every partner on every rail '
                               '(2 rails)')]
    assert len(node) == 1 and '(confirm): 0.5 GB/s FAIL' in node[0]
    assert any(line.startswith('| link | node0005 | 1 | eth1 | reseat or replace the cable or optic on rail 1 of '
                               'node0005 (eth1, mlx5_1:1)') for line in lines)
    assert '### Pass ratios below 1' in lines
    assert '| node0002 | 0.0 | 0: 0.0, 1: 0.0 |' in lines
    assert [line for line in lines if line.startswith('| node0005 | 0.')][0].endswith('| 0: 1.0, 1: 0.0 |')
    assert '| node0001 |' not in text
    assert 'Rounds: 4 (ring 2, confirm 1, repeat 1); runs: %d.' % len(step['runs']) in lines


def test_wrong_result_rows_and_errors():
    hosts = ['node01', 'node02', 'node03']
    full = bench(2.0, hosts, correct=False, errors=['rank 2: size 1048576: got 7 | expected 6'])
    full['results'][0]['correct'] = False
    text = render_markdown(report(full=full))
    assert '**FAIL**: wrong allreduce result: rank 2: size 1048576: got 7 | expected 6' in text
    assert 'results correct: **no**' in text
    assert '- rank 2: size 1048576: got 7 \\| expected 6' in text
    assert '| 1 MiB | 1234.6 | 1 | 2 | - | **wrong result** |' in text


def test_calibrated_threshold_per_size():
    baseline = bench(2.0, ['node01', 'node02', 'node03'])
    baseline['results'] = baseline['results'][:-1]
    threshold = allreduce_threshold('calibrated', calibrated_fraction=0.5, baseline=baseline)
    text = render_markdown(report(threshold=threshold))
    assert '| 64 MiB | 1234.6 | 1 | 2 | 1 | yes |' in text
    assert '| 128 MiB | 1234.6 | 1 | 2 | - | - |' in text
    assert 'not in the baseline, not checked: 128 MiB' in text


def test_two_node_isolation_cannot_tell_a_node_from_its_link():
    threshold = dict(allreduce_threshold('explicit', min_busbw_gbs=1.5), min_size_bytes=LARGE)
    rails = dict((host, LAB_RAILS['node01']) for host in ('node01', 'node02'))
    pairs = [{'hosts': ['node01', 'node02'], 'rail': 0, 'bench': bench(0.01, ['node01', 'node02']), 'error': None}]
    text = render_markdown(report(isolation=isolation_step(pairs, ['node01', 'node02'], rails, threshold, LARGE)))
    assert '| link | - | 0 | - | with 2 nodes a bad node cannot be told from a bad link: check both ends of rail 0 ' \
           '(node01 and node02)' in text


def test_smoke_training_summary():
    train = {'passed': False, 'errors': ['rank 1: checkpoint not found'],
             'first': {'ok': True, 'end_step': 10, 'loss': 0.25, 'ranks': [0, 1]},
             'resumed': {'ok': False, 'resumed': False, 'start_step': 0}}
    text = render_markdown(report(train=train))
    lines = text.splitlines()
    assert '## Smoke training: FAIL' in lines
    assert '### first' in lines
    assert '| end_step | 10 |' in lines
    assert '| loss | 0.25 |' in lines
    assert '| ranks |' not in text
    assert '| resumed | False |' in lines
    assert '- rank 1: checkpoint not found' in lines


def test_a_run_that_exited_non_zero_shows_its_failure_its_exit_status_and_its_numbers():
    hosts = ['node01', 'node02', 'node03']
    data = report()
    error = 'allreduce on all nodes exited 3 (mpirun on node01): Exit code: 3'
    data['verdict'] = allreduce_verdict(data['runs'][0]['bench'], data['threshold'], LARGE, error)
    data['runs'][0]['mpirun_rc'] = 3
    pair = {'hosts': ['node01', 'node02'], 'bench': bench(2.0, ['node01', 'node02'])}
    data['runs'].append(dict(pair, name='pair node01 + node02', mpirun_rc=0))
    lines = render_markdown(data).splitlines()
    assert lines[0] == '# Allreduce validation: FAIL'
    assert ('**FAIL**: allreduce on all nodes exited 3 (mpirun on node01): Exit code: 3; results: all 2 large sizes ≥ '
            'threshold (explicit; closest: busbw 2 GB/s at 64 MiB ≥ 1.5 GB/s)') in lines
    assert 'Hosts: %s; 3 ranks; results correct: yes; mpirun exit status: **3**' % ', '.join(hosts) in lines
    assert 'Hosts: node01, node02; 2 ranks; results correct: yes; mpirun exit status: 0' in lines
    # the numbers are in the table all the same
    assert '| 64 MiB | 1234.6 | 1 | 2 | 1.5 | yes |' in lines


def test_smoke_training_exit_statuses():
    train = {'passed': False, 'errors': ['smoke training (resumed job) exited 3 (mpirun on node01): Exit code: 3'],
             'mpirun_rc': {'first': 0, 'resumed': 3},
             'first': {'ok': True, 'end_step': 10}, 'resumed': {'ok': True, 'start_step': 10}}
    lines = render_markdown(report(train=train)).splitlines()
    assert 'mpirun exit status: first 0, resumed **3**' in lines
    assert '### mpirun_rc' not in lines
    assert '- smoke training (resumed job) exited 3 (mpirun on node01): Exit code: 3' in lines
    assert '| start_step | 10 |' in lines


def test_many_hosts_are_shortened():
    hosts = ['node%04d' % i for i in range(1, 1001)]
    data = report()
    data['cluster']['hosts'] = hosts
    text = render_markdown(data)
    assert '| hosts | node0001, node0002' in text
    assert '... node1000 (1000 hosts) (1000) |' in text
    assert 'node0500' not in text


@pytest.mark.parametrize('data, message', [
    ([], 'report must be a dict'),
    ({'threshold': {'mode': 'explicit'}}, 'report.verdict must be'),
    ({'verdict': {'passed': True}}, 'report.threshold must be'),
    ({'verdict': {'passed': True}, 'threshold': {'mode': 'explicit'}, 'runs': {}}, None),
    ({'verdict': {'passed': True}, 'threshold': {'mode': 'explicit'}, 'runs': 'x'}, 'report.runs must be a list'),
    ({'verdict': {'passed': True}, 'threshold': {'mode': 'explicit'}, 'drift': {}}, 'report.drift must be a list'),
])
def test_rejects_malformed_reports(data, message):
    if message is None:
        assert render_markdown(data).startswith('# Allreduce validation: PASS\n')
        return
    with pytest.raises(ValueError, match=message):
        render_markdown(data)


def test_port_counters_show_findings_and_only_the_deltas_that_moved():
    before = {'read_at': 0.0, 'ports': {
        'fab0': {'rdma_port': None, 'counters': {'statistics/rx_bytes': 0, 'statistics/rx_dropped': 2}},
        'ens1f0': {'rdma_port': 'mlx5_0:1', 'counters': {'counters/link_downed': 0}}}}
    after = {'read_at': 8.0, 'ports': {
        'fab0': {'rdma_port': None, 'counters': {'statistics/rx_bytes': 800, 'statistics/rx_dropped': 2}},
        'ens1f0': {'rdma_port': 'mlx5_0:1', 'counters': {'counters/link_downed': 1}}}}
    data = report()
    data['counters'] = counters_report({'node02': {'allreduce on all nodes': {'before': before, 'after': after}}},
                                       ['link_downed'], {})
    text = render_markdown(data)
    section = text[text.index('## Port counters'):]
    assert '- **fatal**: node02 ens1f0 (mlx5_0:1): counters/link_downed rose by 1 during allreduce on all nodes' in section
    assert '| allreduce on all nodes | node02 | fab0 | - | statistics/rx_bytes | 800 | 100.0 |' in section
    assert '| allreduce on all nodes | node02 | ens1f0 | mlx5_0:1 | counters/link_downed | 1 | 0.1 |' in section
    assert 'rx_dropped' not in section


def test_port_counters_that_did_not_move_say_so():
    same = {'read_at': 0.0, 'ports': {'fab0': {'rdma_port': None, 'counters': {'statistics/rx_bytes': 5}}}}
    data = report()
    data['counters'] = counters_report({'node01': {'job': {'before': same, 'after': dict(same, read_at=1.0)}}}, [], {})
    assert '## Port counters\n\nno fatal counter rose on 1 hosts\n\nNo counter moved.\n' in render_markdown(data)


def test_drift_table_names_host_component_seen_and_expected():
    versions = dict((host, {'package:rdma-core': '44.0-2', 'nvidia_driver': '565.57.01'})
                    for host in ['node01', 'node02', 'node03'])
    versions['node02']['package:rdma-core'] = '44.0-1'
    versions['node03']['nvidia_driver'] = None
    data = report()
    data['drift'] = drift_findings(versions)
    text = render_markdown(data)
    section = text[text.index('## Version drift'):text.index('## Runs')]
    assert section.startswith('## Version drift\n\n2 findings on 2 hosts: node02, node03.\n')
    assert '| host | component | seen | expected | expected from |' in section
    assert '| node03 | nvidia_driver | (none) | 565.57.01 | most hosts |' in section
    assert '| node02 | package:rdma-core | 44.0-1 | 44.0-2 | most hosts |' in section
    # preflight first, then drift: both are what was found before any job
    assert text.index('## Preflight') < text.index('## Version drift')


def test_drift_that_found_nothing_says_so_and_one_not_checked_is_not_shown():
    data = report()
    data['drift'] = []
    assert '## Version drift\n\nNo drift: every host runs the same versions.\n' in render_markdown(data)
    data['drift'] = None
    assert '## Version drift' not in render_markdown(data)
    del data['drift']
    assert '## Version drift' not in render_markdown(data)


def test_many_drift_findings_are_cut_in_the_table_only():
    findings = [{'host': 'node%04d' % index, 'component': 'kernel', 'seen': '6.1.0-27-amd64',
                 'expected': '6.1.0-28-amd64', 'basis': 'golden'} for index in range(450)]
    data = report()
    data['drift'] = findings
    text = render_markdown(data)
    assert text.count('| kernel | 6.1.0-27-amd64 | 6.1.0-28-amd64 | validate_golden |') == 400
    assert '... and 50 more findings in report.json.' in text


def engine_report():
    """Three nodes, the ring judged (one rail of node03 slow) and MPI_Allreduce reported beside it."""
    hosts = ['node01', 'node02', 'node03']
    rows = []
    for power in range(6, 8):
        size = MIB << power
        rows.append({'engine': 'ring', 'size_bytes': size, 'time_us': 900.0, 'algbw_gbs': 0.2, 'busbw_gbs': 0.27,
                     'correct': True, 'rails': [
                         {'local_rank': 0, 'rail': 0, 'segment_bytes': size // 2, 'inter_us': 100.0, 'busbw_gbs': 0.4},
                         {'local_rank': 1, 'rail': 1, 'segment_bytes': size // 2, 'inter_us': 900.0, 'busbw_gbs': 0.01}]})
        rows.append({'engine': 'mpi', 'size_bytes': size, 'time_us': 950.0, 'algbw_gbs': 0.19, 'busbw_gbs': 0.25,
                     'correct': True})
    links = [{'rail': rail, 'local_rank': rail, 'src': src, 'dst': dst, 'bytes': 8 * MIB,
              'gbs': 0.005 if (rail, src) == (1, 'node03') else 0.6}
             for rail in (0, 1) for src in hosts for dst in hosts if src != dst]
    full = {'world_size': 6, 'device': 'cpu', 'hosts': hosts, 'mpi': {'library_version': 'Open MPI v4.1.4'},
            'engines': {'ring': {'algorithm': 'hierarchical ring: ...', 'nodes': 3, 'ranks_per_node': 2,
                                 'hierarchical': True, 'links': links},
                        'mpi': {'algorithm': "the MPI library's MPI_Allreduce", 'component': 'tuned'}},
            'results': rows, 'errors': [], 'correct': True,
            'job_environment': {'host': 'node01', 'differs_on': [], 'ranks': [
                {'local_rank': rank, 'variables': {'UCX_NET_DEVICES': 'fab%d' % rank, 'HPCFABRIC_RAIL': str(rank),
                                                   'UCX_TLS': 'tcp,self,sm'}} for rank in (0, 1)]}}
    threshold = dict(allreduce_threshold('explicit', min_busbw_gbs=0.025), min_size_bytes=LARGE)
    return {'cluster': {'hosts': hosts, 'world_size': 6, 'device': 'cpu'}, 'threshold': threshold,
            'rail_threshold': threshold, 'link_rates': {'node_gbps': None, 'port_gbps': None},
            'verdict': allreduce_verdict(full, threshold, LARGE, engine='ring', rail_threshold=threshold),
            'runs': report_runs(full, None, 0, 'ring'), 'preflight': {}}


def test_the_engines_stand_side_by_side_and_the_rings_slow_link_is_named():
    text = render_markdown(engine_report())
    lines = text.splitlines()
    assert lines[0] == '# Allreduce validation: FAIL'
    assert any(line.startswith('**FAIL**: 2 of 6 checks (sizes and rails) below threshold (explicit): rail 1 busbw 0.01')
               and line.endswith('node03 sends slowly on rail 1 (node03 -> node01 0.005 GB/s, node03 -> node02 0.005 '
                                 'GB/s)') for line in lines)
    assert 'No link-rate bound: no node has Active RDMA ports with a known rate.' in lines
    assert ('| ring | judged | 128 MiB | 0.27 | - | - | yes | hierarchical ring: ... |' in lines)
    assert ("| mpi | reported | 128 MiB | 0.25 | - | - | yes | the MPI library's MPI_Allreduce; MPI_Allreduce served by "
            "coll/tuned |") in lines
    assert ('- **node03 sends slowly on rail 1**: node03 -> node01 0.005 GB/s, node03 -> node02 0.005 GB/s') in lines
    assert '| 1 | node03 | node01 | 0.005 |' in lines
    assert '| 1 | HPCFABRIC_RAIL=1 UCX_NET_DEVICES=fab1 UCX_TLS=tcp,self,sm |' in lines
    assert 'Other nodes whose ranks ran with other values (the binding aside): none.' in lines
    # the judged engine's sizes against the threshold, its rails against the rail threshold; the other one not judged
    ring = text[text.index('### all nodes (6 ranks), ring engine'):text.index('### all nodes (6 ranks), mpi engine')]
    assert '| 128 MiB | 900.0 | 0.2 | 0.27 | 0.025 | yes |' in ring
    assert '| 128 MiB | 1 | 900.0 | 0.01 | 0.025 | **no** |' in ring
    mpi = text[text.index('### all nodes (6 ranks), mpi engine'):]
    assert 'reported, not judged' in mpi and '| 128 MiB | 950.0 | 0.19 | 0.25 | - | - |' in mpi


def _ok_cells(text, heading):
    """``{(size, rail or None): (threshold cell, ok cell)}`` of the run under ``heading``: its sizes, then its rails."""
    cells = {}
    rails = False
    for line in text[text.index(heading):].splitlines()[1:]:
        if line.startswith('### '):
            break
        rails = rails or line.startswith('Rails (')
        fields = [field.strip() for field in line.strip('|').split('|')]
        if line.startswith('|') and fields[0] not in ('size', '---'):
            cells[(fields[0], fields[1] if rails else None)] = (fields[-2], fields[-1])
    return cells


def test_the_ok_cells_are_the_verdicts_checks_not_a_second_comparison():
    report = engine_report()
    heading = '### all nodes (6 ranks), ring engine'
    expected = dict(((human_size(check['size_bytes']), str(check['rail']) if 'rail' in check else None),
                     (format_gbs(check['threshold_gbs']), 'yes' if check['passed'] else '**no**'))
                    for check in report['verdict']['checked'])
    cells = _ok_cells(render_markdown(report), heading)
    assert dict((key, cells[key]) for key in expected) == expected
    assert ('128 MiB', '1') in expected and ('64 MiB', None) in expected
    # the verdict decides: a check it passed reads yes whatever the numbers say, one it failed reads no
    flipped = [dict(check, passed=not check['passed']) for check in report['verdict']['checked']]
    report['verdict'] = dict(report['verdict'], checked=flipped)
    cells = _ok_cells(render_markdown(report), heading)
    assert all(cells[key][1] == ('**no**' if ok == 'yes' else 'yes') for key, (_limit, ok) in expected.items())


@pytest.mark.parametrize('busbw', [1.4999, 1.5, 1.5001])
def test_a_pair_runs_ok_cells_are_the_isolations_verdict_on_it(busbw):
    # exactly at the pair threshold passes, in the isolation's verdict on the pair and in its rows
    hosts = ['node01', 'node02', 'node03']
    pairs = [{'hosts': ['node01', 'node02'], 'rail': 0, 'round': 0, 'stage': 'ring', 'error': None, 'mpirun_rc': 0,
              'bench': bench(busbw, ['node01', 'node02'])}]
    data = report(full=bench(2.0, hosts), pairs=pairs)
    judged = data['isolation']['runs'][0]['passed']
    cells = _ok_cells(render_markdown(data), '### pair node01 + node02')
    assert judged is (busbw >= 1.5)
    assert cells[('64 MiB', None)] == cells[('128 MiB', None)] == ('1.5', 'yes' if judged else '**no**')
    assert cells[('1 MiB', None)] == ('-', '-')


def test_the_report_says_what_nccl_used_and_where_it_differs_from_the_job_environment(fixture_text):
    report = engine_report()
    bench = report['runs'][0]['bench']
    full = dict(bench, results=bench['results'] + [dict(row, engine='nccl') for row in bench['results']],
                engines=dict(bench['engines'], nccl={'algorithm': "NCCL's ncclAllReduce", 'version': '2.18.5',
                                                     'debug': {'node01': fixture_text('nccl-debug', 'nccl-1052-roce-hca-set.txt').splitlines()}}))
    full['job_environment']['ranks'][0]['variables']['NCCL_IB_HCA'] = '=mlx5_4:1'
    report['runs'] = report_runs(full, None, 0, 'ring')
    lines = render_markdown(report).splitlines()
    assert ('What NCCL 2.18.5 said it used on node01: network IB; devices mlx5_4:1 (RoCE); variables it read: '
            'NCCL_IB_HCA=mlx5_4.') in lines
    assert '- **node01: NCCL read NCCL_IB_HCA=mlx5_4, the job environment has =mlx5_4:1**' in lines


# report_runs

BENCH = fakes.BENCH


def test_report_runs_all_nodes_then_the_pairs_with_results():
    pair = dict(BENCH, world_size=2)
    pairs = [{'hosts': ['node01', 'node02'], 'rail': 0, 'stage': 'ring', 'bench': pair, 'error': None, 'mpirun_rc': 0},
             {'hosts': ['node02', 'node03'], 'bench': None, 'error': 'isolation pair node02 + node03 exited 1',
              'mpirun_rc': 1},
             {'hosts': ['node03', 'node01'], 'rail': 1, 'stage': 'confirm', 'bench': pair, 'mpirun_rc': 3,
              'error': 'isolation pair node03 + node01 on rail 1 exited 3'}]
    assert report_runs(BENCH, pairs, 0) == [
        {'name': 'all nodes (16 ranks)', 'hosts': ['node01', 'node02'], 'bench': BENCH, 'mpirun_rc': 0},
        {'name': 'pair node01 + node02, rail 0 (ring)', 'hosts': ['node01', 'node02'], 'bench': pair, 'mpirun_rc': 0},
        {'name': 'pair node03 + node01, rail 1 (confirm)', 'hosts': ['node03', 'node01'], 'bench': pair, 'mpirun_rc': 3},
    ]


def test_report_runs_without_isolation():
    assert report_runs(BENCH) == report_runs(BENCH, []) == [
        {'name': 'all nodes (16 ranks)', 'hosts': ['node01', 'node02'], 'bench': BENCH, 'mpirun_rc': None}]


@pytest.mark.parametrize('bench, pairs, message', [
    ({}, None, '^bench must be the JSON of files/bench/allreduce.py'),
    (BENCH, ['node01'], '^isolation pairs must be {hosts, rail, stage, bench, error, mpirun_rc}'),
])
def test_report_runs_reject(bench, pairs, message):
    with pytest.raises(ValueError, match=message):
        report_runs(bench, pairs)
