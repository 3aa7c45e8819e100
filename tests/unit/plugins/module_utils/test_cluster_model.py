# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The cluster model on injected facts: RDMA ports from recorded sysfs trees (tests/unit/fixtures/sysfs), GPUs
from recorded ``nvidia-smi topo -m`` output (tests/unit/fixtures/nvidia-smi-topo), the lab's plain veth fabric."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.hpcfabric.cluster.plugins.module_utils.cluster_model import DEFAULTS, build_model
from ansible_collections.hpcfabric.cluster.plugins.module_utils.ib_sysfs import class_dir, read_devices
from ansible_collections.hpcfabric.cluster.plugins.module_utils.ibstat import summarize
from ansible_collections.hpcfabric.cluster.plugins.module_utils.roce_host import plan_rdma_cm
from ansible_collections.hpcfabric.cluster.plugins.module_utils.topology import parse_topology

ROOT = Path(__file__).resolve().parents[4]
RAILS = [{'name': 'rail0', 'subnet': '10.152.0.0/22'}, {'name': 'rail1', 'subnet': '10.152.4.0/22'}]


def ib_facts(fixture_path, tree):
    return summarize(read_devices(class_dir(str(fixture_path('sysfs', tree))))[0], 'sysfs')


def gpu_facts(fixture_text, name):
    return parse_topology(fixture_text('nvidia-smi-topo', name))[0]


def pod_node(fixture_path, host=12, **extra):
    """A RoCE node: net1/net2 on mlx5_0/mlx5_1 of the recorded pod tree (RoCE v2 IPv4 GID 7 on both)."""
    hv = {'fabric_network_rails': RAILS,
          'fabric_network_interfaces': [{'name': 'net1', 'address': '10.152.0.%d/22' % host, 'rail': 0},
                                        {'name': 'net2', 'address': '10.152.4.%d/22' % host, 'rail': 1}],
          'ansible_facts': {'ib': ib_facts(fixture_path, 'roce_gid7_pod')}}
    hv.update(extra)
    return hv


def test_roce_node_job_environment_names_rdma_ports_gid_and_traffic_class(fixture_path):
    model = build_model({'gpu01': pod_node(fixture_path)}, ['gpu01'])
    assert model['problems'] == []
    env = model['nodes']['gpu01']['job_env']
    assert env['UCX_NET_DEVICES'] == 'mlx5_0:1,mlx5_1:1'
    assert env['NCCL_IB_HCA'] == '=mlx5_0:1,mlx5_1:1'
    assert env['UCX_IB_GID_INDEX'] == env['NCCL_IB_GID_INDEX'] == '7'
    assert env['UCX_IB_TRAFFIC_CLASS'] == env['NCCL_IB_TC'] == '106'
    assert env['NCCL_SOCKET_IFNAME'] == '=net1,net2'
    assert env['CUDA_DEVICE_ORDER'] == 'PCI_BUS_ID'
    assert [p['rail'] for p in model['nodes']['gpu01']['rdma_ports']] == [0, 1]


def test_traffic_class_follows_the_policy(fixture_path):
    node = pod_node(fixture_path, roce_qos_policy={'roce': {'dscp': 24, 'priority': 3}})
    env = build_model({'gpu01': node}, ['gpu01'])['nodes']['gpu01']['job_env']
    assert env['UCX_IB_TRAFFIC_CLASS'] == env['NCCL_IB_TC'] == str(24 << 2 | 2)


