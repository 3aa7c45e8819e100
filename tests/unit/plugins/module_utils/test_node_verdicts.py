# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""node_verdicts: one verdict per node from every source of the report, the bad hosts, and the rail matrix."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from ansible_collections.hpcfabric.cluster.plugins.module_utils.drift import drift_findings
from ansible_collections.hpcfabric.cluster.plugins.module_utils.gpu_health import health_report
from ansible_collections.hpcfabric.cluster.plugins.module_utils.isolation import isolation_step
from ansible_collections.hpcfabric.cluster.plugins.module_utils.node_verdicts import (
    node_verdicts,
    rail_matrix,
    reference_threshold,
)
from ansible_collections.hpcfabric.cluster.plugins.module_utils.port_counters import counters_report
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.report import render_markdown
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.thresholds import allreduce_threshold
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.verdicts import allreduce_verdict

_SPEC = importlib.util.spec_from_file_location('isolation_sim', Path(__file__).with_name('isolation_sim.py'))
sim = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(sim)

MIB = sim.MIB
THRESHOLD = dict(allreduce_threshold('explicit', min_busbw_gbs=10.0), min_size_bytes=MIB)


def report(hosts, full_busbw=sim.GOOD, isolation=None, **extra):
    full = sim.bench(full_busbw, hosts)
    data = {'generated': 'now', 'cluster': {'hosts': hosts, 'world_size': len(hosts), 'device': 'cpu',
                                            'mpi_library': 'Open MPI'},
            'threshold': THRESHOLD, 'verdict': allreduce_verdict(full, THRESHOLD, MIB),
            'runs': [{'name': 'all nodes', 'hosts': hosts, 'bench': full}], 'isolation': isolation,
            'preflight': dict((host, []) for host in hosts), 'train_smoke': None, 'counters': None, 'drift': None}
    data.update(extra)
    return data


def isolated(hosts, fabric, rails=1, repeats=0):
    """A failed all-node run and the isolation the role runs after it on the simulated fabric."""
    step, dummy, dummy = sim.drive(hosts, sim.rails_of(hosts, rails), fabric, THRESHOLD, MIB, repeats=repeats)
    return report(hosts, full_busbw=sim.SLOW, isolation=step)


def eight_nodes():
    """8 nodes on 4 rails: node0003 bad, node0006's rail 2 bad, node0008's rail 1 flaky."""
    hosts = sim.names(8)
    return hosts, isolated(hosts, sim.Fabric(bad_nodes=['node0003'], bad_ports=[('node0006', 2)],
                                             flaky_ports=[('node0008', 1)]), rails=4, repeats=2)


def verdicts_of(result):
    return dict((node['host'], node['verdict']) for node in result['nodes'])


def reasons_of(result, host):
    return [node['reasons'] for node in result['nodes'] if node['host'] == host][0]


def test_a_passing_run_with_nothing_found_passes_every_node_and_says_what_was_not_checked():
    hosts = sim.names(3)
    result = node_verdicts(report(hosts, counters=None, drift=[]))
    assert result['nodes'] == [{'host': host, 'verdict': 'PASS', 'reasons': []} for host in hosts]
    assert result['cluster'] == [] and result['bad_hosts'] == []
    assert result['not_checked'] == ['counters', 'health']


def test_isolation_node_link_and_flaky_ports_fail_their_hosts_only():
    hosts, data = eight_nodes()
    result = node_verdicts(data)
    assert verdicts_of(result) == dict((host, 'FAIL' if host in ('node0003', 'node0006', 'node0008') else 'PASS')
                                       for host in hosts)
    assert result['bad_hosts'] == ['node0003', 'node0006', 'node0008']
    node, link, flaky = (reasons_of(result, host) for host in ('node0003', 'node0006', 'node0008'))
    assert node == [{'source': 'isolation', 'verdict': 'FAIL', 'reason': 'node: fails with every partner on every rail',
                     'action': data['isolation']['findings'][0]['action']}]
    assert link[0]['reason'] == 'link: rail 2 (eth2) fails with every partner, confirmed against one that passed'
    assert link[0]['action'].startswith('reseat or replace the cable or optic on rail 2 of node0006')
    assert flaky[0]['reason'] == 'flaky: rail 1 (eth1) passes with some partners and fails with others'
    # the all-node run failed: a cluster line, pointing at the nodes
    assert [(line['source'], line['verdict'], line['action']) for line in result['cluster']] == [
        ('allreduce', 'FAIL', 'see the nodes the isolation names')]


