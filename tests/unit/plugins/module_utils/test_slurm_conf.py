# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Slurm's files rendered from the cluster model, host lists, restarts, munge keys, read-back and drain decisions."""
from __future__ import annotations

import itertools
import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.slurm_conf import (
    REASON_MAX, cluster_plan, drain_resume_actions, gpu_cores, hostlist_compress, hostlist_expand, hosts_block,
    inventory_problems, munge_key_action, node_gpu_cores, node_hardware, node_readback_problems, parse_scontrol_nodes,
    plan_from_hostvars, plugins, render_cgroup_conf, render_gres_conf, render_slurm_conf, render_topology_conf,
    restart_needed, validation_end, validation_start)

PROBE = Path(__file__).resolve().parents[4] / 'roles' / 'slurm' / 'files' / 'cpu_topology.py'
# the setup facts (hardware subset) of a 2-socket, 56-core, 2-thread node with 2 TiB
FACTS = {'processor_vcpus': 224, 'processor_count': 2, 'processor_cores': 56, 'processor_threads_per_core': 2,
         'memtotal_mb': 2063731}


def names(count):
    return ['node%04d' % i for i in range(1, count + 1)]


def model(hosts, gpus=8):
    return {'hosts': hosts, 'nodes': dict((host, {'gpu_count': gpus}) for host in hosts)}


def settings(hosts, **extra):
    base = {'controllers': [hosts[0]], 'compute': hosts, 'inventory': hosts + ['leaf01', 'leaf02'],
            'version': '22.05', 'cgroups': True, 'cluster_name': 'b300',
            'partitions': [{'name': 'gpu', 'default': True}]}
    base.update(extra)
    return base


def plan_of(count, gpus=8, facts=None, **extra):
    hosts = names(count)
    hardware = dict((host, node_hardware(facts or FACTS, memory_reserved_mb=8192)) for host in hosts)
    return cluster_plan(model(hosts, gpus), hardware, settings(hosts, **extra))


# --- host lists ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('hosts, expression', [
    (['node001', 'node002', 'node003', 'node004'], 'node[001-004]'),
    (['node8', 'node9', 'node10', 'node11'], 'node[8-11]'),
    (['node08', 'node09', 'node10'], 'node[08-10]'),
    (['node098', 'node099', 'node100'], 'node[098-100]'),
    (['node9', 'node010'], 'node[9,010]'),
    (['node1', 'node3', 'node4', 'node5', 'node7'], 'node[1,3-5,7]'),
    (['b300-01'], 'b300-01'),
    (['login', 'login1', 'login2'], 'login,login[1-2]'),
    (['gpu-a1', 'cpu-b2', 'gpu-a2'], 'gpu-a[1-2],cpu-b2'),
])
def test_hostlist_compress_keeps_padding_and_expands_back(hosts, expression):
    assert hostlist_compress(hosts) == expression
    assert sorted(hostlist_expand(expression)) == sorted(hosts)


def test_hostlist_round_trips_random_sets_of_padded_and_unpadded_names():
    rng = random.Random(34)
    for _round in range(200):
        hosts = set()
        for _name in range(rng.randint(1, 40)):
            number = rng.randint(0, 1200)
            hosts.add(rng.choice(['n%d' % number, 'n%04d' % number, 'rack%d-n%02d' % (number % 3, number % 40)]))
        expression = hostlist_compress(sorted(hosts))
        assert sorted(hostlist_expand(expression)) == sorted(hosts), expression


def test_hostlist_expand_reads_slurm_expressions():
    assert hostlist_expand('node[001-003,007],gpu[1-2]b') == ['node001', 'node002', 'node003', 'node007', 'gpu1b', 'gpu2b']
    assert hostlist_expand('r[1-2]n[1-2]') == ['r1n1', 'r1n2', 'r2n1', 'r2n2']
    assert hostlist_expand(['node1', 'node[2-3]']) == ['node1', 'node2', 'node3']


@pytest.mark.parametrize('expression, message', [
    ('node[1-3', 'without'), ('node1-3]', 'without'), ('node[3-1]', 'backwards'), ('node[a-b]', 'not a number'),
    ('node1,,node2', 'empty'), ('n[[1]]', 'nested')])
def test_hostlist_expand_refuses_what_slurm_would_misread(expression, message):
    with pytest.raises(ValueError, match=message):
        hostlist_expand(expression)


# --- hardware and plugins -----------------------------------------------------------------------------------------

def test_node_hardware_rounds_memory_down_and_keeps_a_layout_that_multiplies_out():
    assert node_hardware(FACTS, 8192) == {'cpus': 224, 'sockets': 2, 'cores_per_socket': 56, 'threads_per_core': 2,
                                          'real_memory': 2055168}
    odd = dict(FACTS, processor_cores=55)
    assert node_hardware(odd)['sockets'] is None
    assert node_hardware({'processor_vcpus': 2}) is None


def test_gpu_cores_are_slurm_core_indexes_not_os_cpu_ids():
    # 2 sockets x 2 cores x 2 threads, the OS numbering sockets interleaved: cpu 0,2 socket 0; 1,3 socket 1; 4-7 siblings
    cpu_cores = {0: (0, 0), 2: (0, 1), 1: (1, 0), 3: (1, 1), 4: (0, 0), 6: (0, 1), 5: (1, 0), 7: (1, 1)}
    assert gpu_cores([0, 2, 4, 6], cpu_cores) == [0, 1]
    assert gpu_cores([1, 3, 5, 7], cpu_cores) == [2, 3]


