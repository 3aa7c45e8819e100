# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""validate.jobs: hostfiles and each node's entry in them, why a job failed (on mpirun's real stderr) and an isolation round's results, from what
Ansible registered."""

from __future__ import annotations

import base64
import importlib.util
import json
from pathlib import Path

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.mpi_hostfile import mpi_hostfile
from ansible_collections.hpcfabric.cluster.plugins.module_utils.cluster_model import build_model
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.jobs import (
    hostfile_entries, hostfile_hosts, job_hosts, mpirun_error, mpirun_hosts, pair_results, salloc_argv, salloc_job,
    srun_argv, srun_hosts,
)
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.report import report_runs
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.thresholds import allreduce_threshold
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.verdicts import allreduce_verdict

_SPEC = importlib.util.spec_from_file_location('validate_fakes', Path(__file__).with_name('validate_fakes.py'))
fakes = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(fakes)

BENCH, NOT_FETCHED = fakes.BENCH, fakes.NOT_FETCHED
mpirun, slurped = fakes.mpirun, fakes.slurped


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


# hostfile_hosts, on the hostfile the mpi_hostfile role renders from the cluster model

def lab_model(slots=(8, 4, 2)):
    """The cluster model of three nodes with two rails, each node's slots set, as the mpi_hostfile role reads it."""
    hostvars = dict(('node%02d' % i, {
        'fabric_network_rails': [{'name': 'rail0', 'subnet': '10.78.0.0/24'}],
        'fabric_network_interfaces': [{'name': 'fab0', 'address': '10.78.0.%d/24' % (10 + i), 'rail': 0}],
        'mpi_hostfile_slots': count}) for i, count in enumerate(slots, 1))
    model = build_model(hostvars, sorted(hostvars))
    assert model['problems'] == []
    return model['hostfile']


@pytest.mark.parametrize('name_key', ['name', 'host'])
def test_hostfile_hosts_pair_a_reordered_hostfile_by_name(name_key):
    model = lab_model()
    lines = mpi_hostfile(list(reversed(model)), name_key=name_key)
    assert lines.splitlines()[0].startswith('node03')
    paired = hostfile_hosts(hostfile_entries(lines), model, ['node01', 'node02', 'node03'])
    assert paired['problems'] == []
    assert paired['entries'] == dict((node['host'], {'name': node[name_key], 'slots': node['slots']})
                                     for node in model)
    assert paired['entries']['node01'] == {'name': 'node01-rail0' if name_key == 'name' else 'node01', 'slots': 8}
    # the smoke training's host list is the nodes' own entries in the group's order, whatever the file's
    ordered = [paired['entries'][host] for host in ['node01', 'node02', 'node03']]
    assert mpirun_hosts(ordered, rotate=1)[1].startswith('node02')


def test_hostfile_hosts_of_a_limited_run_pair_its_nodes_in_a_partial_hostfile():
    model = lab_model()
    # --limit node03,node01: the hostfile lists those two, node03 first
    lines = mpi_hostfile([model[2], model[0]])
    paired = hostfile_hosts(hostfile_entries(lines), model, ['node01', 'node03'])
    assert paired == {'entries': {'node01': {'name': 'node01-rail0', 'slots': 8},
                                  'node03': {'name': 'node03-rail0', 'slots': 2}}, 'problems': []}
    # the whole group's hostfile serves a limited run too
    paired = hostfile_hosts(hostfile_entries(mpi_hostfile(model)), model, ['node02'])
    assert paired == {'entries': {'node02': {'name': 'node02-rail0', 'slots': 4}}, 'problems': []}


def test_hostfile_hosts_slots_are_the_lines():
    # mpirun reads the file: a hand-edited slot count is what the jobs get (preflight compares it with the GPUs)
    paired = hostfile_hosts([{'name': 'node02', 'slots': 1}], lab_model(), ['node02'])
    assert paired['entries'] == {'node02': {'name': 'node02', 'slots': 1}}


def test_hostfile_hosts_name_each_node_without_exactly_one_line_and_each_stranger():
    model = lab_model()
    entries = hostfile_entries('node01-rail0 slots=8\nnode01 slots=8\nold-node07 slots=8\n')
    paired = hostfile_hosts(entries, model, ['node01', 'node02'])
    assert paired == {'entries': {}, 'problems': [
        'old-node07: names no node of the cluster model',
        'node01: 2 lines name it (node01-rail0, node01)',
        'node02: no line names it (node02-rail0 or node02)']}