@pytest.mark.parametrize('dscp, priority', [(26, 3), (24, 3), (34, 3)])
def test_jobs_carry_the_tos_the_roce_qos_role_writes_for_rdma_cm(fixture_path, tmp_path, dscp, priority):
    # one policy, two callers: the model's job environment and the node's RDMA-CM default ToS (roce_host)
    node = pod_node(fixture_path, roce_qos_policy={'roce': {'dscp': dscp, 'priority': priority}})
    model = build_model({'gpu01': node}, ['gpu01'])['nodes']['gpu01']
    (tmp_path / 'rdma_cm').mkdir()
    actions, _changes = plan_rdma_cm(str(tmp_path), {'ibdev': 'mlx5_0', 'port': 1}, model['roce_policy'])
    written = dict((action[1].rsplit('/', 1)[-1], action[2]) for action in actions if action[0] == 'write')
    assert written['default_roce_tos'] == model['job_env']['NCCL_IB_TC'] == model['job_env']['UCX_IB_TRAFFIC_CLASS']
    assert model['roce']['traffic_class'] == int(written['default_roce_tos']) == dscp << 2 | 2


def test_bond_port_gid_index_is_the_one_on_its_own_netdev(fixture_path):
    node = {'fabric_network_rails': [{'name': 'rail0', 'subnet': '30.153.10.0/24'}],
            'fabric_network_interfaces': [{'name': 'bond1', 'address': '30.153.10.175/24'}],
            'ansible_facts': {'ib': ib_facts(fixture_path, 'roce_gid3_bond')}}
    env = build_model({'n1': node}, ['n1'])['nodes']['n1']['job_env']
    assert env['UCX_NET_DEVICES'] == 'mlx5_bond_0:1'
    assert env['UCX_IB_GID_INDEX'] == '5'


def test_lab_node_without_rdma_names_its_netdev():
    node = {'fabric_network_rails': [{'name': 'rail0', 'subnet': '10.78.0.0/24'}],
            'fabric_network_interfaces': [{'name': 'fab0', 'address': '10.78.0.1/24', 'rail': 0}],
            'mpi_ucx_tls': ['tcp', 'self', 'sm'], 'mpi_hostfile_slots': 1,
            'ansible_facts': {'ib': {'devices': {}}}}
    model = build_model({'node01': node}, ['node01'])
    env = model['nodes']['node01']['job_env']
    assert env['UCX_NET_DEVICES'] == 'fab0'
    assert env['UCX_TLS'] == 'tcp,self,sm'
    assert not set(env) & {'NCCL_IB_HCA', 'UCX_IB_GID_INDEX', 'UCX_IB_TRAFFIC_CLASS', 'NCCL_IB_TC'}
    assert model['hostfile'] == [{'host': 'node01', 'name': 'node01-rail0', 'slots': 1}]


def test_interface_given_by_mac_is_resolved_from_network_facts(fixture_path):
    node = pod_node(fixture_path)
    node['fabric_network_interfaces'][1] = {'mac': '0C:42:A1:00:00:02', 'address': '10.152.4.12/22', 'rail': 1}
    node['ansible_facts'].update({'interfaces': ['lo', 'net1', 'net2'],
                                  'net2': {'macaddress': '0c:42:a1:00:00:02'}, 'net1': {'macaddress': '0c:42:a1:00:00:01'}})
    node_model = build_model({'gpu01': node}, ['gpu01'])['nodes']['gpu01']
    assert [i['name'] for i in node_model['interfaces']] == ['net1', 'net2']
    assert node_model['job_env']['UCX_NET_DEVICES'] == 'mlx5_0:1,mlx5_1:1'


def test_interface_given_by_mac_without_facts_is_not_guessed(fixture_path):
    node = pod_node(fixture_path)
    node['fabric_network_interfaces'][1] = {'mac': '0c:42:a1:00:00:02', 'address': '10.152.4.12/22', 'rail': 1}
    node_model = build_model({'gpu01': node}, ['gpu01'])['nodes']['gpu01']
    assert node_model['interfaces'][1]['name'] is None
    assert node_model['job_env']['UCX_NET_DEVICES'] == 'mlx5_0:1'
    assert node_model['fabric_names'] == ['gpu01-rail0', 'gpu01-rail1']