def test_without_the_isolation_a_failed_run_proves_no_node_good_or_bad():
    hosts = sim.names(3)
    result = node_verdicts(report(hosts, full_busbw=sim.SLOW))
    assert set(verdicts_of(result).values()) == {'UNKNOWN'}
    assert reasons_of(result, 'node0001')[0]['reason'] == ('not isolated: the all-node run failed and no pair run '
                                                           'tested it')
    assert result['bad_hosts'] == []
    assert 'validate_isolation on_failure' in result['cluster'][0]['action']


def test_a_fabric_wide_fault_is_a_cluster_line_and_leaves_every_node_unknown():
    hosts = sim.names(4)
    result = node_verdicts(isolated(hosts, sim.Fabric(everything_slow=True), rails=2))
    assert [line['reason'].split(':')[0] for line in result['cluster']] == [
        '8 of 8 large sizes below threshold (explicit)', 'fabric']
    assert result['cluster'][1]['verdict'] == 'FAIL'
    assert set(verdicts_of(result).values()) == {'UNKNOWN'} and result['bad_hosts'] == []
    assert [item['reason'] for item in reasons_of(result, 'node0002')] == [
        'rail 0: no pair run with it passed, and no finding names it',
        'rail 1: no pair run with it passed, and no finding names it']


def test_a_dead_rail_leaves_only_that_rail_unknown():
    hosts = sim.names(4)
    result = node_verdicts(isolated(hosts, sim.Fabric(bad_ports=[(host, 1) for host in hosts]), rails=2))
    assert [line['reason'].split(':')[0] for line in result['cluster']][1:] == ['fabric on rail 1']
    assert set(verdicts_of(result).values()) == {'UNKNOWN'}
    assert [item['reason'] for item in reasons_of(result, 'node0004')] == [
        'rail 1: no pair run with it passed, and no finding names it']


def test_two_nodes_cannot_tell_node_from_link_so_neither_is_named():
    hosts = sim.names(2)
    result = node_verdicts(isolated(hosts, sim.Fabric(bad_nodes=['node0002'])))
    assert [line['reason'].split(':')[0] for line in result['cluster']][1:] == ['link on rail 0']
    assert verdicts_of(result) == {'node0001': 'UNKNOWN', 'node0002': 'UNKNOWN'}


def test_unconfirmed_suspects_warn_and_are_not_bad_hosts():
    # 4 of 7 ports fail on the rail: more than pass, so the engine confirms none of them
    hosts = sim.names(7)
    data = isolated(hosts, sim.Fabric(bad_ports=[(host, 0) for host in hosts[:4]]))
    suspects = [item['host'] for item in data['isolation']['unconfirmed']]
    assert suspects == hosts[:4] and data['isolation']['findings'] == []
    result = node_verdicts(data)
    for host in suspects:
        assert verdicts_of(result)[host] == 'WARN'
        assert reasons_of(result, host) == [{
            'source': 'isolation', 'verdict': 'WARN',
            'reason': 'rail 0 failed with every partner, not confirmed (no partner that passed was left)',
            'action': 'test it against a node known good; fix the rail\'s other failing ports first'}]
    assert result['bad_hosts'] == []


def test_every_pair_passing_after_a_failed_run_passes_the_nodes_and_says_where_to_look():
    hosts = sim.names(4)
    result = node_verdicts(isolated(hosts, sim.Fabric()))
    assert set(verdicts_of(result).values()) == {'PASS'}
    assert result['cluster'][0]['action'].startswith('every pair passed: look at what only the full run exercises')


def _read(at, **counters):
    return {'read_at': at, 'ports': {'eth0': {'rdma_port': 'mlx5_0:1', 'counters': counters}}}