@pytest.mark.parametrize('entries, model, hosts, message', [
    ('a slots=1', [], [], '^hostfile entries must be a list'),
    ([], {'host': 'a'}, [], "^the cluster model's hostfile must be a list"),
    ([], [{'host': 'a'}], [], "^each entry of the cluster model's hostfile must be {host, name, slots}"),
    ([{'name': 'a'}], [{'host': 'a', 'name': 'a-fab', 'slots': 1}], ['a'], '^each hostfile entry must be {name, slots}'),
    ([], [{'host': 'a', 'name': 'a-fab', 'slots': 1}], 'a', '^hosts must be a list'),
    ([], [{'host': 'a', 'name': 'a-fab', 'slots': 1}], ['b'], '^the cluster model has no node b$'),
])
def test_hostfile_hosts_reject(entries, model, hosts, message):
    with pytest.raises(ValueError, match=message):
        hostfile_hosts(entries, model, hosts)


def test_hostfile_hosts_for_mpirun_are_the_hostfile_lines():
    model = lab_model()
    lines = hostfile_entries(mpi_hostfile(model, name_key='host'))
    paired = hostfile_hosts(lines, model, ['node01', 'node03'], 'mpirun')
    assert paired == hostfile_hosts(lines, model, ['node01', 'node03'])
    assert paired == {'entries': {'node01': {'name': 'node01', 'slots': 8}, 'node03': {'name': 'node03', 'slots': 2}},
                      'problems': []}


@pytest.mark.parametrize('entries', [[], hostfile_entries('old-node07 slots=8\n')])
def test_hostfile_hosts_for_slurm_are_the_cluster_models_whatever_the_hostfile(entries):
    # srun reads no hostfile: every node of the model is its own {host, name, slots}, as the role's Jinja made them
    model = lab_model()
    paired = hostfile_hosts(entries, model, ['node02'], 'slurm')
    assert paired == {'entries': dict((node['host'], node) for node in model), 'problems': []}
    assert paired['entries']['node02'] == {'host': 'node02', 'name': 'node02-rail0', 'slots': 4}
    # the jobs take each node's slots from them, by inventory name
    assert job_hosts(paired['entries'], ['node01', 'node02'], 'slurm')[0] == '--ntasks=12'


@pytest.mark.parametrize('launcher, hosts, message', [
    ('srun', ['node01'], "^validate_launcher must be mpirun or slurm, got 'srun'$"),
    (None, ['node01'], '^validate_launcher must be mpirun or slurm, got None$'),
    ('slurm', ['node01', 'node07'], '^the cluster model has no node node07$'),
])
def test_hostfile_hosts_reject_a_launcher_or_host_it_does_not_know(launcher, hosts, message):
    with pytest.raises(ValueError, match=message):
        hostfile_hosts([], lab_model(), hosts, launcher)


# mpirun_error, on mpirun's real stderr (tests/unit/fixtures/mpirun/SOURCES.md)

# the end of a Python traceback a rank printed before Open MPI's own lines
TRACEBACK = ('Traceback (most recent call last):\n  File "/opt/hpcfabric/bench/allreduce.py", line 388, in <module>\n'
             'MemoryError\n')


def test_mpirun_error_of_a_job_that_exited_0():
    assert mpirun_error(mpirun(0, 'a warning on stderr'), 'allreduce on all nodes', 'node01') is None


def test_mpirun_error_of_a_job_that_wrote_its_results_then_exited_3(fixture_text):
    stderr = fixture_text('mpirun', 'openmpi-4.1.4-exit-3.stderr.txt')
    assert mpirun_error(mpirun(3, stderr), 'allreduce on all nodes', 'node01') == (
        'allreduce on all nodes exited 3 (mpirun on node01): Primary job terminated normally, but 1 process returned / '
        'a non-zero exit code. Per user-direction, the job has been aborted. / mpirun detected that one or more '
        'processes exited with non-zero status, thus causing / the job to be terminated. The first process to do so '
        'was: / Process name: [[22963,1],0] / Exit code: 3')


