# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""isolation: the engine driven round by round against a simulated fabric, as the validate role drives it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.isolation import (
    isolation_rails,
    isolation_step,
    judge_run,
    ring_rounds,
    run_text,
)
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.thresholds import allreduce_threshold

_SPEC = importlib.util.spec_from_file_location('isolation_sim', Path(__file__).with_name('isolation_sim.py'))
sim = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(sim)
bench, names, rails_of, Fabric, SLOW, GOOD = sim.bench, sim.names, sim.rails_of, sim.Fabric, sim.SLOW, sim.GOOD

LARGE = 64 * sim.MIB
THRESHOLD = allreduce_threshold('explicit', min_busbw_gbs=1.5)


def drive(hosts, rails, fabric, repeats=0, seed=7):
    step, rounds, dummy = sim.drive(hosts, rails, fabric, THRESHOLD, LARGE, repeats=repeats, seed=seed)
    return step, rounds


def kinds(step):
    return sorted((item['kind'], item['host'], item['rail']) for item in step['findings'])


def test_a_thousand_nodes_on_eight_rails_names_exactly_the_planted_faults():
    hosts = names(1024)
    rails = rails_of(hosts, 8)
    # two bad nodes side by side in the ring, one alone; two bad ports; flaky ports on two rails
    bad_nodes = ['node0100', 'node0101', 'node0777']
    bad_ports = [('node0005', 3), ('node0600', 0)]
    flaky_ports = [('node0042', 5), ('node0900', 7), ('node0333', 0)]
    step, rounds = drive(hosts, rails, Fabric(bad_nodes, bad_ports, flaky_ports), repeats=6)
    assert kinds(step) == sorted([('node', host, None) for host in bad_nodes]
                                 + [('link', host, rail) for host, rail in bad_ports]
                                 + [('flaky', host, rail) for host, rail in flaky_ports])
    assert [planned['stage'] for planned in rounds] == ['ring', 'ring', 'confirm'] + ['repeat'] * 6
    assert step['rounds'] == len(rounds) == 9
    assert step['stages'] == {'ring': 2, 'confirm': 1, 'repeat': 6}
    assert step['unconfirmed'] == []
    assert step['bad_hosts'] == ['node0005', 'node0042', 'node0100', 'node0101', 'node0333', 'node0600', 'node0777',
                                 'node0900']
    link = [item for item in step['findings'] if item['kind'] == 'link' and item['host'] == 'node0005'][0]
    assert link['interface'] == 'eth3'
    assert link['action'].startswith('reseat or replace the cable or optic on rail 3 of node0005 (eth3, mlx5_3:1)')
    assert any('(confirm)' in text and text.endswith('FAIL') for text in link['evidence'])
    # every rail of a round runs at once, pinned to its own port on both ends
    assert sorted(set(run['rail'] for run in rounds[0]['runs'])) == list(range(8))
    assert rounds[0]['runs'][0] == {'hosts': ['node0001', 'node0002'], 'rail': 0, 'net_devices': 'mlx5_0:1'}
    assert step['pass_ratios']['node0002']['all'] == 1.0
    assert step['pass_ratios']['node0042']['rails']['5'] < 1.0
    assert step['pass_ratios']['node0042']['rails']['4'] == 1.0


@pytest.mark.parametrize('count', [16, 1024])
def test_the_rounds_do_not_grow_with_the_node_count(count):
    hosts = names(count)
    step, rounds = drive(hosts, rails_of(hosts, 2), Fabric(bad_nodes=[hosts[3]]), repeats=2)
    assert len(rounds) == 2 + 1 + 2
    assert kinds(step) == [('node', hosts[3], None)]


def test_one_bad_node_on_one_rail_is_a_node_confirmed_against_a_partner_that_passed():
    hosts = names(4)
    step, rounds = drive(hosts, rails_of(hosts, 1), Fabric(bad_nodes=['node0002']))
    assert [planned['stage'] for planned in rounds] == ['ring', 'ring', 'confirm']
    # the confirmation pairs the suspect with a node that passed and that it has not run with yet
    assert rounds[2]['runs'] == [{'hosts': ['node0004', 'node0002'], 'rail': 0, 'net_devices': 'mlx5_0:1'}]
    [finding] = step['findings']
    assert (finding['kind'], finding['host'], finding['rail'], finding['interface']) == ('node', 'node0002', None, None)
    assert finding['action'].startswith('drain node0002: it fails with every partner on every rail')
    assert 'node0004 + node0002 rail 0 (confirm): 0.5 GB/s FAIL' in finding['evidence']
    assert step['bad_hosts'] == ['node0002']
    assert step['summary'].startswith('5 runs in 3 rounds; node node0002: drain node0002')