def test_fatal_counters_fail_warnings_and_unread_hosts_warn():
    hosts = sim.names(3)
    reads = {
        'node0001': {'allreduce': {'before': _read(0.0, **{'counters/link_downed': 0}),
                                   'after': _read(10.0, **{'counters/link_downed': 1})}},
        'node0002': {'allreduce': {'before': _read(0.0, **{'counters/symbol_error': 0}),
                                   'after': _read(10.0, **{'counters/symbol_error': 500})}},
        'node0003': {'allreduce': {'before': _read(0.0)}},
    }
    result = node_verdicts(report(hosts, counters=counters_report(reads)))
    assert verdicts_of(result) == {'node0001': 'FAIL', 'node0002': 'WARN', 'node0003': 'WARN'}
    assert result['bad_hosts'] == ['node0001']
    fatal = reasons_of(result, 'node0001')[0]
    assert (fatal['source'], fatal['verdict']) == ('counters', 'FAIL')
    assert fatal['reason'] == 'node0001 eth0 (mlx5_0:1): counters/link_downed rose by 1 during allreduce'
    assert fatal['action'].startswith('check eth0: reseat or replace its cable or optic')
    assert reasons_of(result, 'node0002')[0]['action'] == ('watch eth0\'s counters/symbol_error; clean or reseat its '
                                                           'optic if it keeps rising')
    assert reasons_of(result, 'node0003')[0]['reason'] == 'port counters not read around allreduce'


def test_drift_fails_only_where_the_role_fails_on_it():
    hosts = sim.names(3)
    versions = dict((host, {'kernel': '6.1.0-28-amd64'}) for host in hosts)
    versions['node0002']['kernel'] = '6.1.0-27-amd64'
    drift = drift_findings(versions)
    for drift_fail, expected in ((True, 'FAIL'), (False, 'WARN'), (None, 'WARN')):
        extra = {} if drift_fail is None else {'drift_fail': drift_fail}
        result = node_verdicts(report(hosts, drift=drift, **extra))
        assert verdicts_of(result) == {'node0001': 'PASS', 'node0002': expected, 'node0003': 'PASS'}
        assert reasons_of(result, 'node0002') == [{
            'source': 'drift', 'verdict': expected, 'reason': 'kernel 6.1.0-27-amd64, expected 6.1.0-28-amd64 '
            '(drift from most hosts)', 'action': 'install kernel 6.1.0-28-amd64 on node0002, or set validate_golden '
            'to the version wanted'}]
        assert result['bad_hosts'] == (['node0002'] if expected == 'FAIL' else [])


def test_health_findings_fail_unless_they_say_warning_and_no_health_is_not_checked():
    hosts = sim.names(3)
    health = [{'host': 'node0001', 'device': 'GPU3', 'check': 'row remap pending', 'seen': True,
               'action': 'reset GPU3 or reboot node0001'},
              {'host': 'node0003', 'device': 'mlx5_1', 'check': 'temperature', 'seen': '92 C', 'action': 'check cooling',
               'severity': 'warning'}]
    result = node_verdicts(report(hosts, health=health))
    assert verdicts_of(result) == {'node0001': 'FAIL', 'node0002': 'PASS', 'node0003': 'WARN'}
    assert reasons_of(result, 'node0001') == [{'source': 'health', 'verdict': 'FAIL',
                                               'reason': 'GPU3 row remap pending: True',
                                               'action': 'reset GPU3 or reboot node0001'}]
    assert 'health' not in result['not_checked']
    assert 'health' in node_verdicts(report(hosts, health=None))['not_checked']


def test_preflight_problems_fail_and_the_worst_reason_decides():
    hosts = sim.names(2)
    health = [{'host': 'node0001', 'device': 'GPU0', 'check': 'ecc', 'seen': 2, 'action': 'x', 'severity': 'warning'}]
    preflight = {'node0001': ['eth0: MTU 1500, expected 9000'], 'node0002': [], 'extra01': ['unreachable']}
    result = node_verdicts(report(hosts, health=health, preflight=preflight))
    assert [node['host'] for node in result['nodes']] == ['node0001', 'node0002', 'extra01']
    assert verdicts_of(result) == {'node0001': 'FAIL', 'node0002': 'PASS', 'extra01': 'FAIL'}
    assert [(item['source'], item['verdict']) for item in reasons_of(result, 'node0001')] == [
        ('preflight', 'FAIL'), ('health', 'WARN')]
    assert result['bad_hosts'] == ['node0001', 'extra01']