def test_mpirun_error_keeps_the_last_lines_the_rank_printed(fixture_text):
    """Open MPI's banner (6 lines once its rules and blank lines are left out) leaves room for the rank's last words."""
    stderr = TRACEBACK + fixture_text('mpirun', 'openmpi-4.1.4-rank-1-exit-1.stderr.txt')
    error = mpirun_error(mpirun(1, stderr), 'isolation pair node01 + node02', 'node01')
    assert error.startswith('isolation pair node01 + node02 exited 1 (mpirun on node01): File "/opt/hpcfabric/bench/'
                            'allreduce.py", line 388, in <module> / MemoryError / Primary job terminated normally')
    assert error.endswith('/ Process name: [[22227,1],1] / Exit code: 1')
    assert error.count(' / ') == 7


def test_mpirun_error_names_the_signal_that_killed_a_rank(fixture_text):
    stderr = fixture_text('mpirun', 'openmpi-4.1.4-signal-11.stderr.txt')
    assert mpirun_error(mpirun(139, stderr), 'smoke training (first job)', 'node01') == (
        'smoke training (first job) exited 139 (128 + signal 11, SIGSEGV) (mpirun on node01): Primary job terminated '
        'normally, but 1 process returned / a non-zero exit code. Per user-direction, the job has been aborted. / '
        'mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 11 (Segmentation fault).')


def test_mpirun_error_of_mpirun_itself_killed_or_not_started():
    assert mpirun_error(mpirun(-9), 'allreduce on all nodes', 'node01') == (
        'allreduce on all nodes was killed by signal 9, SIGKILL (mpirun on node01)')
    missing = dict(mpirun(2), msg='[Errno 2] No such file or directory: b\'/opt/ompi/bin/mpirun\'', failed=True)
    assert mpirun_error(missing, 'allreduce on all nodes', 'node01') == (
        "allreduce on all nodes exited 2 (mpirun on node01): [Errno 2] No such file or directory: b'/opt/ompi/bin/mpirun'")
    # 128 + a number that is no signal is an exit status like any other
    assert mpirun_error(mpirun(200), 'job', 'node01') == 'job exited 200 (mpirun on node01)'


def test_mpirun_error_without_an_exit_status():
    """An unreachable launcher registers no rc: not a pass."""
    unreachable = {'unreachable': True, 'msg': 'Failed to connect to the host via ssh', 'changed': False}
    assert mpirun_error(unreachable, 'allreduce on all nodes', 'node01') == (
        'allreduce on all nodes gave no exit status (mpirun on node01): Failed to connect to the host via ssh')
    assert mpirun_error(None, 'job', 'node01') == 'job gave no exit status (mpirun on node01)'
    # Ansible's results carry no booleans as rc, but a template could
    assert mpirun_error({'rc': False}, 'job', 'node01') == 'job gave no exit status (mpirun on node01)'


@pytest.mark.parametrize('job, launcher, message', [
    ('', 'node01', '^job must be a non-empty string'),
    ('allreduce', None, '^launcher must be a non-empty string'),
])
def test_mpirun_error_reject(job, launcher, message):
    with pytest.raises(ValueError, match=message):
        mpirun_error(mpirun(1), job, launcher)


# pair_results

def entry(run, end='client'):
    """A launch entry of isolation_launch, the loop item of a run's start."""
    return {'run': run, 'end': end, 'argv': ['mpirun'], 'tcp_port': None}


def ended(run, result, end='client'):
    """What async_status registers for a run's end: the start's registration (its own item the entry) as item."""
    return dict(result, item={'ansible_job_id': 'j%d.%s' % (run, end), 'started': True, 'item': entry(run, end)})


def fetched(run, result):
    return dict(result, item=entry(run))


def launch(*runs):
    return {'runs': [dict(run, tool=run.get('tool', 'mpi'), json='/var/tmp/pair.json') for run in runs],
            'servers': {}, 'clients': {}}