def test_slots_are_the_gpu_count_gathered_on_the_node(fixture_path, fixture_text):
    node = pod_node(fixture_path)
    node['ansible_facts']['gpu_topology'] = gpu_facts(fixture_text, 'dgx-a100-8gpu-nv12-nic-legend.txt')
    model = build_model({'gpu01': node, 'gpu02': pod_node(fixture_path, 13, mpi_hostfile_slots=4)}, ['gpu01', 'gpu02'])
    assert [(e['name'], e['slots']) for e in model['hostfile']] == [('gpu01-rail0', 8), ('gpu02-rail0', 4)]
    assert model['nodes']['gpu01']['slots_from'] == 'gpu_count'
    assert model['nodes']['gpu02']['slots_from'] == 'mpi_hostfile_slots'


def test_each_rail_runs_on_its_own_gpu_nearest_its_nic(fixture_path, fixture_text):
    # DGX A100: GPU0 and GPU1 both sit under mlx5_0 and mlx5_1 (NUMA node 3); the pod's net1 is mlx5_0, net2 mlx5_1
    node = pod_node(fixture_path)
    node['ansible_facts']['gpu_topology'] = gpu_facts(fixture_text, 'dgx-a100-8gpu-nv12-nic-legend.txt')
    model = build_model({'gpu01': node}, ['gpu01'])
    assert model['nodes']['gpu01']['rails'] == [
        {'rail': 0, 'interface': 'net1', 'net_device': 'mlx5_0:1', 'local_rank': 0, 'numa_node': 3},
        {'rail': 1, 'interface': 'net2', 'net_device': 'mlx5_1:1', 'local_rank': 1, 'numa_node': 3}]


@pytest.mark.parametrize('gpus, expected', [
    # GPU0 next to mlx5_1 (rail 1), GPU1 next to mlx5_2 (no rail): rail 1 keeps its GPU, rail 0 (near none) takes GPU1
    (2, [(0, 1, 0), (1, 0, 0)]),
    # one GPU for two rails: both run on it
    (1, [(0, 0, 0), (1, 0, 0)]),
])
def test_a_rail_near_no_gpu_takes_a_free_one_and_shares_only_when_none_is_free(fixture_path, fixture_text, gpus, expected):
    # H20: one NIC per GPU, mlx5_1 next to GPU0 ... mlx5_8 next to GPU7; the pod's net1 is mlx5_0, net2 mlx5_1
    node = pod_node(fixture_path)
    node['ansible_facts']['gpu_topology'] = gpu_facts(fixture_text, 'h20-8gpu-nv18-nic-legend.txt')
    node['ansible_facts']['gpu_topology']['gpus'] = node['ansible_facts']['gpu_topology']['gpus'][:gpus]
    rails = build_model({'gpu01': node}, ['gpu01'])['nodes']['gpu01']['rails']
    assert [(rail['rail'], rail['local_rank'], rail['numa_node']) for rail in rails] == expected


def test_rails_without_rdma_or_gpus_pin_the_netdev_and_no_gpu():
    hv = {'fabric_network_rails': RAILS,
          'fabric_network_interfaces': [{'name': 'fab0', 'address': '10.152.0.1/22', 'rail': 0},
                                        {'name': 'fab1', 'address': '10.152.4.1/22', 'rail': 1}]}
    rails = build_model({'lab1': hv}, ['lab1'])['nodes']['lab1']['rails']
    assert rails == [{'rail': 0, 'interface': 'fab0', 'net_device': 'fab0', 'local_rank': None, 'numa_node': None},
                     {'rail': 1, 'interface': 'fab1', 'net_device': 'fab1', 'local_rank': None, 'numa_node': None}]