def test_a_node_bad_on_one_rail_of_two_is_a_link_with_its_interface():
    hosts = names(5)
    step, dummy = drive(hosts, rails_of(hosts, 2), Fabric(bad_ports=[('node0003', 1)]))
    assert kinds(step) == [('link', 'node0003', 1)]
    assert step['findings'][0]['interface'] == 'eth1'


def test_a_node_that_passed_is_never_turned_to_failed():
    """node0003 passes once in the ring, then fails everything after: it is flaky at worst, never bad."""
    hosts = names(6)

    class Turns(Fabric):
        def measure(self, run):
            result = super(Turns, self).measure(run)
            if 'node0003' in run['hosts'] and self.seen:
                result['bench'] = bench(SLOW, run['hosts'])
            self.seen = self.seen or 'node0003' in run['hosts']
            return result

    fabric = Turns()
    fabric.seen = False
    step, dummy = drive(hosts, rails_of(hosts, 1), fabric, repeats=3)
    assert step['pass_ratios']['node0003']['all'] < 0.5
    assert [item['kind'] for item in step['findings'] if item['host'] == 'node0003'] == ['flaky']
    assert 'node0003' in step['bad_hosts']


def test_a_suspect_that_passes_the_confirmation_is_not_blamed():
    """node0002 fails both ring pairs, then passes the confirmation: flaky, never a bad node."""
    hosts = names(4)

    class FailsTwice(Fabric):
        runs = 0

        def measure(self, run):
            result = super(FailsTwice, self).measure(run)
            if 'node0002' in run['hosts']:
                self.runs += 1
                result['bench'] = bench(SLOW if self.runs <= 2 else GOOD, run['hosts'])
            return result

    step, rounds = drive(hosts, rails_of(hosts, 1), FailsTwice())
    assert rounds[-1]['stage'] == 'confirm'
    assert kinds(step) == [('flaky', 'node0002', 0)]


def test_a_failed_pair_of_two_nodes_that_pass_elsewhere_is_retested_and_stays_unexplained_without_repeats():
    hosts = names(6)

    class OnePair(Fabric):
        def measure(self, run):
            result = super(OnePair, self).measure(run)
            if run['hosts'] == ['node0003', 'node0004']:
                result['bench'] = bench(SLOW, run['hosts'])
            return result

    step, rounds = drive(hosts, rails_of(hosts, 1), OnePair())
    confirm = rounds[-1]
    assert confirm['stage'] == 'confirm'
    assert sorted(host for run in confirm['runs'] for host in run['hosts'] if host in ('node0003', 'node0004')) == [
        'node0003', 'node0004']
    [finding] = step['findings']
    assert (finding['kind'], finding['host'], finding['rail']) == ('flaky', None, 0)
    assert 'validate_isolation_repeats' in finding['action']
    assert step['bad_hosts'] == []


def test_everything_slow_is_the_fabric_or_the_threshold_not_a_node():
    hosts = names(8)
    step, rounds = drive(hosts, rails_of(hosts, 2), Fabric(everything_slow=True), repeats=3)
    assert [planned['stage'] for planned in rounds] == ['ring', 'ring']
    [finding] = step['findings']
    assert (finding['kind'], finding['host'], finding['rail'], finding['interface']) == ('fabric', None, None, None)
    assert 'threshold' in finding['action']
    assert len(finding['evidence']) == 9 and finding['evidence'][-1] == 'and 8 more runs'
    assert step['bad_hosts'] == []


def test_one_dead_rail_is_that_rails_switches():
    hosts = names(6)
    step, dummy = drive(hosts, rails_of(hosts, 2), Fabric(bad_ports=[(host, 1) for host in hosts]))
    assert kinds(step) == [('fabric', None, 1)]


def test_every_pair_exiting_non_zero_blames_the_stack_not_a_node():
    hosts = names(3)
    step, rounds = drive(hosts, rails_of(hosts, 1), Fabric(exit=3), repeats=2)
    assert len(rounds) == 3
    assert [run['passed'] for run in step['runs']] == [False] * 3
    [finding] = step['findings']
    assert (finding['kind'], finding['host']) == ('fabric', None)
    assert finding['action'].startswith('every pair on every rail exited non-zero (exit 3): not one node')
    assert step['bad_hosts'] == []


@pytest.mark.parametrize('fabric', [Fabric(bad_nodes=['node0002']), Fabric(exit=3)])
def test_two_nodes_cannot_tell_a_node_from_its_link(fabric):
    hosts = names(2)
    step, rounds = drive(hosts, rails_of(hosts, 1), fabric, repeats=2)
    assert len(rounds) == 1
    [finding] = step['findings']
    assert (finding['kind'], finding['host'], finding['rail']) == ('link', None, 0)
    assert finding['action'].startswith('with 2 nodes a bad node cannot be told from a bad link')