def test_pair_results_of_a_round_found_by_their_items(fixture_text):
    stderr = fixture_text('mpirun', 'openmpi-4.1.4-exit-3.stderr.txt')
    plan = launch({'hosts': ['node01', 'node02'], 'rail': 0, 'round': 1, 'stage': 'ring', 'net_devices': 'mlx5_0:1'},
                  {'hosts': ['node03', 'node04'], 'rail': 1, 'round': 1, 'stage': 'ring', 'net_devices': 'mlx5_1:1'})
    # every node's results at once, in any order: each is found by the run of its item
    results = pair_results(plan, [ended(1, mpirun(3, stderr)), ended(0, mpirun(0))],
                           [fetched(1, NOT_FETCHED), fetched(0, slurped(BENCH))])
    assert results[0] == dict(plan['runs'][0], bench=BENCH, error=None, mpirun_rc=0)
    assert results[1]['bench'] is None
    assert (results[1]['mpirun_rc'], results[1]['rail'], results[1]['stage']) == (3, 1, 'ring')
    assert results[1]['error'].startswith('isolation pair node03 + node04 on rail 1 exited 3 (mpirun on node03): ')
    assert results[1]['error'].endswith(' / Exit code: 3')


def test_pair_results_keep_the_bench_of_a_pair_that_exited_non_zero():
    """A wrong result exits 1 and a job may die after writing its JSON: the pair fails, its numbers are kept."""
    wrong = dict(BENCH, correct=False)
    plan = launch({'hosts': ('a', 'b')})
    assert pair_results(plan, [ended(0, mpirun(1, 'wrong result'))], [fetched(0, slurped(wrong))]) == [
        dict(plan['runs'][0], hosts=['a', 'b'], bench=wrong, mpirun_rc=1,
             error='isolation pair a + b exited 1 (mpirun on a): wrong result')]
    assert pair_results(plan, [ended(0, mpirun(3))], [fetched(0, slurped(BENCH))])[0]['error'] == (
        'isolation pair a + b exited 3 (mpirun on a)')


def test_pair_results_without_an_exit_status():
    """An unreachable leader registers no rc, and a run whose result is missing altogether has none either."""
    unreachable = {'unreachable': True, 'msg': 'Failed to connect to the host via ssh', 'changed': False}
    plan = launch({'hosts': ['a', 'b']})
    assert pair_results(plan, [ended(0, unreachable)], [fetched(0, unreachable)])[0]['error'] == (
        'isolation pair a + b gave no exit status (mpirun on a): Failed to connect to the host via ssh')
    missing = pair_results(plan, [], [])[0]
    assert (missing['bench'], missing['mpirun_rc'], missing['error']) == (
        None, None, 'isolation pair a + b gave no exit status (mpirun on a)')


def test_pair_results_of_a_pair_that_exited_0_without_results():
    assert pair_results(launch({'hosts': ['a', 'b']}), [ended(0, mpirun(0))], [fetched(0, NOT_FETCHED)])[0]['error'] == (
        'isolation pair a + b wrote no results, though mpirun on a exited 0')


def test_pair_results_of_ib_write_bw_runs(fixture_text):
    report = fixture_text('perftest', 'ib_write_bw-a40-cuda-duration.txt')
    plan = launch({'hosts': ['a', 'b'], 'rail': 0, 'tool': 'ib_write_bw', 'cuda': True},
                  {'hosts': ['c', 'd'], 'rail': 0, 'tool': 'ib_write_bw', 'cuda': False},
                  {'hosts': ['e', 'f'], 'rail': 0, 'tool': 'ib_write_bw', 'cuda': False})
    ends = [ended(0, dict(mpirun(0), stdout=report)), ended(0, mpirun(0), 'server'),
            ended(1, mpirun(1, "Couldn't connect to 10.0.0.4:18515")),
            ended(1, mpirun(1, 'Unable to find the Infiniband/RoCE device'), 'server'),
            ended(2, dict(mpirun(0), stdout='done\n')), ended(2, mpirun(0), 'server')]
    good, dead, garbled = pair_results(plan, ends, [])
    assert (good['error'], good['mpirun_rc'], good['bench']['device']) == (None, 0, 'cuda')
    assert good['bench']['results'][0]['busbw_gbs'] == pytest.approx(181.46 / 8)
    # the server's own failure is named beside the client's
    assert dead['bench'] is None and dead['error'] == (
        "isolation pair c + d on rail 0 exited 1 (ib_write_bw on c): Couldn't connect to 10.0.0.4:18515; "
        'isolation pair c + d on rail 0 (server) exited 1 (ib_write_bw on d): Unable to find the Infiniband/RoCE '
        'device')
    assert garbled['bench'] is None and garbled['error'].startswith(
        'isolation pair e + f on rail 0: ib_write_bw on e exited 0, but no "#bytes')