def eight_rail_h20_node(fixture_text):
    """An HGX H20 node as recorded (GPU i next to mlx5_<i+1>, NUMA 0 for GPU0-3, 1 for GPU4-7) with eight RoCE ports
    Active, cabled so that rail r is the NIC of GPU 7-r (the ports' facts are written here: no recorded sysfs tree has
    eight ports)."""
    rails = [{'name': 'rail%d' % r, 'subnet': '10.%d.0.0/24' % (100 + r)} for r in range(8)]
    ports = dict(('mlx5_%d' % n, {'ports': {'1': {'state': 'Active', 'netdev': 'eth%d' % n, 'link_layer': 'Ethernet',
                                                  'rate_gbps': 400, 'roce_v2_gid_index': 3}}}) for n in range(1, 9))
    return {'fabric_network_rails': rails,
            'fabric_network_interfaces': [{'name': 'eth%d' % (8 - r), 'address': '10.%d.0.11/24' % (100 + r), 'rail': r}
                                          for r in range(8)],
            'ansible_facts': {'ib': {'devices': ports},
                              'gpu_topology': gpu_facts(fixture_text, 'h20-8gpu-nv18-nic-legend.txt')}}


def test_each_rank_of_an_8_gpu_node_drives_its_gpu_its_nearest_nic_and_numa_node(fixture_text):
    node = build_model({'gpu01': eight_rail_h20_node(fixture_text)}, ['gpu01'])['nodes']['gpu01']
    assert [(rank['local_rank'], rank['gpu_index'], rank['net_devices'], rank['rail'], rank['numa_node'])
            for rank in node['ranks']] == [(i, i, 'mlx5_%d:1' % (i + 1), 7 - i, 0 if i < 4 else 1) for i in range(8)]
    # the rail runs of the isolation pair the same GPU with the same rail
    assert [(rail['rail'], rail['local_rank']) for rail in node['rails']] == [(r, 7 - r) for r in range(8)]


def test_a_rank_whose_rail_port_is_down_falls_back_to_the_active_ports_nearest_its_gpu(fixture_text):
    hostvars = eight_rail_h20_node(fixture_text)
    hostvars['ansible_facts']['ib']['devices']['mlx5_1']['ports']['1']['state'] = 'Down'
    ranks = build_model({'gpu01': hostvars}, ['gpu01'])['nodes']['gpu01']['ranks']
    # GPU0's own NIC is down and no other is next to it: its rank is left on the job environment's ports
    assert (ranks[0]['net_devices'], ranks[0]['rail']) == (None, None)
    assert ranks[1]['net_devices'] == 'mlx5_2:1'


def test_gpus_that_share_their_nics_drive_the_rails_their_gpu_was_chosen_for(fixture_path, fixture_text):
    # DGX A100: GPU0 and GPU1 both sit under mlx5_0 and mlx5_1; the pod's net1 (rail 0) is mlx5_0, net2 (rail 1) mlx5_1
    node = pod_node(fixture_path)
    node['ansible_facts']['gpu_topology'] = gpu_facts(fixture_text, 'dgx-a100-8gpu-nv12-nic-legend.txt')
    ranks = build_model({'gpu01': node}, ['gpu01'])['nodes']['gpu01']['ranks']
    assert [(rank['net_devices'], rank['rail']) for rank in ranks[:3]] == [('mlx5_0:1', 0), ('mlx5_1:1', 1), (None, None)]


@pytest.mark.parametrize('slots, expected', [
    (1, [('fab0,fab1', None)]),
    (2, [('fab0', 0), ('fab1', 1)]),
    (3, [('fab0', 0), ('fab1', 1), ('fab0', 0)]),
])
def test_without_gpus_the_slots_share_the_rails_round_robin(slots, expected):
    hv = {'fabric_network_rails': RAILS, 'mpi_hostfile_slots': slots,
          'fabric_network_interfaces': [{'name': 'fab0', 'address': '10.152.0.1/22', 'rail': 0},
                                        {'name': 'fab1', 'address': '10.152.4.1/22', 'rail': 1}]}
    ranks = build_model({'lab1': hv}, ['lab1'])['nodes']['lab1']['ranks']
    assert [(rank['net_devices'], rank['rail']) for rank in ranks] == expected
    assert all(rank['gpu_index'] is None and rank['numa_node'] is None for rank in ranks)


