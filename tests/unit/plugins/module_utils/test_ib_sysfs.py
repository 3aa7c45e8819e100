# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""sysfs reader on fake /sys trees (tests/unit/fixtures/sysfs, see SOURCES.md there)."""

from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.ib_sysfs import class_dir, device_names, read_devices
from ansible_collections.hpcfabric.cluster.plugins.module_utils.ibstat import parse_ibstat, summarize


def read_tree(fixture_path, tree):
    return read_devices(class_dir(str(fixture_path('sysfs', tree))))


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + '\n')


def test_mixed_tree_ports_and_summaries(fixture_path):
    devices, warnings = read_tree(fixture_path, 'ib_mixed')
    assert warnings == []
    facts = summarize(devices, 'sysfs')
    assert facts['ca_names'] == ['mlx5_0', 'mlx5_10', 'mlx5_2']
    assert facts['active_ports'] == 2
    assert facts['min_active_rate_gbps'] == 2.5
    assert facts['link_layers'] == ['Ethernet', 'InfiniBand']
    assert devices['mlx5_0'] == {
        'node_type': 'CA', 'ca_type': 'MT4124', 'num_ports': 1, 'firmware_version': '20.41.1000',
        'hardware_version': '0', 'node_guid': '0x00155dfffe3411eb', 'system_image_guid': '0xb83fd203006e2704',
        'ports': {'1': {
            'state': 'Active', 'physical_state': 'LinkUp', 'rate_gbps': 200, 'link_layer': 'InfiniBand',
            'base_lid': 13247, 'sm_lid': 1, 'lmc': 0, 'port_guid': '0x00155dfffd3411eb',
            'netdev': None, 'roce_v2_gid_index': None}},
    }


def test_down_polling_infiniband_port_with_ipoib_netdev(fixture_path):
    devices, dummy = read_tree(fixture_path, 'ib_mixed')
    port = devices['mlx5_10']['ports']['1']
    assert (port['state'], port['physical_state'], port['rate_gbps'], port['link_layer']) == \
        ('Down', 'Polling', 10, 'InfiniBand')
    assert (port['base_lid'], port['sm_lid']) == (868, 334)
    assert port['netdev'] == 'ibp204s0'
    assert port['port_guid'] is None
    assert devices['mlx5_10']['node_guid'] is None


def test_ethernet_sdr_rate_is_a_float_and_no_ipv4_gid_means_no_index(fixture_path):
    devices, dummy = read_tree(fixture_path, 'ib_mixed')
    port = devices['mlx5_2']['ports']['1']
    assert port['rate_gbps'] == 2.5 and isinstance(port['rate_gbps'], float)
    assert port['netdev'] == 'ens13'
    assert port['roce_v2_gid_index'] is None
    assert port['port_guid'] == '0xbacef6fffe71f6fc'


@pytest.mark.parametrize('tree, device, index, netdev, port_guid', [
    # index 3 holds the same address on a VXLAN above the port: the port's own netdev (bond1) has it at 5
    ('roce_gid3_bond', 'mlx5_bond_0', 5, 'bond1', '0x0ac0ebfffe79391a'),
    ('roce_gid5_ipv6', 'mlx5_0', 5, 'ens1f0', '0x0e42a1fffe5d4db8'),
    ('roce_gid7_pod', 'mlx5_0', 7, 'net1', '0x0000000000000000'),
    ('roce_gid7_pod', 'mlx5_1', 7, 'net2', '0x0000000000000000'),
])
def test_roce_v2_ipv4_gid_index_is_read_not_assumed(fixture_path, tree, device, index, netdev, port_guid):
    devices, warnings = read_tree(fixture_path, tree)
    port = devices[device]['ports']['1']
    assert port['roce_v2_gid_index'] == index
    assert port['netdev'] == netdev
    assert port['port_guid'] == port_guid
    assert (port['state'], port['physical_state'], port['link_layer'], port['base_lid']) == \
        ('Active', 'LinkUp', 'Ethernet', 0)
    assert port['rate_gbps'] is None
    assert warnings == []


def test_active_ports_without_a_rate_give_no_minimum(fixture_path):
    facts = summarize(read_tree(fixture_path, 'roce_gid7_pod')[0], 'sysfs')
    assert (facts['ca_names'], facts['active_ports'], facts['min_active_rate_gbps'], facts['link_layers']) == \
        (['mlx5_0', 'mlx5_1'], 2, None, ['Ethernet'])