def test_pair_results_of_a_truncated_file():
    cut = dict(slurped(BENCH))
    cut['content'] = base64.b64encode(json.dumps(BENCH).encode()[:40]).decode()
    plan = launch({'hosts': ['a', 'b']})
    result = pair_results(plan, [ended(0, mpirun(137, 'Killed'))], [fetched(0, cut)])[0]
    assert result['bench'] is None
    assert result['error'].startswith('isolation pair a + b exited 137 (128 + signal 9, SIGKILL) (mpirun on a): Killed; '
                                      'results are not JSON (')
    assert pair_results(plan, [ended(0, mpirun(0))], [fetched(0, cut)])[0]['error'].startswith(
        'isolation pair a + b: results are not JSON (')


@pytest.mark.parametrize('args, message', [
    (([], [], []), "^launch must be round_launches' result, got \\[\\]$"),
    ((launch({'hosts': ['a', 'b']}), {}, []), '^ends must be a list of registered results, got dict$'),
    ((launch({'hosts': ['a', 'b']}), [], None), '^fetched must be a list of registered results, got NoneType$'),
    (({'runs': [['a', 'b']]}, [], []), "^each run must be {hosts: \\[leader, partner\\], rail, tool, ...}, got \\['a', 'b'\\]$"),
])
def test_pair_results_reject(args, message):
    with pytest.raises(ValueError, match=message):
        pair_results(*args)


# the whole path of the all-node run: registered mpirun and slurp, mpirun_error, the verdict, the report's run

def test_a_run_that_wrote_passing_results_then_exited_3_fails_with_its_results_kept(fixture_text):
    run = mpirun(3, fixture_text('mpirun', 'openmpi-4.1.4-exit-3.stderr.txt'))
    bench = json.loads(base64.b64decode(slurped(BENCH)['content']))
    error = mpirun_error(run, 'allreduce on all nodes', 'node01')
    verdict = allreduce_verdict(bench, allreduce_threshold('explicit', min_busbw_gbs=1.5), 1048576, error)
    assert verdict['passed'] is False
    assert verdict['correct'] is True
    assert verdict['failures'] == []
    assert verdict['reason'].startswith('allreduce on all nodes exited 3 (mpirun on node01): ')
    assert verdict['reason'].endswith('Exit code: 3; results: all 1 large sizes ≥ threshold (explicit; closest: busbw '
                                      '24.6 GB/s at 1 MiB ≥ 1.5 GB/s)')
    assert report_runs(bench, None, run['rc'])[0] == {'name': 'all nodes (16 ranks)', 'hosts': ['node01', 'node02'],
                                                      'bench': BENCH, 'mpirun_rc': 3}


# srun_hosts and job_hosts: a job's host arguments, for mpirun or for srun

def _nodelist(argv):
    return [arg[len('--nodelist='):].split(',') for arg in argv if arg.startswith('--nodelist=')]


def test_srun_hosts_list_every_tasks_node_in_the_jobs_order_so_that_task_0_is_on_the_first():
    # any other distribution places tasks in Slurm's node order: an isolation pair led by node03 would have its rank 0,
    # which writes the results the leader reads, on node01
    entries = [{'host': 'node03', 'slots': 2}, {'host': 'node01', 'slots': 2}]
    # and no --nodes: Slurm 24.11 refuses it beside --distribution=arbitrary ("--nodes is incompatible with
    # --distribution=arbitrary", seen in the trixie lab); the list gives the nodes
    assert srun_hosts(entries) == ['--ntasks=4', '--distribution=arbitrary',
                                   '--nodelist=node03,node03,node01,node01']
    # rotating by the whole list is no rotation: task 0 stays on the first node
    assert srun_hosts(entries, rotate=2) == srun_hosts(entries)


def test_srun_hosts_rotated_list_every_tasks_node_so_that_task_0_is_on_the_next_node():
    entries = [{'host': 'node01', 'slots': 2}, {'host': 'node02', 'slots': 2}, {'host': 'node03', 'slots': 2}]
    argv = srun_hosts(entries, rotate=1)
    assert argv[:2] == ['--ntasks=6', '--distribution=arbitrary']
    assert not any(arg.startswith('--ntasks-per-node') for arg in argv)
    # one name per task, node by node in the rotated order: srun gives task N the Nth name
    assert _nodelist(argv) == [['node02', 'node02', 'node03', 'node03', 'node01', 'node01']]
    assert _nodelist(srun_hosts(entries, rotate=5)) == [['node03', 'node03', 'node01', 'node01', 'node02', 'node02']]