def test_slots_unknown_without_gpu_facts_or_setting(fixture_path):
    model = build_model({'gpu01': pod_node(fixture_path)}, ['gpu01'])
    assert model['hostfile'][0]['slots'] is None and model['nodes']['gpu01']['slots_from'] is None


def test_cuda_aware_mpi_needs_cuda_transports_in_ucx_tls(fixture_path):
    model = build_model({'gpu01': pod_node(fixture_path, mpi_cuda=True, mpi_ucx_tls=['rc', 'sm'])}, ['gpu01'])
    assert model['problems'] == ['mpi_ucx_tls on gpu01: rc,sm lacks cuda_copy, cuda_ipc; CUDA buffers would be '
                                 'staged through host memory or fail']
    assert model['nodes'] == {} and model['hostfile'] == []
    ok = build_model({'gpu01': pod_node(fixture_path, mpi_cuda=True, mpi_ucx_tls=['rc', 'sm', 'cuda_copy', 'cuda_ipc'])},
                     ['gpu01'])
    assert ok['nodes']['gpu01']['job_env']['UCX_TLS'] == 'rc,sm,cuda_copy,cuda_ipc'


@pytest.mark.parametrize('extra, message', [
    ({'A B': '1'}, "mpi_env_extra on gpu01: 'A B' is not an environment variable name"),
    ({'X': 'a;b'}, 'mpi_env_extra.X on gpu01: the value may not hold a line break, control character or ";"'),
    ({'X': 'a\nUCX_TLS=tcp'}, 'mpi_env_extra.X on gpu01: the value may not hold a line break, control character or ";"'),
])
def test_env_extra_that_would_break_a_launch_path_is_refused(fixture_path, extra, message):
    model = build_model({'gpu01': pod_node(fixture_path, mpi_env_extra=extra)}, ['gpu01'])
    assert len(model['problems']) == 1 and model['problems'][0].startswith(message)


def test_env_extra_is_the_sites_last_word(fixture_path):
    env = build_model({'gpu01': pod_node(fixture_path, mpi_env_extra={'NCCL_IB_TC': '104', 'UCX_LOG_LEVEL': 'info'})},
                      ['gpu01'])['nodes']['gpu01']['job_env']
    assert env['NCCL_IB_TC'] == '104' and env['UCX_IB_TRAFFIC_CLASS'] == '106' and env['UCX_LOG_LEVEL'] == 'info'


def test_ports_without_a_common_gid_index_leave_it_to_ucx_with_a_warning(fixture_path):
    node = pod_node(fixture_path)
    node['ansible_facts']['ib']['devices']['mlx5_1']['ports']['1']['roce_v2_gid_index'] = 3
    model = build_model({'gpu01': node}, ['gpu01'])
    assert 'UCX_IB_GID_INDEX' not in model['nodes']['gpu01']['job_env']
    assert model['warnings'] == ['gpu01: its RoCE ports have no common RoCE v2 IPv4 GID index (mlx5_0:1=7, '
                                 'mlx5_1:1=3): UCX_IB_GID_INDEX is left to UCX and NCCL']


def test_infiniband_ports_get_no_roce_settings(fixture_path):
    node = {'fabric_network_rails': [{'name': 'ib', 'subnet': '10.20.0.0/24'}],
            'fabric_network_interfaces': [{'name': 'ibp204s0', 'address': '10.20.0.5/24'}],
            'ansible_facts': {'ib': ib_facts(fixture_path, 'ib_mixed')}}
    env = build_model({'n1': node}, ['n1'])['nodes']['n1']['job_env']
    assert env['UCX_NET_DEVICES'] == 'mlx5_10:1'
    assert 'UCX_IB_TRAFFIC_CLASS' not in env and 'UCX_IB_GID_INDEX' not in env