@pytest.mark.parametrize('tree, ibstat_name, ca', [
    ('ib_mixed', 'a100_hdr_ibpanic.txt', 'mlx5_0'),
    ('ib_mixed', 'cx6dx_eth_rate_2_5.txt', 'mlx5_2'),
])
def test_sysfs_values_match_ibstat_values(fixture_path, fixture_text, tree, ibstat_name, ca):
    from_sysfs = read_tree(fixture_path, tree)[0][ca]
    from_ibstat = parse_ibstat(fixture_text('ibstat', ibstat_name))[0][ca]
    for key in ('node_type', 'ca_type', 'num_ports', 'firmware_version', 'hardware_version', 'node_guid',
                'system_image_guid'):
        assert from_sysfs[key] == from_ibstat[key], key
    for key in ('state', 'physical_state', 'rate_gbps', 'base_lid', 'sm_lid', 'lmc', 'port_guid'):
        assert from_sysfs['ports']['1'][key] == from_ibstat['ports']['1'][key], key


def test_class_dir_accepts_sysfs_root_or_the_class_directory(fixture_path):
    root = str(fixture_path('sysfs', 'ib_mixed'))
    nested = str(fixture_path('sysfs', 'ib_mixed') / 'class' / 'infiniband')
    assert class_dir(root) == nested
    assert class_dir(nested) == nested
    assert device_names(nested) == ['mlx5_0', 'mlx5_10', 'mlx5_2']


def test_empty_root_has_no_devices(tmp_path):
    assert class_dir(str(tmp_path)) == str(tmp_path / 'class' / 'infiniband')
    assert device_names(class_dir(str(tmp_path))) == []
    assert read_devices(class_dir(str(tmp_path))) == ({}, [])


def test_two_port_pci_function_netdevs_follow_dev_port(tmp_path):
    """ConnectX-3 values of ../ibstat/cx3_dual_port_polling_disabled.txt; one PCI function, two netdevs."""
    dev = tmp_path / 'class' / 'infiniband' / 'mlx4_0'
    write(dev / 'node_type', '1: CA')
    write(dev / 'hca_type', 'MT4099')
    write(dev / 'device' / 'net' / 'ib0' / 'dev_port', '0')
    write(dev / 'device' / 'net' / 'enp4s0d1' / 'dev_port', '1')
    for port, state, phys, rate, layer in (('1', '1: DOWN', '2: Polling', '10 Gb/sec (4X SDR)', 'InfiniBand'),
                                           ('2', '1: DOWN', '3: Disabled', '40 Gb/sec (4X QDR)', 'Ethernet')):
        for name, value in (('state', state), ('phys_state', phys), ('rate', rate), ('link_layer', layer)):
            write(dev / 'ports' / port / name, value)
    devices, dummy = read_devices(class_dir(str(tmp_path)))
    ports = devices['mlx4_0']['ports']
    assert devices['mlx4_0']['num_ports'] == 2
    assert (ports['1']['netdev'], ports['1']['state'], ports['1']['physical_state'], ports['1']['rate_gbps']) == \
        ('ib0', 'Down', 'Polling', 10)
    assert (ports['2']['netdev'], ports['2']['physical_state'], ports['2']['rate_gbps']) == \
        ('enp4s0d1', 'Disabled', 40)


def test_ipv4_gid_of_type_v1_only_or_unreadable_type_is_not_roce_v2(tmp_path):
    port = tmp_path / 'class' / 'infiniband' / 'mlx5_0' / 'ports' / '1'
    write(port / 'gids' / '0', '0000:0000:0000:0000:0000:ffff:c800:d106')
    write(port / 'gid_attrs' / 'types' / '0', 'IB/RoCE v1')
    write(port / 'gids' / '1', '0000:0000:0000:0000:0000:ffff:c800:d106')
    write(port / 'state', '5: ACTIVE_DEFER')
    devices, dummy = read_devices(class_dir(str(tmp_path)))
    read = devices['mlx5_0']['ports']['1']
    assert read['roce_v2_gid_index'] is None
    assert read['state'] == 'ACTIVE_DEFER'
    assert devices['mlx5_0']['node_type'] == 'CA'


def test_device_without_ports_warns(tmp_path):
    (tmp_path / 'class' / 'infiniband' / 'rxe0' / 'ports').mkdir(parents=True)
    devices, warnings = read_devices(class_dir(str(tmp_path)))
    assert devices['rxe0']['ports'] == {} and devices['rxe0']['num_ports'] == 0
    assert warnings == ['rxe0: no readable port under %s' % (tmp_path / 'class' / 'infiniband' / 'rxe0' / 'ports')]