def test_srun_hosts_with_slots_that_differ_list_every_tasks_node():
    argv = srun_hosts([{'host': 'node01', 'slots': 3}, {'host': 'node02', 'slots': 1}])
    assert argv == ['--ntasks=4', '--distribution=arbitrary', '--nodelist=node01,node01,node01,node02']


@pytest.mark.parametrize('entries, rotate, message', [
    ([], 0, '^entries must be a non-empty list of {host, slots}'),
    ({'host': 'node01', 'slots': 1}, 0, '^entries must be a non-empty list of {host, slots}'),
    ([{'host': 'node01', 'slots': 1}], -1, '^rotate must be a whole number of at least 0'),
    ([{'host': 'node01', 'slots': 1}], True, '^rotate must be a whole number of at least 0'),
    ([{'host': 'node01', 'slots': 0}], 0, '^each entry must be {host, slots} with at least one slot'),
    ([{'host': 'node01', 'slots': True}], 0, '^each entry must be {host, slots} with at least one slot'),
    ([{'host': 'node01', 'slots': '8'}], 0, '^each entry must be {host, slots} with at least one slot'),
    ([{'name': 'node01-rail0', 'slots': 8}], 0, '^each entry must be {host, slots} with at least one slot'),
    ([{'host': 'node01', 'slots': 8}, 'node02'], 1, '^each entry must be {host, slots} with at least one slot'),
])
def test_srun_hosts_reject(entries, rotate, message):
    with pytest.raises(ValueError, match=message):
        srun_hosts(entries, rotate)


ENTRIES = {'node01': {'name': 'node01-rail0', 'slots': 8}, 'node02': {'name': 'node02-rail0', 'slots': 8},
           'node03': {'name': 'node03-rail0', 'slots': 4}}


def test_job_hosts_for_mpirun_are_the_hostfile_names_in_the_jobs_order():
    assert job_hosts(ENTRIES, ['node02', 'node01'], 'mpirun') == [
        '--host', 'node02-rail0:8,node01-rail0:8', '-np', '16']
    assert job_hosts(ENTRIES, ['node01', 'node02', 'node03'], 'mpirun', rotate=1) == [
        '--host', 'node02-rail0:8,node03-rail0:4,node01-rail0:8', '-np', '20']


def test_job_hosts_for_slurm_are_the_inventory_names():
    argv = job_hosts(ENTRIES, ['node01', 'node02'], 'slurm')
    assert argv == ['--ntasks=16', '--distribution=arbitrary',
                    '--nodelist=%s' % ','.join(['node01'] * 8 + ['node02'] * 8)]
    assert not any('rail0' in arg for arg in argv)
    rotated = job_hosts(ENTRIES, ['node01', 'node02'], 'slurm', rotate=1)
    assert '--distribution=arbitrary' in rotated
    assert _nodelist(rotated) == [['node02'] * 8 + ['node01'] * 8]


@pytest.mark.parametrize('entries, hosts, launcher, message', [
    (ENTRIES, ['node01'], 'pbs', '^validate_launcher must be mpirun or slurm, got \'pbs\''),
    (ENTRIES, ['node01'], None, '^validate_launcher must be mpirun or slurm'),
    (ENTRIES, ['node01', 'node04'], 'mpirun', '^no hostfile entry for node04$'),
    (ENTRIES, ['node05', 'node04'], 'slurm', '^no hostfile entry for node05, node04$'),
    ([{'name': 'node01-rail0', 'slots': 8}], ['node01'], 'mpirun', '^entries must map each host to its {name, slots}'),
    (ENTRIES, [], 'slurm', '^entries must be a non-empty list'),
])
def test_job_hosts_reject(entries, hosts, launcher, message):
    with pytest.raises(ValueError, match=message):
        job_hosts(entries, hosts, launcher)


# the validation's Slurm allocation (salloc) and its steps (srun)

