# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The cluster-wide comparison of the hosts' and the switches' read-backs: DSCP to priority, lossless priorities, MTU."""
from __future__ import annotations
import copy
import json

from ansible_collections.hpcfabric.cluster.plugins.module_utils.fabric_qos import check_fabric
from ansible_collections.hpcfabric.cluster.plugins.module_utils.switch_qos_render import render


def host(mtu=9000, dscp2prio=None, pfc=None, roce=True):
    """A node's roce_qos_readback as the module returns it (JSON: string keys)."""
    nic = {'name': 'ens1f0np0', 'ibdev': 'mlx5_0' if roce else None, 'present': True, 'rdma_capable': roce, 'mtu': mtu}
    if roce:
        nic['qos'] = {'trust': 'dscp', 'dscp2prio': dscp2prio or {'26': [3], '48': [6]}, 'pfc': [3] if pfc is None else pfc}
    return {'roce_qos_readback': {'interfaces': [nic, {'name': 'eth9', 'present': False, 'mtu': None}]}}


def switch(platform='sonic', drift=None):
    """A switch's switch_qos_readback after the role applied the policy, through JSON as a fact cache keeps it."""
    ports = ['Ethernet0', 'Ethernet8'] if platform == 'sonic' else ['swp1', 'swp2']
    result = render(platform, {}, ports)
    running = copy.deepcopy(result['config_db'] if platform == 'sonic' else result['body'])
    if drift:
        drift(running)
    state = render(platform, {}, ports, running=running)['state']
    return {'switch_qos_readback': json.loads(json.dumps({'platform': platform, 'state': state}))}


def check(hosts, switches, **kwargs):
    hostvars = dict(hosts, **switches)
    return check_fabric(hostvars, list(hosts), list(switches), **kwargs)


def test_hosts_and_switches_that_agree():
    result = check({'node01': host(), 'node02': host()}, {'leaf01': switch('cumulus'), 'leaf02': switch()})
    assert result['problems'] == []
    assert result['summary'] == ('compared 2 RoCE NICs, 2 host interface MTUs and 4 ports of 2 switches '
                                 '(DSCP 26, 48 to priority, lossless priorities, MTU)')


def test_a_switch_that_maps_dscp_26_elsewhere_is_named_with_every_port():
    def drift(db):
        db['DSCP_TO_TC_MAP']['AZURE']['26'] = '1'
    result = check({'node01': host()}, {'leaf01': switch('cumulus'), 'leaf02': switch(drift=drift)})
    assert result['problems'] == [
        'DSCP 26 maps to different priorities: 3 on node01 mlx5_0/ens1f0np0, leaf01 swp1, leaf01 swp2; '
        '1 on leaf02 Ethernet0, leaf02 Ethernet8']


def test_a_host_that_pauses_another_priority_and_a_switch_port_without_pfc():
    def drift(db):
        db['PORT_QOS_MAP']['Ethernet8']['pfc_enable'] = ''
    result = check({'node01': host(), 'node02': host(pfc=[3, 4])}, {'leaf02': switch(drift=drift)})
    assert result['problems'] == ['lossless (PFC) priorities differ: 3 on node01 mlx5_0/ens1f0np0, leaf02 Ethernet0; '
                                  '3,4 on node02 mlx5_0/ens1f0np0; none on leaf02 Ethernet8']


def test_a_host_mapping_a_dscp_the_switches_do_not_is_named():
    result = check({'node01': host(dscp2prio={'26': [3]})}, {'leaf01': switch('cumulus')})
    assert result['problems'] == ['DSCP 48 maps to different priorities: 6 on leaf01 swp1, leaf01 swp2; '
                                  'none on node01 mlx5_0/ens1f0np0']


def test_the_switch_ports_must_carry_the_largest_host_frame():
    def small(db):
        db['interface']['swp2']['link']['mtu'] = 9000
    result = check({'node01': host(), 'node02': host(mtu=9000)}, {'leaf01': switch('cumulus', small)})
    assert result['problems'] == [
        'MTU: node02 mlx5_0/ens1f0np0 sends 9000-byte packets (9022-byte frames with Ethernet header, 802.1Q tag and FCS), '
        'more than leaf01 swp2 (MTU 9000) carry']
    assert check({'node01': host()}, {'leaf01': switch('cumulus', small)}, overhead=0)['problems'] == []


def test_lab_hosts_without_a_roce_nic_contribute_their_mtu_and_are_said():
    def small(db):
        db['PORT']['Ethernet0']['mtu'] = '9010'
    result = check({'node01': host(roce=False), 'node02': host(roce=False)}, {'switch01': switch(drift=small)})
    assert result['problems'] == [
        'MTU: node02 ens1f0np0 sends 9000-byte packets (9022-byte frames with Ethernet header, 802.1Q tag and FCS), '
        'more than switch01 Ethernet0 (MTU 9010) carry']
    assert result['summary'].endswith('; hosts without a RoCE NIC read back (their MTU only): node01, node02')


def test_what_was_not_read_back_in_this_run_is_left_out_and_said():
    result = check({'node01': {}, 'node02': host()}, {'leaf01': {}})
    assert result['problems'] == []
    assert result['summary'] == ('compared 1 RoCE NICs, 1 host interface MTUs and 0 ports of 0 switches '
                                 '(DSCP 26, 48 to priority, lossless priorities, MTU); '
                                 'not read back in this run: node01, leaf01')


def test_the_policy_decides_which_dscps_are_compared():
    moved = {'roce_qos_policy': {'roce': {'dscp': 24, 'priority': 4}, 'pfc': {'priorities': [4]},
                                 'ets': {'bandwidth_percent': [50, 0, 0, 0, 50, 0, 0, 0]}}}
    result = check({'node01': dict(host(), **moved), 'node02': host()}, {})
    assert '(DSCP 24, 26, 48 to priority' in result['summary']
    assert result['problems'] == []
    result = check({'node01': dict(host(dscp2prio={'24': [4], '48': [6]}), **moved), 'node02': host()}, {})
    assert result['problems'] == ['DSCP 24 maps to different priorities: 4 on node01 mlx5_0/ens1f0np0; none on node02 mlx5_0/ens1f0np0',
                                  'DSCP 26 maps to different priorities: 3 on node02 mlx5_0/ens1f0np0; none on node01 mlx5_0/ens1f0np0']


def test_a_thousand_hosts_are_checked_in_one_pass():
    hosts = dict(('node%04d' % index, host()) for index in range(1024))
    hosts['node0500'] = host(dscp2prio={'26': [1], '48': [6]})
    result = check(hosts, {'leaf01': switch('cumulus')})
    assert result['problems'] == ['DSCP 26 maps to different priorities: 3 on node0000 mlx5_0/ens1f0np0, '
                                  'node0001 mlx5_0/ens1f0np0, node0002 mlx5_0/ens1f0np0, node0003 mlx5_0/ens1f0np0, '
                                  'node0004 mlx5_0/ens1f0np0 and 1020 more; 1 on node0500 mlx5_0/ens1f0np0']