def test_rail_matrix_is_the_best_run_of_each_node_on_each_rail():
    hosts, data = eight_nodes()
    matrix = rail_matrix(data)
    assert matrix['hosts'] == hosts and matrix['total'] == 8
    assert matrix['rails'] == ['rail 0', 'rail 1', 'rail 2', 'rail 3']
    assert matrix['threshold_gbs'] == 10.0
    cells = dict(zip(matrix['hosts'], matrix['cells']))
    # a bad node is low everywhere, a bad port on its rail only; its partners' best runs wash it out
    assert [(cell['busbw_gbs'], cell['passed']) for cell in cells['node0003']] == [(sim.SLOW, False)] * 4
    assert [cell['busbw_gbs'] for cell in cells['node0006']] == [sim.GOOD, sim.GOOD, sim.SLOW, sim.GOOD]
    assert [cell['busbw_gbs'] for cell in cells['node0002']] == [sim.GOOD] * 4
    # a flaky port reaches the threshold in its best run: its pass ratio says the rest
    flaky = cells['node0008'][1]
    assert flaky['busbw_gbs'] == sim.GOOD and flaky['passed']
    assert flaky['pass_ratio'] == data['isolation']['pass_ratios']['node0008']['rails']['1'] < 1
    assert flaky['runs'] == sum(1 for run in data['isolation']['runs'] if run['rail'] == 1 and 'node0008' in run['hosts'])


def test_rail_matrix_colours_against_the_pair_runs_threshold():
    hosts, data = eight_nodes()
    # the all-node run's threshold is a whole node's rails; the isolation judged its one-rail pairs against 10 GB/s
    data['threshold'] = dict(allreduce_threshold('explicit', min_busbw_gbs=80.0), min_size_bytes=MIB)
    assert rail_matrix(data)['threshold_gbs'] == 10.0
    data['isolation'] = dict(data['isolation'], threshold=None)
    assert rail_matrix(data)['threshold_gbs'] == 80.0


def test_rail_matrix_keeps_the_lowest_rows_of_a_large_cluster_and_leaves_missing_rails_empty():
    hosts = sim.names(10)
    rails = sim.rails_of(hosts, 2)
    del rails['node0001']['1']
    fabric = sim.Fabric(bad_nodes=['node0009'], bad_ports=[('node0004', 1)], flaky_ports=[('node0007', 0)])
    step, dummy, dummy = sim.drive(hosts, rails, fabric, THRESHOLD, MIB, repeats=2)
    matrix = rail_matrix(report(hosts, isolation=step), limit=3)
    assert matrix['total'] == 10
    # the lowest rows, in the cluster's order: a failed rail, then the flaky port whose best run passed
    assert matrix['hosts'] == ['node0004', 'node0007', 'node0009']
    assert [cell['passed'] for cell in matrix['cells'][2]] == [False, False]
    assert matrix['cells'][1][0]['passed'] and matrix['cells'][1][0]['pass_ratio'] < 0.5
    full = rail_matrix(report(hosts, isolation=step))
    assert full['cells'][0][1] is None and full['cells'][0][0]['busbw_gbs'] == sim.GOOD


def test_rail_matrix_without_pair_runs_or_rails():
    hosts = sim.names(3)
    assert rail_matrix(report(hosts)) is None
    isolation = isolation_step([], ['node0001'], sim.rails_of(['node0001'], 1), THRESHOLD, MIB)
    assert rail_matrix(report(hosts, isolation=isolation)) is None
    run = {'hosts': ['node0001', 'node0002'], 'rail': None, 'passed': True, 'busbw_gbs': 12.5}
    matrix = rail_matrix(report(hosts, isolation={'runs': [run]}))
    assert matrix['rails'] == ['all rails'] and matrix['hosts'] == ['node0001', 'node0002']