def test_salloc_argv_holds_every_tested_node_whole_in_the_reservation():
    argv = salloc_argv('hpcfabric-validate-gpu_nodes', ['node01', 'node02'], 30, 8)
    assert argv[0] == 'salloc'
    for arg in ('--no-shell', '--reservation=hpcfabric-validate-gpu_nodes', '--nodes=2', '--nodelist=node01,node02',
                '--exclusive', '--mem=0', '--time=30', '--gpus-per-node=8'):
        assert argv.count(arg) == 1, arg
    immediate = [arg for arg in argv if arg.startswith('--immediate')]
    assert len(immediate) == 1 and int(immediate[0].split('=')[1]) > 0
    assert not any(arg.startswith(('--gpus-per-task', '--gres')) for arg in argv)


def test_salloc_argv_asks_no_gpus_of_nodes_without_them():
    argv = salloc_argv('hold', ['node01'], 10, 0)
    assert '--nodes=1' in argv and '--nodelist=node01' in argv
    assert not any('gpu' in arg for arg in argv)


def test_salloc_argv_never_asks_for_an_unlimited_time():
    # Slurm reads --time=0 as no limit: a validation's allocation always ends
    times = [arg for arg in salloc_argv('hold', ['node01'], 0, 0) if arg.startswith('--time=')]
    assert len(times) == 1 and int(times[0][len('--time='):]) >= 1


@pytest.mark.parametrize('hosts', [[], None])
def test_salloc_argv_without_nodes_is_refused(hosts):
    with pytest.raises(ValueError, match='^the allocation needs at least one node$'):
        salloc_argv('hold', hosts, 30, 8)


@pytest.mark.parametrize('stderr', [
    'salloc: Granted job allocation 4242',
    'salloc: Granted job allocation 4242\n',
    'salloc: Pending job allocation 4242\nsalloc: job 4242 queued and waiting for resources\n'
    'salloc: job 4242 has been allocated resources\nsalloc: Granted job allocation 4242',
    'salloc: Required node not available (down, drained or reserved)\nsalloc: Pending job allocation 4242\n'
    'salloc: Granted job allocation 4242\nsalloc: Waiting for resource configuration\n',
])
def test_salloc_job_is_the_granted_allocation(stderr):
    assert salloc_job(stderr) == '4242'


@pytest.mark.parametrize('stderr, said', [
    ('salloc: error: Unable to allocate resources: Requested node configuration is not available\n',
     'salloc: error: Unable to allocate resources: Requested node configuration is not available'),
    ('salloc: Pending job allocation 4243\nsalloc: error: Unable to allocate resources: Immediate execution '
     'impossible, insufficient priority\n', 'Immediate execution impossible, insufficient priority'),
    ('', ''),
    (None, ''),
])
def test_salloc_job_without_a_grant_names_what_salloc_said(stderr, said):
    with pytest.raises(ValueError, match='^salloc granted no allocation') as raised:
        salloc_job(stderr)
    assert said in str(raised.value)


def test_salloc_job_of_a_pending_allocation_is_no_grant():
    with pytest.raises(ValueError, match='^salloc granted no allocation: salloc: Pending job allocation 4243'):
        salloc_job('salloc: Pending job allocation 4243\nsalloc: job 4243 queued and waiting for resources\n')


def test_srun_argv_is_a_step_of_the_allocation_with_every_gpu():
    argv = srun_argv('4242', 8, ['--export=ALL', '--kill-on-bad-exit=1'])
    assert argv[0] == 'srun'
    for arg in ('--jobid=4242', '--overlap', '--mpi=pmix', '--cpu-bind=none', '--gpus-per-node=8'):
        assert argv.count(arg) == 1, arg
    # never one GPU per task: the other GPUs would be hidden and CUDA IPC broken under ConstrainDevices
    assert not any(arg.startswith(('--gpus-per-task', '--gpu-bind', '--gres')) for arg in argv)
    # validate_srun_extra_args come last, so that they can override what comes before
    assert argv[-2:] == ['--export=ALL', '--kill-on-bad-exit=1']


def test_srun_argv_of_nodes_without_gpus_and_without_extra_args():
    argv = srun_argv('17', 0)
    assert '--jobid=17' in argv and '--overlap' in argv and '--mpi=pmix' in argv and '--cpu-bind=none' in argv
    assert not any('gpu' in arg for arg in argv)
    assert argv == srun_argv('17', 0, [])
