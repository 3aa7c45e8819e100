# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""isolation_launch: what each run of an isolation round starts, on the cluster model of RoCE nodes built from
recorded sysfs and nvidia-smi topo outputs, and of the lab's plain veth fabric."""
from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.cluster_model import build_model
from ansible_collections.hpcfabric.cluster.plugins.module_utils.ib_sysfs import class_dir, read_devices
from ansible_collections.hpcfabric.cluster.plugins.module_utils.ibstat import summarize
from ansible_collections.hpcfabric.cluster.plugins.module_utils.isolation_launch import perftest_problems, round_launches
from ansible_collections.hpcfabric.cluster.plugins.module_utils.topology import parse_topology

RAILS = [{'name': 'rail0', 'subnet': '10.152.0.0/22'}, {'name': 'rail1', 'subnet': '10.152.4.0/22'}]
PERFTEST = {'path': '/usr/bin/ib_write_bw', 'cuda': True}
RUNS = [{'hosts': ['gpu01', 'gpu02'], 'rail': 0, 'net_devices': 'mlx5_0:1'},
        {'hosts': ['gpu01', 'gpu02'], 'rail': 1, 'net_devices': 'mlx5_1:1'}]


def roce_nodes(fixture_path, fixture_text):
    """Two DGX A100s whose net1/net2 are mlx5_0/mlx5_1 of the recorded pod tree (RoCE v2 IPv4 GID 7)."""
    ib = summarize(read_devices(class_dir(str(fixture_path('sysfs', 'roce_gid7_pod'))))[0], 'sysfs')
    topology = parse_topology(fixture_text('nvidia-smi-topo', 'dgx-a100-8gpu-nv12-nic-legend.txt'))[0]

    def node(host):
        return {'fabric_network_rails': RAILS,
                'fabric_network_interfaces': [{'name': 'net1', 'address': '10.152.0.%d/22' % host, 'rail': 0},
                                              {'name': 'net2', 'address': '10.152.4.%d/22' % host, 'rail': 1}],
                'ansible_facts': {'ib': ib, 'gpu_topology': topology}}
    model = build_model({'gpu01': node(12), 'gpu02': node(13)}, ['gpu01', 'gpu02'])
    assert model['problems'] == []
    return model['nodes']


def settings(**changes):
    base = {'tool': 'auto', 'device': 'cuda', 'work_dir': '/var/tmp/hpcfabric-validate/',
            'perftest': {'gpu01': PERFTEST, 'gpu02': PERFTEST}, 'perftest_bytes': 8388608, 'perftest_seconds': 5,
            'perftest_port': 18515, 'perftest_args': [],
            'launch': ['/usr/bin/mpirun', '--bind-to', 'none'],
            'entries': {'gpu01': {'name': 'gpu01-rail0', 'slots': 8}, 'gpu02': {'name': 'gpu02-rail0', 'slots': 8}},
            'rank_argv': ['/opt/hpcfabric/bench/rank_env.sh', '/var/tmp/hpcfabric-validate/affinity', '/venv/bin/python'],
            'bench': ['/opt/hpcfabric/bench/allreduce.py', '--device', 'cuda']}
    base.update(changes)
    return base


def test_rdma_rails_with_perftest_run_ib_write_bw_between_their_ports(fixture_path, fixture_text):
    launch = round_launches(RUNS, roce_nodes(fixture_path, fixture_text), settings())
    assert [(run['tool'], run['json'], run['cuda']) for run in launch['runs']] == [('ib_write_bw', None, True)] * 2
    # the servers on the pair's second node, one port per rail so that both rails run at once
    servers = launch['servers']['gpu02']
    assert [(server['run'], server['end'], server['tcp_port'], server['address']) for server in servers] == [
        (0, 'server', 18515, '10.152.0.13'), (1, 'server', 18516, '10.152.4.13')]
    assert servers[1]['argv'] == [
        'timeout', '--kill-after=10', '125', '/usr/bin/ib_write_bw', '--ib-dev=mlx5_1', '--ib-port=1', '--report_gbits',
        '--CPU-freq', '--size=8388608', '--duration=5', '--port=18516', '--gid-index=7', '--use_cuda=1']
    # each client connects to its server's address on the rail, its buffers in the rail's GPU
    clients = launch['clients']['gpu01']
    assert [client['argv'][-1] for client in clients] == ['10.152.0.13', '10.152.4.13']
    assert [arg for arg in clients[0]['argv'] if arg.startswith(('--ib-dev', '--use_cuda'))] == [
        '--ib-dev=mlx5_0', '--use_cuda=0']


def test_without_cuda_in_perftest_or_on_cpu_runs_the_buffers_are_in_host_memory(fixture_path, fixture_text):
    nodes = roce_nodes(fixture_path, fixture_text)
    no_cuda = {'path': '/usr/bin/ib_write_bw', 'cuda': False}
    for launch in (round_launches(RUNS, nodes, settings(perftest={'gpu01': no_cuda, 'gpu02': no_cuda})),
                   round_launches(RUNS, nodes, settings(device='cpu'))):
        argvs = [entry['argv'] for entries in list(launch['servers'].values()) + list(launch['clients'].values())
                 for entry in entries]
        assert len(argvs) == 4 and not any(arg.startswith('--use_cuda') for argv in argvs for arg in argv)
        assert [run['cuda'] for run in launch['runs']] == [False, False]