def test_nodes_with_other_values_are_warned_about_once_per_variable(fixture_path):
    other, third = pod_node(fixture_path, 13), pod_node(fixture_path, 14)
    other['ansible_facts'] = third['ansible_facts'] = {'ib': {'devices': {}}}
    model = build_model({'gpu01': pod_node(fixture_path), 'gpu02': other, 'gpu03': third},
                        ['gpu01', 'gpu02', 'gpu03'])
    assert 'UCX_NET_DEVICES differs between gpu01 and 2 other node(s) (gpu02, gpu03); mpirun exports the launching ' \
           "node's value to every rank" in model['warnings']


def test_a_host_with_rails_of_its_own_is_refused(fixture_path):
    other = pod_node(fixture_path, 13, fabric_network_rails=RAILS[:1])
    model = build_model({'gpu01': pod_node(fixture_path), 'gpu02': other}, ['gpu01', 'gpu02'])
    assert model['problems'][0] == ("fabric_network_rails on gpu02: differs from gpu01's; the rails are one list "
                                    'for the whole cluster (set them for the group)')


def test_model_defaults_are_the_roles_documented_defaults():
    """The model reads inventory values with the defaults the declaring roles document: one answer for both."""
    specs = {}
    for role in ('fabric_network', 'mpi', 'mpi_hostfile', 'roce_qos', 'ssh_trust'):
        spec = yaml.safe_load((ROOT / 'roles' / role / 'meta' / 'argument_specs.yml').read_text())
        specs.update(spec['argument_specs']['main']['options'])
    for name, default in DEFAULTS.items():
        documented = specs[name].get('default')
        assert documented == default or (documented is None and default in ([], {})), name


def test_the_roles_list_of_inputs_is_the_models():
    names = yaml.safe_load((ROOT / 'roles' / 'cluster_model' / 'vars' / 'main.yml').read_text())['__cluster_model_inputs']
    assert names == list(DEFAULTS)


def test_inputs_set_where_a_role_runs_but_not_on_the_host_are_named():
    from ansible_collections.hpcfabric.cluster.plugins.module_utils.cluster_model import overridden_inputs
    host = {'mpi_ucx_tls': ['tcp', 'self', 'sm'], 'fabric_network_mtu': 9000}
    # a role parameter that differs; role defaults equal to the model's; unset values
    effective = {'mpi_ucx_tls': ['tcp', 'self', 'sm', 'cuda_copy', 'cuda_ipc'], 'mpi_cuda': False, 'roce_qos_policy': {},
                 'fabric_network_mtu': 9000, 'mpi_hostfile_slots': None}
    assert overridden_inputs(effective, host) == ['mpi_ucx_tls']
    assert overridden_inputs(dict(effective, mpi_ucx_tls=['tcp', 'self', 'sm']), host) == []
    assert overridden_inputs({'mpi_cuda': True}, {}) == ['mpi_cuda']


def test_the_launcher_is_one_account_and_the_first_nodes_hostfile(fixture_path):
    nodes = {'gpu01': pod_node(fixture_path, mpi_hostfile_path='/etc/mpi/hosts'), 'gpu02': pod_node(fixture_path, 13)}
    model = build_model(nodes, ['gpu01', 'gpu02'])
    assert model['launcher'] == {'user': 'mpiuser', 'hostfile': '/etc/mpi/hosts'}
    nodes['gpu02']['ssh_trust_user'] = 'train'
    model = build_model(nodes, ['gpu01', 'gpu02'])
    assert model['problems'] == ["ssh_trust_user on gpu02: differs from gpu01's; mpirun starts every rank as one "
                                 'account, the same on every node (set it for the group)']


def test_each_node_carries_its_whole_resolved_roce_policy(fixture_path):
    model = build_model({'gpu01': pod_node(fixture_path, roce_qos_policy={'roce': {'dscp': 24, 'priority': 3}})},
                        ['gpu01'])
    policy = model['nodes']['gpu01']['roce_policy']
    assert policy['roce'] == {'dscp': 24, 'priority': 3} and policy['pfc'] == {'priorities': [3]}
    assert model['nodes']['gpu01']['roce']['traffic_class'] == 24 << 2 | 2
