# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""port_counters given saved perfquery and rdma statistic text: the counters under their sysfs names beside the sysfs
ones, an interface known only from the text, the lines of no form named, and text of no form or port failing."""

from __future__ import annotations

import shutil

import pytest

from ansible_collections.hpcfabric.cluster.plugins.modules import port_counters


@pytest.fixture
def sysfs(tmp_path, fixture_path):
    """The roce_gid5_ipv6 tree (mlx5_0 port 1 on ens1f0) with a sysfs port_rcv_data and a netdev counter."""
    root = tmp_path / 'sys'
    shutil.copytree(str(fixture_path('sysfs', 'roce_gid5_ipv6')), str(root))
    counters = root / 'class' / 'infiniband' / 'mlx5_0' / 'ports' / '1' / 'counters'
    counters.mkdir()
    (counters / 'port_rcv_data').write_text('205128687774249\n')
    (root / 'class' / 'net' / 'ens1f0' / 'statistics').mkdir(parents=True)
    (root / 'class' / 'net' / 'ens1f0' / 'statistics' / 'rx_bytes').write_text('2195783498134\n')
    return root


def run(run_module, sysfs, saved, interfaces=('ens1f0',)):
    return run_module(port_counters, {'interfaces': list(interfaces), 'sysfs_root': str(sysfs), 'ethtool': False,
                                      'counters_output': saved})


def test_perfquery_x_of_the_interfaces_port_replaces_sysfs_of_the_same_name(run_module, sysfs, fixture_text):
    result = run(run_module, sysfs, {'ens1f0': fixture_text('perfquery', 'infiniband-exporter-0x7cfe9003009ce5b0-x.out')})
    assert result.get('failed') is not True, result
    port = result['counters']['ports']['ens1f0']
    # ens1f0 is mlx5_0 port 1: of the text's two ports, port 1 is read
    assert port['rdma_port'] == 'mlx5_0:1'
    assert (port['counters']['counters/port_rcv_data'], port['counters']['counters/port_xmit_wait'],
            port['counters']['statistics/rx_bytes']) == (12279028775751, 22730501, 2195783498134)
    assert len([name for name in port['counters'] if name.startswith('counters/')]) == 21
    assert result['warnings'] == []


def test_an_interface_known_only_from_rdma_statistic(run_module, sysfs, fixture_text):
    result = run(run_module, sysfs, {'fab9': fixture_text('rdma-statistic', 'iproute2-stat-counter-cover-letter-2019.txt')},
                 interfaces=['fab9'])
    assert result.get('failed') is not True, result
    port = result['counters']['ports']['fab9']
    assert port['rdma_port'] == 'mlx5_0:1' and len(port['counters']) == 21
    assert port['counters']['hw_counters/local_ack_timeout_err'] == 0
    assert result['warnings'] == ["counters_output.fab9: ignored unreadable line 1: '[leonro@server ~]$ rdma stat show'",
                                  "counters_output.fab9: ignored unreadable line 10: "
                                  "'[leonro@server ~]$ rdma stat show -p'"]


def test_a_partly_readable_perfquery_warns_naming_the_line(run_module, sysfs, fixture_text):
    result = run(run_module, sysfs, {'ens1f0': fixture_text('perfquery', 'infiniband-diags-issue16-rhel75-x.txt')})
    assert result['warnings'] == ["counters_output.ens1f0: ignored unreadable line 1: '# perfquery -x 10 1'"]
    assert result['counters']['ports']['ens1f0']['counters']['counters/port_rcv_data'] == 0


def test_text_of_no_form_fails_naming_the_interface_and_the_forms(run_module, sysfs):
    result = run(run_module, sysfs, {'ens1f0': "ibwarn: [3845] mad_rpc_open_port: can't open UMAD port ((null):0)\n"})
    assert result['failed'] is True and result['interface'] == 'ens1f0'
    assert result['msg'].startswith('cannot parse counters_output.ens1f0: neither perfquery, perfquery -x or rdma '
                                    'statistic show')


def test_text_of_another_port_fails_naming_it(run_module, sysfs, fixture_text):
    # derived: the recorded port 1 block relabelled as port 2, the port perfquery would show without a port argument
    text = fixture_text('perfquery', 'infiniband-exporter-0x7cfe9003009ce5b0-x.out')
    result = run(run_module, sysfs, {'ens1f0': text.split('# Port extended counters: Lid 1719 port 2')[0].replace(
        'port 1 (', 'port 2 (').replace('PortSelect:......................1', 'PortSelect:......................2')})
    assert result['failed'] is True
    assert result['msg'] == 'cannot parse counters_output.ens1f0: the perfquery text is of port 2, not of mlx5_0:1'
