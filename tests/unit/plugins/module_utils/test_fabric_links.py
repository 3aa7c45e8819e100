# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""fabric_network's interfaces against recorded ``ip -json link show`` output (tests/unit/fixtures/ip_link)."""
from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.cluster_model import interface_name
from ansible_collections.hpcfabric.cluster.plugins.module_utils.fabric_links import parse_ip_link, resolve_interfaces

LINKS = ['lo', 'ifb0', 'ifb1', 'eth0', 'veth35979a5e', 'veth7871a396']


@pytest.fixture
def ip_link(fixture_text):
    return fixture_text('ip_link', 'devhost_veth.json')


def test_parse_keeps_ip_order(ip_link):
    assert [link['ifname'] for link in parse_ip_link(ip_link)] == LINKS


def test_by_name_and_by_mac_in_any_case(ip_link):
    interfaces = [
        {'name': 'veth35979a5e', 'address': '10.100.0.11/24', 'rail': 0},
        {'mac': '02:FC:00:00:00:01', 'address': '10.100.1.11/24', 'rail': 1, 'mtu': 4200,
         'routes': [{'to': '10.200.0.0/16', 'via': '10.100.1.1'}]},
    ]
    resolved = resolve_interfaces(interfaces, ip_link, 9000)
    del resolved['netplan']
    assert resolved == {
        'interfaces': [
            {'name': 'veth35979a5e', 'address': '10.100.0.11/24', 'rail': 0, 'mtu': 9000, 'routes': []},
            {'name': 'eth0', 'mac': '02:FC:00:00:00:01', 'address': '10.100.1.11/24', 'rail': 1, 'mtu': 4200,
             'routes': [{'to': '10.200.0.0/16', 'via': '10.100.1.1'}]},
        ],
        'missing': [],
        'present': LINKS,
    }


def test_a_name_wins_over_a_mac(ip_link):
    resolved = resolve_interfaces([{'name': 'ifb1', 'mac': '02:fc:00:00:00:01', 'address': 'x'}], ip_link, 9000)
    assert resolved['interfaces'][0]['name'] == 'ifb1'


def test_missing_interfaces_are_named_as_the_inventory_gives_them(ip_link):
    resolved = resolve_interfaces([
        {'name': 'fab0', 'address': '10.100.0.11/24'},
        {'mac': '0C:42:A1:00:00:01', 'address': '10.100.1.11/24'},
        {'name': 'eth0', 'address': '10.100.2.11/24'},
        {'name': 'nosuch0', 'mac': '02:fc:00:00:00:01', 'address': '10.100.3.11/24'},
        {'address': '10.100.4.11/24'},
    ], ip_link, 9000)
    assert resolved['missing'] == ['fab0', '0C:42:A1:00:00:01', 'nosuch0', '(an entry with neither name nor mac)']
    assert [i['name'] for i in resolved['interfaces']] == ['fab0', None, 'eth0', 'nosuch0', None]


def test_no_interfaces(ip_link):
    assert resolve_interfaces([], ip_link, 9000) == {'interfaces': [], 'missing': [], 'present': LINKS, 'netplan': {
        'network': {'version': 2, 'renderer': 'networkd', 'ethernets': {}}}}


def test_the_rule_is_the_cluster_models():
    assert interface_name({'mac': 'AA:BB:CC:00:00:01'}, {'aa:bb:cc:00:00:01': 'ens1'}) == 'ens1'
    assert interface_name({'name': 'ens2', 'mac': 'AA:BB:CC:00:00:01'}, {'aa:bb:cc:00:00:01': 'ens1'}) == 'ens2'
    assert interface_name({'mac': 'AA:BB:CC:00:00:02'}, {'aa:bb:cc:00:00:01': 'ens1'}) is None


@pytest.mark.parametrize('text, message', [
    ('', 'ip -json link show printed no JSON'),
    ('1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536', 'ip -json link show printed no JSON'),
    ('{"ifname": "lo"}', 'printed no list of links with ifname'),
    ('[{"ifindex": 1}]', 'printed no list of links with ifname'),
])
def test_output_that_is_not_ip_json_is_named(text, message):
    with pytest.raises(ValueError, match=message):
        resolve_interfaces([], text, 9000)


def test_entries_must_be_mappings(ip_link):
    with pytest.raises(TypeError, match='entries must be mappings'):
        resolve_interfaces(['eth0'], ip_link, 9000)


def test_the_netplan_document_holds_the_interfaces_the_host_has(ip_link):
    wanted = [{'name': 'veth35979a5e', 'address': '10.100.0.11/24'},
              {'mac': '02:FC:00:00:00:01', 'address': '10.100.1.11/24', 'mtu': 4200,
               'routes': [{'to': '10.200.0.0/16', 'via': '10.100.1.1'}]},
              {'name': 'ib7', 'address': '10.100.7.11/24'}]
    netplan = resolve_interfaces(wanted, ip_link, 9000)['netplan']
    ethernets = netplan['network']['ethernets']
    assert (netplan['network']['version'], netplan['network']['renderer'], sorted(ethernets)) == (
        2, 'networkd', ['eth0', 'veth35979a5e'])
    assert ethernets['veth35979a5e'] == {
        'mtu': 9000, 'dhcp4': False, 'dhcp6': False, 'link-local': [], 'optional': True, 'addresses': ['10.100.0.11/24']}
    assert ethernets['eth0']['match'] == {'macaddress': '02:fc:00:00:00:01'}
    assert (ethernets['eth0']['set-name'], ethernets['eth0']['mtu']) == ('eth0', 4200)
    assert ethernets['eth0']['routes'] == [{'to': '10.200.0.0/16', 'via': '10.100.1.1'}]