def mpi_argv(rail, devices):
    return ['/usr/bin/mpirun', '--bind-to', 'none', '--host', 'gpu01-rail0:1,gpu02-rail0:1', '-np', '2',
            '/opt/hpcfabric/bench/rank_env.sh', '/var/tmp/hpcfabric-validate/affinity', '--rail', str(rail),
            '/usr/bin/env', 'UCX_NET_DEVICES=' + devices, '/venv/bin/python', '/opt/hpcfabric/bench/allreduce.py',
            '--device', 'cuda', '--json', '/var/tmp/hpcfabric-validate/pair-rail%d.json' % rail]


@pytest.mark.parametrize('changes', [{'tool': 'mpi'}, {'perftest': {'gpu01': PERFTEST, 'gpu02': None}}])
def test_mpi_runs_are_one_rank_per_node_on_the_rail_alone(fixture_path, fixture_text, changes):
    launch = round_launches(RUNS, roce_nodes(fixture_path, fixture_text), settings(**changes))
    assert launch['servers'] == {}
    assert [(run['tool'], run['json']) for run in launch['runs']] == [
        ('mpi', '/var/tmp/hpcfabric-validate/pair-rail0.json'), ('mpi', '/var/tmp/hpcfabric-validate/pair-rail1.json')]
    assert launch['clients']['gpu01'] == [
        {'run': 0, 'end': 'client', 'tcp_port': None, 'argv': mpi_argv(0, 'mlx5_0:1')},
        {'run': 1, 'end': 'client', 'tcp_port': None, 'argv': mpi_argv(1, 'mlx5_1:1')}]


def test_under_slurm_a_pair_runs_as_an_srun_step_on_the_inventory_names(fixture_path, fixture_text):
    srun = ['srun', '--jobid=4242', '--overlap', '--mpi=pmix', '--cpu-bind=none']
    launch = round_launches(RUNS, roce_nodes(fixture_path, fixture_text),
                            settings(tool='mpi', launcher='slurm', launch=srun))
    assert [(run['tool'], run['json']) for run in launch['runs']] == [
        ('mpi', '/var/tmp/hpcfabric-validate/pair-rail0.json'), ('mpi', '/var/tmp/hpcfabric-validate/pair-rail1.json')]
    argv = launch['clients']['gpu01'][1]['argv']
    # one task on each node of the pair, by Slurm's node names (the inventory's), never the hostfile's rail names
    assert argv == srun + ['--ntasks=2', '--distribution=arbitrary', '--nodelist=gpu01,gpu02',
                           '/opt/hpcfabric/bench/rank_env.sh', '/var/tmp/hpcfabric-validate/affinity', '--rail', '1',
                           '/usr/bin/env', 'UCX_NET_DEVICES=mlx5_1:1', '/venv/bin/python',
                           '/opt/hpcfabric/bench/allreduce.py', '--device', 'cuda',
                           '--json', '/var/tmp/hpcfabric-validate/pair-rail1.json']
    assert not any(arg in ('--host', '-np') or 'rail0' in arg for arg in argv)


def test_an_unknown_launcher_is_refused(fixture_path, fixture_text):
    with pytest.raises(ValueError, match='^validate_launcher must be mpirun or slurm'):
        round_launches(RUNS, roce_nodes(fixture_path, fixture_text), settings(tool='mpi', launcher='pbs'))


def lab_nodes():
    def node(host):
        return {'fabric_network_rails': RAILS,
                'fabric_network_interfaces': [{'name': 'fab0', 'address': '10.152.0.%d/22' % host, 'rail': 0},
                                              {'name': 'fab1', 'address': '10.152.4.%d/22' % host, 'rail': 1}]}
    return build_model({'gpu01': node(1), 'gpu02': node(2)}, ['gpu01', 'gpu02'])['nodes']


def test_a_fabric_without_rdma_ports_runs_mpi_whatever_perftest_says():
    launch = round_launches([{'hosts': ['gpu02', 'gpu01'], 'rail': 1, 'net_devices': 'fab1'}], lab_nodes(),
                            settings(device='cpu'))
    assert launch['runs'][0]['tool'] == 'mpi' and list(launch['clients']) == ['gpu02']


def test_asking_for_perftest_names_what_each_node_lacks(fixture_path, fixture_text):
    assert perftest_problems(['gpu01', 'gpu02'], roce_nodes(fixture_path, fixture_text),
                             {'gpu01': PERFTEST, 'gpu02': PERFTEST}) == []
    assert perftest_problems(['gpu01', 'gpu02'], lab_nodes(), {'gpu01': PERFTEST}) == [
        'gpu01: validate_isolation_tool=perftest, but no RDMA port on rail 0 (fab0); no RDMA port on rail 1 (fab1)',
        'gpu02: validate_isolation_tool=perftest, but no RDMA port on rail 0 (fab0); no ib_write_bw; no RDMA port on '
        'rail 1 (fab1)']
    with pytest.raises(ValueError, match='^validate_isolation_tool=perftest, but gpu02: no ib_write_bw$'):
        round_launches(RUNS, roce_nodes(fixture_path, fixture_text),
                       settings(tool='perftest', perftest={'gpu01': PERFTEST}))


@pytest.mark.parametrize('args, message', [
    ((None, {}, settings()), '^runs must be'),
    ((RUNS, [], settings()), '^nodes must be'),
    ((RUNS, {}, settings(tool='iperf')), '^validate_isolation_tool must be one of auto, mpi, perftest'),
    ((RUNS, {}, settings()), '^the cluster model has no node gpu01$'),
])
def test_bad_input_is_refused(args, message):
    with pytest.raises(ValueError, match=message):
        round_launches(*args)
