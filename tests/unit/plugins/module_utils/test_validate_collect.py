# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""validate_collect: setup facts, hostfiles, registered command and slurp results into the validate role's shapes."""
from __future__ import annotations

import base64
import json

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate_collect import (
    host_problems,
    hostfile_entries,
    interface_states,
    pair_results,
    report_runs,
)

BENCH = {'world_size': 16, 'device': 'cuda', 'hosts': ['node01', 'node02'],
         'mpi': {'library_version': 'Open MPI v4.1.7', 'cuda_aware': True},
         'results': [{'size_bytes': 1048576, 'time_us': 80.0, 'algbw_gbs': 13.1, 'busbw_gbs': 24.6}], 'correct': True}


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


# interface_states

# the setup module's network facts: an interface's facts keyed by its name with '-' as '_'
SETUP_FACTS = {
    'interfaces': ['lo', 'fab0', 'fab-1', 'fab2'],
    'fab0': {'active': True, 'device': 'fab0', 'mtu': 9000, 'type': 'ether', 'macaddress': '02:42:ac:14:00:02'},
    'fab_1': {'active': False, 'device': 'fab-1', 'mtu': 1500, 'type': 'ether'},
    'fab2': {'device': 'fab2', 'mtu': 4200},
    'kernel': '6.8.0-45-generic',
}


def test_interface_states_from_setup_facts():
    assert interface_states(SETUP_FACTS, ['fab0', 'fab-1', 'fab2', 'fab9']) == {
        'fab0': {'mtu': 9000, 'operstate': 'up'},
        'fab-1': {'mtu': 1500, 'operstate': 'down'},
        'fab2': {'mtu': 4200, 'operstate': None},
        'fab9': {'mtu': None, 'operstate': None},
    }
    assert interface_states(SETUP_FACTS, []) == {}


@pytest.mark.parametrize('facts, names, message', [
    (None, ['fab0'], "facts must be the host's ansible_facts"),
    (SETUP_FACTS, 'fab0', 'interface names must be a list'),
])
def test_interface_states_reject(facts, names, message):
    with pytest.raises(ValueError, match=message):
        interface_states(facts, names)


# hostfile_entries

def test_hostfile_entries_as_the_mpi_hostfile_role_writes_them():
    assert hostfile_entries('node01-fab0 slots=8\nnode02-fab0 slots=4\n') == [
        {'name': 'node01-fab0', 'slots': 8}, {'name': 'node02-fab0', 'slots': 4}]


def test_hostfile_entries_of_a_hand_written_hostfile():
    text = ('# the cluster\n'
            '\n'
            '   node01 max_slots=16 slots=8   # rack 1\n'
            '\tnode02\n'
            'node03 slots=2\n')
    assert hostfile_entries(text) == [{'name': 'node01', 'slots': 8}, {'name': 'node02', 'slots': 1},
                                      {'name': 'node03', 'slots': 2}]


@pytest.mark.parametrize('text, message', [
    ('node01 slots=8\nnode02 slots=eight\n', '^hostfile line 2: slots=eight is not a slot count$'),
    ('node01 slots=0\n', '^hostfile line 1: slots=0, a node needs at least one slot$'),
    (None, '^hostfile must be text'),
])
def test_hostfile_entries_reject(text, message):
    with pytest.raises(ValueError, match=message):
        hostfile_entries(text)


# pair_results

def test_pair_results_of_a_round():
    stderr = '\n'.join(['line %d' % i for i in range(1, 8)])
    pairs = [['node01', 'node02'], ['node03', 'node04']]
    assert pair_results(pairs, [mpirun(0), mpirun(1, stderr)], [slurped(BENCH), NOT_FETCHED]) == [
        {'hosts': ['node01', 'node02'], 'bench': BENCH, 'error': None},
        {'hosts': ['node03', 'node04'], 'bench': None,
         'error': 'mpirun exit 1: line 3 / line 4 / line 5 / line 6 / line 7'},
    ]


def test_pair_results_keep_the_bench_of_a_wrong_result():
    """The bench exits 1 on a wrong result and still writes its JSON: the verdict judges it, not the exit status."""
    wrong = dict(BENCH, correct=False)
    assert pair_results([('a', 'b')], [mpirun(1, 'wrong result')], [slurped(wrong)]) == [
        {'hosts': ['a', 'b'], 'bench': wrong, 'error': None}]


def test_pair_results_without_an_exit_status():
    """An unreachable leader registers no rc."""
    unreachable = {'unreachable': True, 'msg': 'Failed to connect to the host via ssh', 'changed': False}
    assert pair_results([['a', 'b']], [unreachable], [unreachable]) == [
        {'hosts': ['a', 'b'], 'bench': None, 'error': 'mpirun exit ?: '}]


def test_pair_results_of_a_truncated_file():
    cut = dict(slurped(BENCH))
    cut['content'] = base64.b64encode(json.dumps(BENCH).encode()[:40]).decode()
    result = pair_results([['a', 'b']], [mpirun(137, 'Killed')], [cut])[0]
    assert result['bench'] is None
    assert result['error'].startswith('results are not JSON (')
    assert result['error'].endswith('); mpirun exit 137: Killed')


@pytest.mark.parametrize('args, message', [
    (([['a', 'b']], [mpirun(0)], []), '^one run and one fetched result per pair: 1 pairs, 1 runs, 0 fetched$'),
    ((None, [], []), '^pairs must be a list'),
    (([], {}, []), '^runs must be a list'),
])
def test_pair_results_reject(args, message):
    with pytest.raises(ValueError, match=message):
        pair_results(*args)


# report_runs

def test_report_runs_all_nodes_then_the_pairs_with_results():
    pair = dict(BENCH, world_size=2)
    pairs = [{'hosts': ['node01', 'node02'], 'bench': pair, 'error': None},
             {'hosts': ['node02', 'node03'], 'bench': None, 'error': 'mpirun exit 1: '}]
    assert report_runs(BENCH, pairs) == [
        {'name': 'all nodes (16 ranks)', 'hosts': ['node01', 'node02'], 'bench': BENCH},
        {'name': 'pair node01 + node02', 'hosts': ['node01', 'node02'], 'bench': pair},
    ]


def test_report_runs_without_isolation():
    assert report_runs(BENCH) == report_runs(BENCH, []) == [
        {'name': 'all nodes (16 ranks)', 'hosts': ['node01', 'node02'], 'bench': BENCH}]


@pytest.mark.parametrize('bench, pairs, message', [
    ({}, None, '^bench must be the JSON of files/bench/allreduce.py'),
    (BENCH, ['node01'], '^isolation pairs must be {hosts, bench, error}'),
])
def test_report_runs_reject(bench, pairs, message):
    with pytest.raises(ValueError, match=message):
        report_runs(bench, pairs)


# host_problems

def test_host_problems_host_by_host():
    problems = {'node01': [], 'node02': ['GPU count: expected 8, seen 7', 'fab0: MTU 1500, expected 9000'],
                'node03': ['ib facts missing (ib_facts did not run)']}
    assert host_problems(problems) == ['node02: GPU count: expected 8, seen 7', 'node02: fab0: MTU 1500, expected 9000',
                                       'node03: ib facts missing (ib_facts did not run)']
    assert host_problems({'node01': []}) == []


@pytest.mark.parametrize('problems, message', [
    ([], '^problems must map each host'),
    ({'node01': 'no GPU'}, '^the problems of node01 must be a list'),
])
def test_host_problems_reject(problems, message):
    with pytest.raises(ValueError, match=message):
        host_problems(problems)