def test_every_pair_passing_names_nothing_and_repeats_give_ratios():
    hosts = names(5)
    step, rounds = drive(hosts, rails_of(hosts, 1), Fabric(), repeats=2)
    assert [planned['stage'] for planned in rounds] == ['ring'] * 3 + ['repeat'] * 2
    assert step['findings'] == [] and step['bad_hosts'] == []
    assert step['summary'] == '9 runs in 5 rounds: every pair passed, no node or link to blame'
    assert set(ratio['all'] for ratio in step['pass_ratios'].values()) == {1.0}


def test_the_seed_makes_the_repeats_reproducible():
    hosts = names(10)
    rails = rails_of(hosts, 1)
    first = drive(hosts, rails, Fabric(), repeats=2, seed=1)[1]
    again = drive(hosts, rails, Fabric(), repeats=2, seed=1)[1]
    other = drive(hosts, rails, Fabric(), repeats=2, seed=2)[1]
    assert first == again
    assert first[2:] != other[2:]


def test_a_port_is_blamed_only_for_failing_beside_a_partner_that_passed_elsewhere():
    # Two bad nodes and a bad port on six nodes. node0005's port on rail 0 fails in the ring beside node0006 (bad on
    # rail 0) and node0004 (bad), and again in the repeat beside node0004: it never ran beside a partner that passed
    # anywhere, so nothing says the fault is its own, and it must not be blamed (a rule that took any failure after
    # the ring would name it, from 29 of 400 random fabrics that differ without the rule).
    hosts = names(6)
    fabric = Fabric(bad_nodes=['node0004', 'node0001'], bad_ports=[('node0006', 0)])
    step, dummy = drive(hosts, rails_of(hosts, 2), fabric, repeats=1)
    assert kinds(step) == [('link', 'node0004', 1), ('link', 'node0006', 0), ('node', 'node0001', None)]
    assert 'node0005' not in step['bad_hosts']


def test_more_suspects_than_partners_that_passed_are_left_unconfirmed_and_not_blamed():
    """Five of eight nodes bad: six ports fail with every partner, two passed; no one is confirmed, no one named."""
    hosts = names(8)
    step, rounds = drive(hosts, rails_of(hosts, 1), Fabric(bad_nodes=[hosts[i] for i in (0, 1, 2, 4, 5)]))
    assert [planned['stage'] for planned in rounds] == ['ring', 'ring']
    assert step['findings'] == [] and step['bad_hosts'] == []
    assert step['unconfirmed'] == [{'host': host, 'rail': 0} for host in hosts[:6]]
    assert 'not confirmed (no partner that passed was left): node0001 rail 0, ' in step['summary']


def test_a_dead_rail_of_four_is_the_fabric_not_three_bad_nodes():
    hosts = names(4)
    step, dummy = drive(hosts, rails_of(hosts, 1), Fabric(bad_nodes=['node0001', 'node0002', 'node0003']))
    assert kinds(step) == [('fabric', None, None)]


def test_fewer_than_two_nodes_run_nothing():
    step = isolation_step([], ['node0001'], rails_of(['node0001'], 1), THRESHOLD, LARGE)
    assert step['done'] and step['next'] is None and step['rounds'] == 0
    assert step['summary'] == 'no pair was run (fewer than 2 nodes)'


def rail(number, interface, net_device):
    return {'rail': number, 'interface': interface, 'net_device': net_device, 'local_rank': None, 'numa_node': None}


def test_host_rails_from_the_cluster_model():
    nodes = {'a': {'rails': [rail(0, 'fab0', 'fab0'), rail(1, 'fab1', 'fab1')]},
             'b': {'rails': [rail(0, 'eth2', 'mlx5_2:1')]},
             'c': {'rails': []}}
    assert isolation_rails(nodes, ['a', 'b', 'c']) == {
        'a': {'0': {'interface': 'fab0', 'net_device': 'fab0'}, '1': {'interface': 'fab1', 'net_device': 'fab1'}},
        'b': {'0': {'interface': 'eth2', 'net_device': 'mlx5_2:1'}},
        'c': {'0': {'interface': None, 'net_device': None}}}
    with pytest.raises(ValueError, match='^the cluster model has no node d$'):
        isolation_rails(nodes, ['d'])


def test_a_pair_whose_ends_name_other_devices_is_pinned_to_both():
    nodes = {'a': {'rails': [rail(0, 'eth0', 'mlx5_0:1')]}, 'b': {'rails': [rail(0, 'eth0', 'mlx5_4:1')]}}
    step = isolation_step([], ['a', 'b'], isolation_rails(nodes, ['a', 'b']), THRESHOLD, LARGE)
    assert step['next']['runs'] == [{'hosts': ['a', 'b'], 'rail': 0, 'net_devices': 'mlx5_0:1,mlx5_4:1'}]