def test_reference_threshold_of_a_calibrated_baseline_is_its_lowest_checked_size():
    assert reference_threshold({'min_busbw_gbs': 4, 'min_size_bytes': 0}) == 4.0
    assert reference_threshold({'min_busbw_gbs': None, 'per_size_gbs': {'1024': 1.0, '4096': 6.0, '8192': 5.0},
                                'min_size_bytes': 4096}) == 5.0
    assert reference_threshold({}) is None


def test_markdown_nodes_table_near_the_top():
    hosts = sim.names(4)
    data = isolated(hosts, sim.Fabric(bad_nodes=['node0002']))
    text = render_markdown(data, plot='allreduce.png', rails_plot='rails.png')
    section = text[text.index('## Nodes'):text.index('## Cluster')]
    assert section.startswith('## Nodes\n\n1 FAIL, 3 PASS of 4 hosts. FAIL, in the bad hosts file (for --limit or a '
                              'drain): node0002.\n')
    assert '| host | verdict | reasons | actions |' in section
    assert ('| node0002 | **FAIL** | FAIL isolation: node: fails with every partner on every rail | drain node0002: '
            in section)
    assert '| node0001 | PASS | - | - |' in section
    assert '- **FAIL** allreduce: ' in section
    assert 'Not checked: counters, drift, health; a PASS covers only what was checked.' in section
    assert '![best pair bus bandwidth per node and rail against the threshold](rails.png)' in section
    assert text.index('## Nodes') < text.index('## Isolation')


def test_markdown_says_why_there_is_no_heatmap_and_cuts_a_large_table():
    hosts = sim.names(3)
    assert 'No rail heatmap: the isolation did not run.' in render_markdown(report(hosts), plot='allreduce.png')
    assert 'No rail heatmap' not in render_markdown(report(hosts))
    many = sim.names(450)
    preflight = dict((host, []) for host in many)
    preflight['node0007'] = ['no GPU']
    text = render_markdown(report(many, preflight=preflight))
    assert '| node0007 | **FAIL** | FAIL preflight: no GPU |' in text
    assert '| node0001 |' not in text
    assert '... and 449 more hosts (449 of them PASS) in report.json `verdicts`.' in text


def test_health_sources_a_node_could_not_read_are_named_under_the_verdicts_not_passed_over():
    """A lab node's journal holds no kernel lines: its XIDs were not checked, which report.md says beside its PASS."""
    hosts = sim.names(2)
    health = health_report(dict((host, {'health': {'gpus': [], 'xids': [], 'pcie': [], 'nvlink': None, 'dcgm': None,
                                                   'unread': [{'source': 'kernel log', 'why': 'no kernel lines'}]}})
                                for host in hosts))
    data = report(hosts, health=health['findings'], health_unread=health['unread'])
    result = node_verdicts(data)
    assert verdicts_of(result) == dict.fromkeys(hosts, 'PASS')
    assert result['not_read'] == [{'host': host, 'source': 'kernel log', 'why': 'no kernel lines'} for host in hosts]
    assert ('Not read, so not covered by a PASS there: node0001 kernel log (no kernel lines); node0002 kernel log '
            '(no kernel lines).') in render_markdown(dict(data, verdicts=result), plot='allreduce.png')


def test_a_saturated_counter_warns_with_the_action_that_makes_it_count_again():
    hosts = ['node0001']
    reads = {'node0001': {'allreduce': {'before': _read(0.0, **{'counters/port_xmit_discards': 65535}),
                                        'after': _read(10.0, **{'counters/port_xmit_discards': 65535})}}}
    result = node_verdicts(report(hosts, counters=counters_report(reads)))
    reason = reasons_of(result, 'node0001')[0]
    assert (reason['source'], reason['verdict']) == ('counters', 'WARN')
    assert 'saturated at 65535' in reason['reason']
    assert reason['action'].startswith("reset the port's counters so they count again (as root: perfquery -C mlx5_0 -P 1 -R;")
