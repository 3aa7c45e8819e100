# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""validate.preflight: what a node lacks, on facts the real parsers build from recorded outputs; interface states
from the setup module's facts; every host's problems in one list."""

from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.ib_sysfs import class_dir, read_devices
from ansible_collections.hpcfabric.cluster.plugins.module_utils.ibstat import parse_ibstat, summarize
from ansible_collections.hpcfabric.cluster.plugins.module_utils import nvidia_driver
from ansible_collections.hpcfabric.cluster.plugins.module_utils.mpi_info import mpi_facts
from ansible_collections.hpcfabric.cluster.plugins.module_utils.topology import parse_topology
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.preflight import (
    host_problems, interface_states, preflight_problems,
)


# preflight_problems, on facts the real parsers build from the recorded outputs

@pytest.fixture
def facts_of(fixture_text, fixture_path):
    def build(topo='dgx-a100-8gpu-nv12-nic-legend.txt', sysfs='roce_gid7_pod', ibstat=None,
              ompi='openmpi-docs-cuda-aware-check.txt', ucx=('ucx-1.16.0-cuda-v.txt', 'ucx-1.16.0-cuda-d.txt')):
        if ibstat:
            ib = summarize(parse_ibstat(fixture_text('ibstat', ibstat))[0], 'ibstat')
        else:
            ib = summarize(read_devices(class_dir(str(fixture_path('sysfs', sysfs))))[0], 'sysfs')
        mpi = mpi_facts(fixture_text('ompi_info', ompi),
                        fixture_text('ucx_info', ucx[0]) if ucx else None,
                        fixture_text('ucx_info', ucx[1]) if ucx else None)[0]
        return {
            'gpu_topology': parse_topology(fixture_text('nvidia-smi-topo', topo))[0],
            'ib': ib,
            'mpi': mpi,
            'interfaces': {'net1': {'mtu': 9000, 'operstate': 'up'}, 'net2': {'mtu': 9000, 'operstate': 'up'}},
            'modules': ['mlx5_ib', 'nvidia', 'nvidia_peermem'],
            'kernel': '6.8.0-45-generic',
            'nvidia_open': True,
        }
    return build


CUDA_ROCE = {'device': 'cuda', 'gpu_count': 8, 'rdma': True, 'port_rate_gbps': None, 'link_layer': 'Ethernet',
             'mtu': 9000, 'interfaces': ['net1', 'net2']}


def test_preflight_healthy_node(facts_of):
    assert preflight_problems(facts_of(), CUDA_ROCE) == []


def test_preflight_gpu_count(facts_of):
    facts = facts_of(topo='gtx10-7gpu-pix-phb-spaces.txt')
    assert preflight_problems(facts, CUDA_ROCE) == ['GPU count: expected 8, seen 7']
    assert preflight_problems(facts, dict(CUDA_ROCE, gpu_count=None)) == []
    facts['gpu_topology'] = dict(facts['gpu_topology'], gpu_count=0)
    assert preflight_problems(facts, dict(CUDA_ROCE, gpu_count=None)) == ['GPU count: expected at least 1, seen 0']


def test_preflight_slots_must_match_the_gpu_count(facts_of):
    facts = facts_of()
    assert preflight_problems(facts, dict(CUDA_ROCE, slots=8)) == []
    assert preflight_problems(facts, dict(CUDA_ROCE, slots=1)) == [
        'hostfile slots: 1, but the node has 8 GPUs (one rank per GPU: set mpi_hostfile_slots to 8 or leave it unset)']
    # host buffers: ranks need not match GPUs
    assert preflight_problems(facts, dict(CUDA_ROCE, device='cpu', rdma=False, slots=1)) == []


def test_preflight_ports_down_rate_and_link_layer(facts_of):
    facts = facts_of(sysfs='ib_mixed')
    expect = dict(CUDA_ROCE, port_rate_gbps=200, link_layer='InfiniBand', interfaces=[])
    assert preflight_problems(facts, expect) == [
        'mlx5_10 port 1: state Down, expected Active',
        'mlx5_2 port 1: rate 2.5 Gb/s, expected 200',
        'mlx5_2 port 1: link layer Ethernet, expected InfiniBand',
        'mlx5_2 port 1: no RoCE v2 GID (no IPv4 address on ens13?)',
    ]


def test_preflight_ibstat_rates(facts_of):
    facts = facts_of(ibstat='cx6dx_eth_100_two_cas.txt')
    expect = dict(CUDA_ROCE, port_rate_gbps=400, interfaces=[])
    assert preflight_problems(facts, expect) == [
        'mlx5_0 port 1: rate 100 Gb/s, expected 400',
        'mlx5_0 port 1: RoCE v2 GID unknown (ib facts from ibstat, which shows no GIDs; sysfs is needed)',
        'mlx5_1 port 1: rate 100 Gb/s, expected 400',
        'mlx5_1 port 1: RoCE v2 GID unknown (ib facts from ibstat, which shows no GIDs; sysfs is needed)',
    ]


def test_preflight_ib_ports_from_ibstat(facts_of):
    facts = facts_of(ibstat='h100_ndr_mixed_tabs.txt')
    problems = preflight_problems(facts, dict(CUDA_ROCE, link_layer='InfiniBand', port_rate_gbps=400, interfaces=[]))
    assert 'mlx5_2 port 1: state Down, expected Active' in problems
    assert 'mlx5_1 port 1: rate 100 Gb/s, expected 400' in problems
    assert 'mlx5_1 port 1: link layer Ethernet, expected InfiniBand' in problems
    assert 'mlx5_0 port 1: rate 400 Gb/s, expected 400' not in problems


def test_preflight_rate_unknown(facts_of):
    problems = preflight_problems(facts_of(), dict(CUDA_ROCE, port_rate_gbps=400, interfaces=[]))
    assert problems == ['mlx5_0 port 1: rate unknown, expected 400', 'mlx5_1 port 1: rate unknown, expected 400']


def test_preflight_interfaces(facts_of):
    facts = facts_of()
    facts['interfaces'] = {'net1': {'mtu': 1500, 'operstate': 'up'}, 'net2': {'mtu': 9000, 'operstate': 'down'},
                           'net3': {'mtu': None, 'operstate': None}}
    assert preflight_problems(facts, dict(CUDA_ROCE, interfaces=['net1', 'net2', 'net3', 'fab0'])) == [
        'net1: MTU 1500, expected 9000', 'net2: state down, expected up', 'net3: not present', 'fab0: not present']


def test_preflight_interfaces_are_checked_on_cpu_nodes_too():
    facts = {'interfaces': {'fab0': {'mtu': 1500, 'operstate': 'up'}}}
    expect = {'device': 'cpu', 'gpu_count': None, 'rdma': False, 'port_rate_gbps': None, 'link_layer': None,
              'mtu': 9000, 'interfaces': ['fab0']}
    assert preflight_problems(facts, expect) == ['fab0: MTU 1500, expected 9000']
    assert preflight_problems(facts, dict(expect, mtu=None)) == []


def test_preflight_mtu_per_interface_as_the_cluster_model_gives_it():
    facts = {'interfaces': {'fab0': {'mtu': 1500, 'operstate': 'up'}, 'fab1': {'mtu': 4200, 'operstate': 'up'}}}
    expect = {'device': 'cpu', 'gpu_count': None, 'rdma': False, 'port_rate_gbps': None, 'link_layer': None,
              'mtu': {'fab0': 1500, 'fab1': 9000}, 'interfaces': ['fab0', 'fab1']}
    assert preflight_problems(facts, expect) == ['fab1: MTU 4200, expected 9000']


def test_preflight_mpi_not_cuda_aware(facts_of):
    facts = facts_of(ompi='debian12-openmpi-4.1.4-parsable-all.txt',
                     ucx=('debian12-ucx-1.13.1-v.txt', 'debian12-ucx-1.13.1-d.txt'))
    assert preflight_problems(facts, CUDA_ROCE) == [
        'MPI: not CUDA-aware (mpi_built_with_cuda_support false)',
        'UCX: no cuda transports (cuda_copy, cuda_ipc) in [cma, posix, self, sysv, tcp]',
    ]


def test_preflight_mpi_unknown_and_no_ucx(facts_of):
    facts = facts_of(ompi='openmpi-5.0.2-parsable-header.txt', ucx=None)
    assert preflight_problems(facts, CUDA_ROCE) == [
        'MPI: CUDA support unknown (no mpi_built_with_cuda_support in ompi_info), expected CUDA-aware',
        'UCX: not found (no ucx_info output), expected UCX with cuda transports (cuda_copy, cuda_ipc)',
    ]


def test_preflight_gpudirect(facts_of):
    facts = facts_of()
    facts['modules'] = ['mlx5_ib', 'nvidia']
    assert preflight_problems(facts, CUDA_ROCE) == [], 'open modules on 6.8 give DMA-BUF'
    facts['nvidia_open'] = False
    assert preflight_problems(facts, CUDA_ROCE) == [
        'GPUDirect RDMA: neither nvidia_peermem loaded nor DMA-BUF (open kernel modules and kernel ≥ 5.12); '
        'seen proprietary kernel modules, kernel 6.8.0-45-generic']
    facts.update(nvidia_open=True, kernel='5.4.0-150-generic')
    assert preflight_problems(facts, CUDA_ROCE) == [
        'GPUDirect RDMA: neither nvidia_peermem loaded nor DMA-BUF (open kernel modules and kernel ≥ 5.12); '
        'seen open kernel modules, kernel 5.4.0-150-generic']
    facts.update(nvidia_open=None, kernel=None)
    assert preflight_problems(facts, CUDA_ROCE) == [
        'GPUDirect RDMA: neither nvidia_peermem loaded nor DMA-BUF (open kernel modules and kernel ≥ 5.12); '
        'seen NVIDIA module flavour unknown, kernel unknown']
    assert preflight_problems(facts, dict(CUDA_ROCE, rdma=False, interfaces=[])) == [], 'no RDMA, no GPUDirect check'


@pytest.mark.parametrize('nvidia_open, kernel', [
    (True, '6.8.0-45-generic'), (True, '5.12.0-1-generic'), (True, '5.11.22-200.fc33.x86_64'),
    (True, '4.18.0-553.el8_10.x86_64'), (False, '6.8.0-45-generic'), (None, '6.8.0-45-generic'), (True, None),
])
def test_preflight_passes_dmabuf_where_the_nvidia_driver_role_sets_it_up(facts_of, nvidia_open, kernel):
    # without nvidia_peermem loaded, GPUDirect passes exactly where the role's auto choice on an inbox rdma-core
    # node (no ofed_info) is dmabuf: both read nvidia_driver.dmabuf_capable
    facts = dict(facts_of(), modules=['mlx5_ib', 'nvidia'], nvidia_open=nvidia_open, kernel=kernel)
    role = nvidia_driver.gpudirect(kernel, nvidia_open, False, 'auto')
    gpudirect = [problem for problem in preflight_problems(facts, CUDA_ROCE) if problem.startswith('GPUDirect')]
    assert (role['mode'] == 'dmabuf') is role['dmabuf_capable'] is (gpudirect == [])


def test_preflight_dmabuf_needs_a_recent_ucx(facts_of):
    facts = facts_of(ucx=('debian12-ucx-1.13.1-v.txt', 'ucx-1.16.0-cuda-d.txt'))
    facts['modules'] = []
    assert preflight_problems(facts, CUDA_ROCE) == [
        'GPUDirect RDMA: DMA-BUF needs UCX ≥ 1.14, seen UCX 1.13.1 (or load nvidia_peermem)']


def test_preflight_missing_fact_sets(facts_of):
    facts = dict(facts_of(), gpu_topology=None, ib=None, mpi=None, interfaces=None)
    assert preflight_problems(facts, CUDA_ROCE) == [
        'GPU topology facts missing (gpu_topology_facts did not run or failed)',
        'ib facts missing (ib_facts did not run)',
        'interface facts missing',
        'mpi facts missing (mpi_facts did not run)',
    ]
    facts['ib'] = {'source': 'sysfs', 'devices': {}}
    assert 'RDMA: no RDMA device (ib facts list no CA)' in preflight_problems(facts, CUDA_ROCE)


def test_preflight_cpu_without_rdma_checks_only_interfaces():
    facts = {'gpu_topology': None, 'ib': None, 'mpi': None, 'interfaces': {}, 'modules': [], 'kernel': None,
             'nvidia_open': None}
    expect = {'device': 'cpu', 'gpu_count': 8, 'rdma': False, 'port_rate_gbps': 400, 'link_layer': 'Ethernet',
              'mtu': 9000, 'interfaces': []}
    assert preflight_problems(facts, expect) == []


@pytest.mark.parametrize('facts, expect, message', [
    ([], {'device': 'cpu'}, 'facts must be a dict'),
    ({}, None, 'expectations must be a dict'),
    ({}, {'device': 'gpu'}, 'device must be cpu or cuda'),
    ({}, {'device': 'cpu', 'rdma': 'yes'}, 'rdma must be true or false'),
])
def test_preflight_rejects(facts, expect, message):
    with pytest.raises(ValueError, match=message):
        preflight_problems(facts, expect)


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