@pytest.mark.parametrize('args, message', [
    (([], ['a', 'b'], {'a': {'0': {}}}, THRESHOLD, LARGE), '^no rail for b in the rails map$'),
    (({}, ['a'], {'a': {'0': {}}}, THRESHOLD, LARGE), '^isolation results must be a list'),
    (([], ['a'], {'a': {'0': {}}}, THRESHOLD, LARGE, -1), '^validate_isolation_repeats must be a whole number'),
    (([{'hosts': ['a']}], ['a'], {'a': {'0': {}}}, THRESHOLD, LARGE), '^an isolation run must be'),
])
def test_isolation_step_rejects(args, message):
    with pytest.raises(ValueError, match=message):
        isolation_step(*args)


# ring_rounds

@pytest.mark.parametrize('count, rounds', [(0, 0), (1, 0), (2, 1), (3, 3), (4, 2), (5, 3), (8, 2), (9, 3)])
def test_ring_rounds_cover_the_ring_with_disjoint_pairs(count, rounds):
    hosts = names(count)
    result = ring_rounds(hosts)
    assert len(result) == rounds
    pairs = [frozenset(pair) for round_pairs in result for pair in round_pairs]
    if count > 2:
        assert sorted(pairs, key=sorted) == sorted((frozenset((hosts[i], hosts[(i + 1) % count])) for i in range(count)),
                                                   key=sorted)
    for round_pairs in result:
        used = [host for pair in round_pairs for host in pair]
        assert len(used) == len(set(used))


def test_ring_rounds_exact_values():
    assert ring_rounds(['a', 'b', 'c', 'd']) == [[['a', 'b'], ['c', 'd']], [['b', 'c'], ['d', 'a']]]
    assert ring_rounds(['a', 'b', 'c']) == [[['a', 'b']], [['b', 'c']], [['c', 'a']]]
    assert ring_rounds(['a', 'b']) == [[['a', 'b']]]


@pytest.mark.parametrize('hosts, message', [
    ('a,b', 'hosts must be a list'),
    (['a', ''], 'host names must be non-empty strings'),
    (['a', 'b', 'a'], 'duplicate host names: a'),
])
def test_ring_rounds_rejects(hosts, message):
    with pytest.raises(ValueError, match=message):
        ring_rounds(hosts)


# judge_run

def test_a_run_that_exited_non_zero_fails_with_its_numbers_kept():
    run = judge_run({'hosts': ['a', 'b'], 'rail': 1, 'round': 2, 'stage': 'confirm', 'bench': bench(GOOD, ['a', 'b']),
                     'mpirun_rc': 3, 'error': 'isolation pair a + b on rail 1 exited 3 (mpirun on a)'}, THRESHOLD, LARGE)
    assert (run['passed'], run['busbw_gbs'], run['mpirun_rc'], run['rail'], run['round']) == (False, GOOD, 3, 1, 2)
    assert run['reason'].startswith('isolation pair a + b on rail 1 exited 3 (mpirun on a); results: all 2 large sizes')
    assert run_text(run) == 'a + b rail 1 (confirm): 20 GB/s, exit 3 FAIL'


def test_a_run_without_results_or_with_a_wrong_result_fails():
    run = judge_run({'hosts': ['a', 'b'], 'bench': None, 'mpirun_rc': 1, 'error': 'ssh: b: no route'}, THRESHOLD, LARGE)
    assert (run['passed'], run['busbw_gbs'], run['reason']) == (False, None, 'run failed: ssh: b: no route')
    assert run_text(run) == 'a + b rail 0 (ring): run failed, exit 1 FAIL'
    wrong = dict(bench(GOOD, ['a', 'b']), correct=False)
    assert judge_run({'hosts': ['a', 'b'], 'bench': wrong, 'mpirun_rc': 0}, THRESHOLD, LARGE)['passed'] is False


def test_a_pair_whose_results_do_not_reach_the_checked_sizes_is_refused():
    with pytest.raises(ValueError, match='^pair a \\+ b: the sweep stops'):
        judge_run({'hosts': ['a', 'b'], 'bench': bench(GOOD, ['a', 'b'])}, THRESHOLD, 1024 * LARGE)


def test_three_nodes_confirm_against_a_partner_the_suspect_already_ran_with():
    """The lab's case: with 3 nodes every other node has run with the suspect; one that passed is still the partner."""
    hosts = names(3)
    step, rounds = drive(hosts, rails_of(hosts, 1), Fabric(bad_nodes=['node0002']))
    assert [planned['stage'] for planned in rounds] == ['ring'] * 3 + ['confirm']
    assert rounds[3]['runs'] == [{'hosts': ['node0001', 'node0002'], 'rail': 0, 'net_devices': 'mlx5_0:1'}]
    assert kinds(step) == [('node', 'node0002', None)]