def test_node_gpu_cores_only_when_every_gpu_has_its_cpus():
    # 2 sockets x 2 cores x 2 threads, siblings numbered after the first threads (cpu 4 is cpu 0's sibling)
    cpu_map = {'0': [0, 0], '1': [0, 1], '2': [1, 0], '3': [1, 1], '4': [0, 0], '5': [0, 1], '6': [1, 0], '7': [1, 1]}
    gpus = [{'cpus': [0, 1, 4, 5]}, {'cpus': [2, 3, 6, 7]}]
    assert node_gpu_cores(gpus, cpu_map) == [[0, 1], [2, 3]]
    assert node_gpu_cores([{'cpus': [0, 1]}, {'cpus': []}], cpu_map) is None
    assert node_gpu_cores(gpus, None) is None


def test_the_plan_gives_gres_cores_from_the_gpu_facts_and_the_cpu_map():
    hosts = names(2)
    cpu_map = dict((str(cpu), [cpu // 112 % 2, cpu % 112 // 2]) for cpu in range(224))
    gpus = [{'cpus': list(range(0, 112))}] * 4 + [{'cpus': list(range(112, 224))}] * 4
    hostvars = dict((host, {'ansible_facts': dict(FACTS, gpu_topology={'gpus': gpus}), '__slurm_cpu_topology': cpu_map})
                    for host in hosts)
    lines = render_gres_conf(plan_from_hostvars(hostvars, model(hosts), settings(hosts))).splitlines()
    assert lines[1] == 'NodeName=node[0001-0002] Name=gpu File=/dev/nvidia0 Cores=0-55'
    assert lines[8] == 'NodeName=node[0001-0002] Name=gpu File=/dev/nvidia7 Cores=56-111'


@pytest.mark.parametrize('version, cgroups, expected', [
    ('22.05', False, {'ProctrackType': 'proctrack/linuxproc', 'TaskPlugin': 'task/none'}),
    ('23.11.4', False, {'ProctrackType': 'proctrack/linuxproc', 'TaskPlugin': None}),
    ('24.11', True, {'ProctrackType': 'proctrack/cgroup', 'TaskPlugin': 'task/cgroup,task/affinity'}),
])
def test_plugins_follow_the_version_and_the_cgroups(version, cgroups, expected):
    assert plugins(version, cgroups) == expected


# --- rendering at 1, 16 and 1024 nodes ----------------------------------------------------------------------------

def _node_lines(text):
    return [line for line in text.splitlines() if line.startswith('NodeName=')]


@pytest.mark.parametrize('count, expression', [(1, 'node0001'), (16, 'node[0001-0016]'), (1024, 'node[0001-1024]')])
def test_slurm_conf_has_one_compressed_node_line_per_hardware(count, expression):
    text = render_slurm_conf(plan_of(count))
    assert _node_lines(text) == ['NodeName=%s CPUs=224 Sockets=2 CoresPerSocket=56 ThreadsPerCore=2 '
                                 'RealMemory=2055168 Gres=gpu:8 State=UNKNOWN' % expression]
    for line in ('SlurmctldHost=node0001', 'SlurmctldParameters=enable_configless', 'MpiDefault=pmix',
                 'GresTypes=gpu', 'ProctrackType=proctrack/cgroup', 'TaskPlugin=task/cgroup,task/affinity'):
        assert line in text.splitlines()
    assert 'PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE DefMemPerCPU=9174 State=UP' in text.splitlines()
    assert 'TopologyPlugin' not in text


def test_nodes_with_other_hardware_get_their_own_line_in_inventory_order():
    hosts = names(16)
    hardware = dict((host, node_hardware(FACTS)) for host in hosts)
    hardware['node0005'] = node_hardware(dict(FACTS, memtotal_mb=1031865))
    gpus = model(hosts)
    gpus['nodes']['node0016']['gpu_count'] = 4
    lines = _node_lines(render_slurm_conf(cluster_plan(gpus, hardware, settings(hosts))))
    assert [line.split()[0] for line in lines] == [
        'NodeName=node[0001-0004,0006-0015]', 'NodeName=node0005', 'NodeName=node0016']
    assert 'RealMemory=1031168' in lines[1] and 'Gres=gpu:4' in lines[2]


def test_the_lab_without_cgroups_on_22_05_and_23_11():
    lab = {'processor_vcpus': 2, 'processor_count': 1, 'processor_cores': 2, 'processor_threads_per_core': 1,
           'memtotal_mb': 24030}
    for version, task in (('22.05', ['TaskPlugin=task/none']), ('23.11', [])):
        text = render_slurm_conf(plan_of(4, gpus=None, facts=lab, version=version, cgroups=False))
        lines = text.splitlines()
        assert 'ProctrackType=proctrack/linuxproc' in lines
        assert [line for line in lines if line.startswith('TaskPlugin')] == task
        assert _node_lines(text) == ['NodeName=node[0001-0004] CPUs=2 Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 '
                                     'RealMemory=15360 State=UNKNOWN']
        assert render_cgroup_conf(plan_of(4, facts=lab, version=version, cgroups=False)) == ''


@pytest.mark.parametrize('count, expression', [(1, 'node0001'), (16, 'node[0001-0016]'), (1024, 'node[0001-1024]')])
def test_gres_conf_lists_the_gpu_files_once_per_group(count, expression):
    lines = render_gres_conf(plan_of(count)).splitlines()
    assert lines[1:] == ['NodeName=%s Name=gpu File=/dev/nvidia[0-7]' % expression]


def test_gres_conf_gives_each_gpu_its_cores_where_known():
    hosts = names(2)
    hardware = {}
    for host in hosts:
        hardware[host] = node_hardware(FACTS)
        hardware[host]['gpu_cores'] = [list(range(0, 56))] * 4 + [list(range(56, 112))] * 4
    lines = render_gres_conf(cluster_plan(model(hosts), hardware, settings(hosts))).splitlines()
    assert lines[1] == 'NodeName=node[0001-0002] Name=gpu File=/dev/nvidia0 Cores=0-55'
    assert lines[8] == 'NodeName=node[0001-0002] Name=gpu File=/dev/nvidia7 Cores=56-111'
    assert len(lines) == 9


def test_autodetect_only_on_24_11_and_never_beside_file_lines():
    assert render_gres_conf(plan_of(16, version='24.11', gres_autodetect=True)).splitlines()[1:] == ['AutoDetect=nvidia']
    refused = plan_of(16, version='23.11', gres_autodetect=True)
    assert refused['problems'] == ['slurm_gres_autodetect: AutoDetect=nvidia needs Slurm 24.11 or later, this is 23.11; '
                                   'the explicit File= lines need no detection']
    with pytest.raises(ValueError, match='nothing is rendered'):
        render_gres_conf(refused)


def test_cgroup_conf_constrains_cores_devices_and_memory():
    assert render_cgroup_conf(plan_of(1)).splitlines()[1:] == [
        'CgroupPlugin=autodetect', 'ConstrainCores=yes', 'ConstrainDevices=yes', 'ConstrainRAMSpace=yes']


def test_topology_from_two_leaves_with_a_spine_above():
    leaves = [{'name': 'leaf01', 'nodes': 'node[0001-0008]'}, {'name': 'leaf02', 'nodes': names(16)[8:]}]
    plan = plan_of(16, topology_leaves=leaves)
    assert render_topology_conf(plan).splitlines()[1:] == [
        'SwitchName=leaf01 Nodes=node[0001-0008]', 'SwitchName=leaf02 Nodes=node[0009-0016]',
        'SwitchName=spine Switches=leaf[01-02]']
    assert 'TopologyPlugin=topology/tree' in render_slurm_conf(plan).splitlines()
    assert render_topology_conf(plan_of(16)) == ''


# --- bad input ----------------------------------------------------------------------------------------------------

def test_a_partition_or_leaf_naming_unknown_nodes_is_refused():
    plan = plan_of(4, partitions=[{'name': 'gpu', 'nodes': 'node[0001-0006]', 'default': True}],
                   topology_leaves=[{'name': 'leaf01', 'nodes': 'node[0001-0002],login1'},
                                    {'name': 'leaf02', 'nodes': 'node[0002-0004]'}])
    assert plan['problems'] == [
        'slurm_partitions[0] (gpu): names node[0005-0006], not in slurm_compute_group',
        'slurm_topology_leaves[0] (leaf01): names login1, not in slurm_compute_group']
    twice = plan_of(4, topology_leaves=[{'name': 'leaf01', 'nodes': 'node[0001-0003]'},
                                        {'name': 'leaf02', 'nodes': 'node[0003-0004]'}])
    assert twice['problems'] == ['slurm_topology_leaves[1] (leaf02): node0003 already hang off leaf01; a node hangs off '
                                 'one leaf in topology/tree']


def test_a_controller_outside_the_inventory_and_nodes_without_hardware_are_named():
    hosts = names(4)
    hardware = {'node0001': node_hardware(FACTS), 'node0002': node_hardware(FACTS)}
    plan = cluster_plan(model(hosts), hardware, settings(hosts, controllers=['ctl01']))
    assert plan['problems'] == [
        'slurm_controller_group on ctl01: not a host of the inventory',
        'slurm on node[0003-0004]: no CPU count and memory read on them; run with those nodes reachable (a --limit '
        'that leaves them out needs fact caching)']
    assert plan['groups'] == []


def test_a_node_whose_gpus_the_model_lacks_is_named_where_others_have_gpus():
    hosts = names(4)
    gpus = model(hosts)
    gpus['nodes']['node0003']['gpu_count'] = None
    hardware = dict((host, node_hardware(FACTS)) for host in hosts)
    assert cluster_plan(gpus, hardware, settings(hosts))['problems'] == [
        'slurm on node0003: no GPU count in the cluster model, while other compute nodes have GPUs; run with their GPUs '
        'answering (nvidia-smi) and in the play']
    # no node has GPUs (the lab): no GPU lines, no problem
    assert cluster_plan(model(hosts, gpus=None), hardware, settings(hosts))['problems'] == []


def test_two_default_partitions_and_three_controllers_are_refused():
    hosts = names(4)
    plan = plan_of(4, controllers=hosts[:3], partitions=[{'name': 'a', 'default': True}, {'name': 'b', 'default': True}])
    assert plan['problems'] == ['slurm_controller_group: 3 hosts (node0001, node0002, node0003); Slurm takes a primary '
                                'and at most one backup', 'slurm_partitions: a, b are all marked default; Slurm takes one']


def test_the_inventory_rules_need_no_facts():
    hosts = names(4)
    assert inventory_problems(settings(hosts)) == []
    # check_inventory knows no version before the packages are chosen: the version's rules wait for the role
    assert inventory_problems(settings(hosts, version=None, gres_autodetect=True)) == []
    assert cluster_plan(model(hosts), {}, settings(hosts, version=None, compute=[]))['problems'][-1] == (
        'slurm_version: unknown; set it where the distribution has no Slurm this role knows')
    assert inventory_problems(settings(hosts, controllers=[], version='22', partitions=[{'nodes': 'node1'}])) == [
        'slurm_controller_group: the group is empty or missing; Slurm needs one controller (two for a backup)',
        "slurm_version: '22' is not a Slurm version (major.minor, e.g. 22.05)", 'slurm_partitions[0]: needs a name']


CGROUP2 = [{'mount': '/', 'fstype': 'overlay'}, {'mount': '/sys/fs/cgroup', 'fstype': 'cgroup2'}]
HYBRID = [{'mount': '/sys/fs/cgroup', 'fstype': 'tmpfs'}, {'mount': '/sys/fs/cgroup/unified', 'fstype': 'cgroup2'}]


@pytest.mark.parametrize('mounts, wanted, cgroups', [
    ((CGROUP2, CGROUP2), 'auto', True), ((CGROUP2, HYBRID), 'auto', False), ((CGROUP2, CGROUP2), 'disabled', False),
    ((HYBRID, HYBRID), 'enabled', True)])
def test_plan_from_hostvars_reads_each_nodes_facts_and_its_cgroup_tree(mounts, wanted, cgroups):
    hosts = names(2)
    hostvars = dict((host, {'ansible_facts': dict(FACTS, mounts=mount)}) for host, mount in zip(hosts, mounts))
    plan = plan_from_hostvars(hostvars, model(hosts), settings(hosts, cgroups=wanted, memory_reserved_mb=8192))
    assert plan['cgroups'] is cgroups
    assert [group['names'] for group in plan['groups']] == [hosts]
    assert plan['nodes'][0]['real_memory'] == 2055168


def test_hosts_block_names_every_slurm_host_with_an_ip_address():
    hostvars = {'node01': {'ansible_host': '10.77.0.11'}, 'node02': {'ansible_host': 'node02.example.org'},
                'node03': {'ansible_host': 'fd00::3'}}
    assert hosts_block(hostvars, ['node01', 'node02', 'node03', 'node01']) == '10.77.0.11 node01\nfd00::3 node03'


# --- restarts, keys -----------------------------------------------------------------------------------------------

def test_a_partition_change_reconfigures_and_a_node_or_plugin_change_restarts():
    old = render_slurm_conf(plan_of(16))
    partitions = render_slurm_conf(plan_of(16, partitions=[{'name': 'gpu', 'default': True, 'max_time': '2-00:00:00'}]))
    assert restart_needed(old, partitions) == (False, [])
    assert restart_needed(old, render_slurm_conf(plan_of(17))) == (True, ['nodes added or removed (node0017)'])
    assert restart_needed(old, render_slurm_conf(plan_of(16, cgroups=False))) == (
        True, ['ProctrackType changed', 'TaskPlugin changed'])
    assert restart_needed('', old)[0] is True
    hosts = names(16)
    hardware = dict((host, node_hardware(FACTS, memory_reserved_mb=8192)) for host in hosts)
    hardware['node0003'] = node_hardware(dict(FACTS, memtotal_mb=1031865))
    less = render_slurm_conf(cluster_plan(model(hosts), hardware, settings(hosts)))
    assert restart_needed(old, less) == (True, ['the hardware of node0003 changed'])


@pytest.mark.parametrize('node, existed, repair, action', [
    ('aaa', True, False, 'keep'), (None, False, False, 'install'), ('bbb', False, False, 'install'),
    ('bbb', True, False, 'refuse'), ('bbb', True, True, 'repair')])
def test_munge_key_action(node, existed, repair, action):
    assert munge_key_action('aaa', node, existed, repair) == action


# --- read-back ----------------------------------------------------------------------------------------------------

def _scontrol(name, state, cpus=224, memory=2055168, gres='gpu:8', reason=None):
    line = ('NodeName=%s Arch=x86_64 CoresPerSocket=56 CPUAlloc=0 CPUTot=%d Gres=%s NodeAddr=%s State=%s '
            'RealMemory=%d OS=Linux 6.1.0-28-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1' % (
                name, cpus, gres, name, state, memory))
    return line + (' Reason=%s' % reason if reason else '')


def test_scontrol_nodes_keep_values_with_spaces():
    nodes = parse_scontrol_nodes(_scontrol('node0001', 'IDLE+DRAIN', reason='hpcfabric: slow rail 1 [root@2026-11-27T21:00:00]'))
    assert nodes['node0001']['OS'] == 'Linux 6.1.0-28-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1'
    assert nodes['node0001']['Reason'] == 'hpcfabric: slow rail 1 [root@2026-11-27T21:00:00]'
    assert nodes['node0001']['State'] == 'IDLE+DRAIN'


def test_readback_names_nodes_not_idle_or_with_other_hardware():
    plan = plan_of(4)
    text = '\n'.join([_scontrol('node0001', 'IDLE'), _scontrol('node0002', 'IDLE+DRAIN', reason='Low RealMemory'),
                      _scontrol('node0003', 'IDLE', cpus=112, gres='gpu:7')])
    assert node_readback_problems(plan, parse_scontrol_nodes(text)) == [
        'node0002: state IDLE+DRAIN (Low RealMemory)', 'node0003: 112 CPUs, 224 configured',
        'node0003: Gres gpu:7, gpu:8 configured', 'node0004: not known to slurmctld']


# --- drain and resume ---------------------------------------------------------------------------------------------

def test_drain_resume_touches_only_the_validations_own_reasons():
    states = parse_scontrol_nodes('\n'.join([
        _scontrol('node0001', 'IDLE'),
        _scontrol('node0002', 'IDLE+DRAIN', reason='hpcfabric: link rail 1 slow [root@2026-11-27T20:00:00]'),
        _scontrol('node0003', 'IDLE+DRAIN', reason='bad DIMM, ticket 4711 [alice@2026-11-20T08:00:00]'),
        _scontrol('node0004', 'IDLE+DRAIN', reason='hpcfabric: node slow [root@2026-11-27T20:00:00]'),
        _scontrol('node0005', 'DOWN+DRAIN', reason='power supply [bob@2026-11-21T08:00:00]'),
        _scontrol('node0006', 'IDLE+DRAIN', reason='hpcfabric: node slow [root@2026-11-27T20:00:00]'),
    ]))
    tested = ['node0001', 'node0002', 'node0003', 'node0004', 'node0005']
    findings = {'node0001': 'node: slow with every partner', 'node0003': 'link: rail 0 fab0 "slow"',
                'node0004': 'node slow'}
    actions = drain_resume_actions(states, tested, findings)
    assert actions == {
        'drain': [{'node': 'node0001', 'reason': 'hpcfabric: node: slow with every partner'}],
        # node0002 passed again; node0006 was not tested, so it stays drained
        'resume': ['node0002'],
        # drained by someone else: never re-labelled, never resumed
        'kept': [{'node': 'node0003', 'reason': 'bad DIMM, ticket 4711 [alice@2026-11-20T08:00:00]'}]}


def test_a_finding_with_brackets_is_already_drained_with_it():
    # scontrol's " [user@time]" goes, the finding's own brackets stay: the same finding drains nothing again
    finding = 'link: rail 1 [mlx5_1] slow'
    states = parse_scontrol_nodes(_scontrol('node0001', 'IDLE+DRAIN',
                                            reason='hpcfabric: %s [root@2026-11-27T20:00:00]' % finding))
    assert drain_resume_actions(states, ['node0001'], {'node0001': finding}) == {'drain': [], 'resume': [], 'kept': []}
    assert drain_resume_actions(states, ['node0001'], {'node0001': 'link: rail 0 [mlx5_0] slow'})['drain'] == [
        {'node': 'node0001', 'reason': 'hpcfabric: link: rail 0 [mlx5_0] slow'}]


def test_a_long_finding_is_cut_and_quotes_cannot_end_the_reason():
    actions = drain_resume_actions({}, ['node0001'], {'node0001': 'x"y\n' + 'z' * 500})
    reason = actions['drain'][0]['reason']
    assert reason.startswith('hpcfabric: x\'y z') and len(reason) == REASON_MAX and '"' not in reason


def test_no_node_is_both_drained_and_resumed_whatever_the_states():
    states_of = ['IDLE', 'IDLE+DRAIN', 'MIXED+DRAIN', 'DOWN', 'DOWN+DRAIN', 'ALLOCATED']
    reasons = [None, 'hpcfabric: x', 'someone: y']
    for state, reason, failed in itertools.product(states_of, reasons, (True, False)):
        states = parse_scontrol_nodes(_scontrol('n1', state, reason=reason))
        actions = drain_resume_actions(states, ['n1'], {'n1': 'node slow'} if failed else {})
        touched = [a['node'] for a in actions['drain']] + actions['resume']
        assert len(touched) <= 1
        # drained or down for someone else's reason: never drained again (their reason would be lost), never resumed
        if reason == 'someone: y' and ('DRAIN' in state or 'DOWN' in state):
            assert touched == [], (state, reason, failed)
        if not failed:
            assert actions['drain'] == []


# --- the validation under Slurm: which nodes it tests, holds, drains and resumes ----------------------------------

OWN = 'hpcfabric: isolation: node: fails with every partner on every rail'
THEIRS = 'bad DIMM, ticket 4711 [alice@2026-11-20T08:00:00]'


def _states(*lines):
    return parse_scontrol_nodes('\n'.join(lines))


def _verdict(host, verdict, *reasons):
    """A node of node_verdicts' output; each reason ``(source, verdict, reason)``."""
    return {'host': host, 'verdict': verdict, 'reasons': [
        {'source': source, 'verdict': judged, 'reason': reason, 'action': 'drain %s' % host}
        for source, judged, reason in reasons]}


def _fail(host, reason='node: fails with every partner on every rail', source='isolation'):
    return _verdict(host, 'FAIL', (source, 'FAIL', reason))


def _skipped(start):
    return dict((item['node'], item['reason']) for item in start['skip'])


def test_validation_start_tests_idle_nodes_and_skips_those_no_job_can_start_on():
    states = _states(
        _scontrol('node0001', 'IDLE'),
        _scontrol('node0002', 'DOWN', reason='Not responding [slurm@2026-11-27T19:00:00]'),
        _scontrol('node0003', 'IDLE*'),
        _scontrol('node0004', 'IDLE+DRAIN', reason=THEIRS),
        _scontrol('node0005', 'IDLE'))
    hosts = ['node0005', 'node0004', 'node0003', 'node0002', 'node0001']
    start = validation_start(states, hosts, dict((host, 8) for host in hosts))
    # in hosts order, not scontrol's
    assert start['test'] == ['node0005', 'node0001']
    assert (start['held'], start['gpus_per_node'], start['problems']) == ([], 8, [])
    skipped = _skipped(start)
    assert sorted(skipped) == ['node0002', 'node0003', 'node0004']
    assert 'DOWN' in skipped['node0002'] and 'IDLE*' in skipped['node0003']
    # someone else's drain is named with their reason, so that the report says why the node was left out
    assert 'bad DIMM, ticket 4711' in skipped['node0004']


def test_validation_start_holds_the_nodes_an_earlier_validation_drained_and_tests_them_again():
    states = _states(_scontrol('node0001', 'IDLE'),
                     _scontrol('node0002', 'IDLE+DRAIN', reason=OWN + ' [root@2026-11-27T20:00:00]'))
    start = validation_start(states, ['node0001', 'node0002'], {'node0001': 8, 'node0002': 8})
    assert start['test'] == ['node0001', 'node0002']
    # the reason as the validation wrote it, without the [user@time] scontrol adds
    assert start['held'] == [{'node': 'node0002', 'reason': OWN}]
    assert (start['skip'], start['problems']) == ([], [])


def test_validation_start_names_a_host_slurm_does_not_know():
    start = validation_start(_states(_scontrol('node0001', 'IDLE')), ['node0001', 'node0009'],
                             {'node0001': 8, 'node0009': 8})
    assert start['test'] == ['node0001']
    assert len(start['problems']) == 1 and 'node0009' in start['problems'][0]
    assert 'node0009' not in _skipped(start)


def test_validation_start_refuses_tested_nodes_with_other_gpu_counts():
    states = _states(_scontrol('node0001', 'IDLE'), _scontrol('node0002', 'IDLE', gres='gpu:4'),
                     _scontrol('node0003', 'IDLE+DRAIN', reason='hpcfabric: x [root@2026-11-27T20:00:00]'))
    start = validation_start(states, ['node0001', 'node0002', 'node0003'],
                             {'node0001': 8, 'node0002': 4, 'node0003': 8})
    assert len(start['problems']) == 1
    assert re.search(r'\b8\b', start['problems'][0]) and re.search(r'\b4\b', start['problems'][0])
    # a held node is tested: its GPUs count too
    start = validation_start(states, ['node0002', 'node0003'], {'node0002': 4, 'node0003': 8})
    assert len(start['problems']) == 1


def test_validation_start_ignores_the_gpus_of_nodes_it_skips():
    states = _states(_scontrol('node0001', 'IDLE'), _scontrol('node0002', 'DOWN', gres='gpu:4'),
                     _scontrol('node0003', 'IDLE+DRAIN', gres='gpu:4', reason=THEIRS), _scontrol('node0004', 'IDLE'))
    start = validation_start(states, ['node0001', 'node0002', 'node0003', 'node0004'],
                             {'node0001': 8, 'node0002': 4, 'node0003': 4, 'node0004': 8})
    assert (start['test'], start['gpus_per_node'], start['problems']) == (['node0001', 'node0004'], 8, [])


def test_validation_start_of_nodes_without_gpus_asks_for_none():
    start = validation_start(_states(_scontrol('node0001', 'IDLE', gres='(null)')), ['node0001'], {'node0001': None})
    assert (start['test'], start['gpus_per_node'], start['problems']) == (['node0001'], 0, [])


def test_validation_start_with_every_node_skipped_has_no_node_to_test():
    states = _states(_scontrol('node0001', 'DOWN*'), _scontrol('node0002', 'IDLE+DRAIN', reason=THEIRS))
    start = validation_start(states, ['node0001', 'node0002'], {'node0001': 8, 'node0002': 8})
    assert start['test'] == [] and start['held'] == []
    assert len(start['problems']) == 1 and start['problems'][0].startswith('no node to test')
    assert 'node0001' in start['problems'][0] and 'node0002' in start['problems'][0]


# Slurm 21.08 and later show a node that does not respond as a +NOT_RESPONDING flag, older ones as IDLE*+DRAIN
@pytest.mark.parametrize('state, reason', [
    ('IDLE+NOT_RESPONDING', None),
    ('IDLE+DRAIN+NOT_RESPONDING', OWN + ' [root@2026-11-27T20:00:00]'),
    ('IDLE*+DRAIN', OWN + ' [root@2026-11-27T20:00:00]'),
])
def test_validation_start_skips_a_node_that_does_not_respond_whatever_slurm_writes(state, reason):
    start = validation_start(_states(_scontrol('node0001', 'IDLE'), _scontrol('node0002', state, reason=reason)),
                             ['node0001', 'node0002'], {'node0001': 8, 'node0002': 8})
    assert start['test'] == ['node0001'] and start['held'] == []
    assert list(_skipped(start)) == ['node0002']


def _end(states, hosts, verdicts):
    """validation_end as the role calls it: held as validation_start gave it on the same states."""
    start = validation_start(states, hosts, dict((host, 8) for host in hosts))
    return validation_end(states, start['held'], verdicts)


def _applied(end):
    return dict((item['node'], item['reason']) for item in end['apply'])


def test_validation_end_drains_a_failed_node_with_its_first_failing_reason():
    states = _states(_scontrol('node0001', 'IDLE'), _scontrol('node0002', 'IDLE'))
    verdicts = [_verdict('node0001', 'PASS'),
                _verdict('node0002', 'FAIL', ('allreduce', 'WARN', 'busbw 80% of the threshold'),
                         ('isolation', 'FAIL', 'node: fails with every partner on every rail'),
                         ('health', 'FAIL', 'GPU 3: XID 79'))]
    end = _end(states, ['node0001', 'node0002'], verdicts)
    wanted = {'node': 'node0002', 'reason': 'hpcfabric: isolation: node: fails with every partner on every rail'}
    assert end['drain'] == [wanted] and end['apply'] == [wanted]
    assert (end['resume'], end['kept']) == ([], [])


def test_validation_end_resumes_a_held_node_that_passed():
    states = _states(_scontrol('node0001', 'IDLE+DRAIN', reason=OWN + ' [root@2026-11-27T20:00:00]'))
    end = _end(states, ['node0001'], [_verdict('node0001', 'PASS')])
    assert end['resume'] == ['node0001']
    assert (end['apply'], end['drain']) == ([], [])


@pytest.mark.parametrize('verdict', ['UNKNOWN', 'WARN'])
def test_validation_end_puts_a_held_node_it_could_not_judge_back_to_its_drain(verdict):
    states = _states(_scontrol('node0001', 'IDLE+DRAIN', reason=OWN + ' [root@2026-11-27T20:00:00]'))
    end = _end(states, ['node0001'], [_verdict('node0001', verdict, ('isolation', verdict, 'no pair ran'))])
    # the run resumed it inside the reservation: its old drain, as the validation wrote it, is written again
    assert end['apply'] == [{'node': 'node0001', 'reason': OWN}]
    assert (end['resume'], end['drain']) == ([], [])


def test_validation_end_drains_again_a_held_node_that_fails_for_the_same_reason():
    states = _states(_scontrol('node0001', 'IDLE+DRAIN', reason=OWN + ' [root@2026-11-27T20:00:00]'))
    end = _end(states, ['node0001'], [_fail('node0001')])
    # drained with that reason before the run, so no new drain; but the run resumed it, so it is applied again
    assert end['drain'] == []
    assert end['apply'] == [{'node': 'node0001', 'reason': OWN}]
    assert end['resume'] == []


def test_validation_end_drains_a_held_node_that_fails_for_another_reason_once():
    states = _states(_scontrol('node0001', 'IDLE+DRAIN', reason=OWN + ' [root@2026-11-27T20:00:00]'))
    end = _end(states, ['node0001'], [_fail('node0001', 'GPU 3: XID 79', source='health')])
    assert end['apply'] == [{'node': 'node0001', 'reason': 'hpcfabric: health: GPU 3: XID 79'}]
    assert end['drain'] == end['apply'] and end['resume'] == []


def test_validation_end_keeps_someone_elses_drain_of_a_failed_node():
    states = _states(_scontrol('node0001', 'IDLE+DRAIN', reason=THEIRS),
                     _scontrol('node0002', 'DOWN', reason='power supply [bob@2026-11-21T08:00:00]'))
    end = validation_end(states, [], [_fail('node0001'), _fail('node0002')])
    assert end['kept'] == [{'node': 'node0001', 'reason': THEIRS},
                           {'node': 'node0002', 'reason': 'power supply [bob@2026-11-21T08:00:00]'}]
    assert (end['apply'], end['drain'], end['resume']) == ([], [], [])


def test_validation_end_leaves_alone_what_it_neither_judged_nor_held():
    # drained by an earlier validation, but left out of this run (--limit): no verdict, not held
    states = _states(_scontrol('node0001', 'IDLE'),
                     _scontrol('node0002', 'IDLE+DRAIN', reason=OWN + ' [root@2026-11-27T20:00:00]'))
    end = validation_end(states, [], [_verdict('node0001', 'PASS')])
    assert end == {'drain': [], 'resume': [], 'kept': [], 'apply': []}


def test_validation_end_whatever_the_states_and_verdicts():
    states_of = ['IDLE', 'IDLE*', 'IDLE+DRAIN', 'MIXED+DRAIN', 'DRAINED', 'DOWN', 'DOWN*', 'DOWN+DRAIN', 'ALLOCATED']
    reasons = [None, OWN + ' [root@2026-11-27T20:00:00]', 'hpcfabric: old finding [root@2026-11-26T20:00:00]',
               THEIRS, 'Not responding [slurm@2026-11-27T19:00:00]']
    hosts = ['node0001', 'node0002']
    fail_other = _fail('node0001', 'GPU 3: XID 79', source='health')
    judgements = ('PASS', 'FAIL', 'FAIL-OTHER', 'WARN', 'UNKNOWN', None)
    for state, reason, judged in itertools.product(states_of, reasons, judgements):
        case = (state, reason, judged)
        states = _states(_scontrol('node0001', state, reason=reason), _scontrol('node0002', 'IDLE'))
        if judged == 'FAIL':
            verdicts = [_fail('node0001')]
        elif judged == 'FAIL-OTHER':
            verdicts = [fail_other]
        elif judged is None:
            verdicts = []
        else:
            verdicts = [_verdict('node0001', judged, ('isolation', judged, 'x'))]
        verdicts.append(_verdict('node0002', 'PASS'))
        start = validation_start(states, hosts, {'node0001': 8, 'node0002': 8})
        end = validation_end(states, start['held'], verdicts)
        applied = _applied(end)
        assert len(applied) == len(end['apply']), case
        assert not set(applied) & set(end['resume']), case
        assert all(text.startswith('hpcfabric: ') and len(text) <= REASON_MAX for text in applied.values()), case
        # a node someone else drained or took down: never drained again (their reason would be lost), never resumed
        theirs = bool(reason) and not reason.startswith('hpcfabric:') and ('DRAIN' in state or 'DOWN' in state)
        if theirs:
            assert 'node0001' not in applied and 'node0001' not in end['resume'], case
        # a node that passed is never drained; one that failed where a job ran on it always is
        if judged == 'PASS':
            assert 'node0001' not in applied, case
        if judged in ('FAIL', 'FAIL-OTHER') and 'node0001' in start['test']:
            assert 'node0001' in applied, case
        # a held node leaves the run drained unless it passed
        if [item['node'] for item in start['held']] == ['node0001'] and judged != 'PASS':
            assert 'node0001' in applied, case
        # the node that passed and was never drained is not touched
        assert 'node0002' not in applied and 'node0002' not in end['resume'], case


def test_the_cpu_topology_probe_maps_each_online_cpu_to_its_socket_and_core(tmp_path):
    """roles/slurm/files/cpu_topology.py, run as the role runs it, on a sysfs CPU directory laid out as the kernel's."""
    for cpu, socket, core in ((0, 0, 0), (1, 1, 0), (2, 0, 0), (10, 1, 4)):
        topology = tmp_path / ('cpu%d' % cpu) / 'topology'
        topology.mkdir(parents=True)
        (topology / 'physical_package_id').write_text('%d\n' % socket)
        (topology / 'core_id').write_text('%d\n' % core)
    # an offline CPU has no topology directory; cpufreq and cpuidle are no CPUs
    (tmp_path / 'cpu3').mkdir()
    (tmp_path / 'cpufreq').mkdir()
    out = subprocess.run([sys.executable, str(PROBE), str(tmp_path)], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == {'0': [0, 0], '1': [1, 0], '2': [0, 0], '10': [1, 4]}


@pytest.mark.parametrize('name', ['scontrol-show-node-22.05.8.txt', 'scontrol-show-node-oneliner-22.05.8.txt'])
def test_recorded_scontrol_output_gives_each_nodes_state_and_reason_and_what_the_validation_does(name):
    """Real output (tests/unit/fixtures/slurm/README.md): node02 drained by the validation, node03 by hand."""
    text = (Path(__file__).resolve().parents[2] / 'fixtures' / 'slurm' / name).read_text()
    nodes = parse_scontrol_nodes(text)
    assert sorted(nodes) == ['node01', 'node02', 'node03']
    assert nodes['node01']['State'] == 'IDLE' and 'Reason' not in nodes['node01']
    assert nodes['node02']['Reason'].startswith('hpcfabric: isolation: node: fails with every partner on every rail [')
    assert nodes['node03']['Reason'].startswith('DIMM replacement, ticket 4711 [root@')
    assert nodes['node02']['OS'].startswith('Linux 6.18.44-fc-v657 #1 SMP')
    assert (nodes['node01']['CPUTot'], nodes['node01']['RealMemory']) == ('2', '22528')
    start = validation_start(nodes, ['node01', 'node02', 'node03'], {'node01': 0, 'node02': 0, 'node03': 0})
    assert start['test'] == ['node01', 'node02']
    assert start['held'] == [{'node': 'node02', 'reason': 'hpcfabric: isolation: node: fails with every partner on '
                                                          'every rail'}]
    assert [item['node'] for item in start['skip']] == ['node03'] and start['problems'] == []
