# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""LNet's configuration from storage_lnet_networks and the read-back of lnetctl (fixtures: tests/unit/fixtures/storage,
sources in its SOURCES.md)."""
from __future__ import annotations

import pytest
import yaml

from ansible_collections.hpcfabric.cluster.plugins.module_utils.lnet import (
    canonical_net, lnet_conf, net_problems, net_show, nid_net, ping_problem, planned_networks)


@pytest.fixture
def lnetctl(fixture_text):
    return lambda name: yaml.safe_load(fixture_text('storage', name))


@pytest.mark.parametrize('net, canonical', [('o2ib0', 'o2ib'), ('o2ib', 'o2ib'), ('o2ib1', 'o2ib1'),
                                            ('tcp00', 'tcp'), ('tcp10', 'tcp10')])
def test_network_zero_is_named_as_lnet_prints_it(net, canonical):
    assert canonical_net(net) == canonical


def test_nid_networks():
    assert nid_net('10.10.5.1@o2ib0') == 'o2ib'
    assert nid_net('0@lo') == 'lo'
    assert nid_net('10.10.5.1') is None


def test_the_configuration_is_what_lnetctl_import_reads():
    text = lnet_conf(['o2ib0(ib0,ib1)', 'tcp1(eth0)[0,1]'])
    # lnetctl export's own layout: a net per spec, one NI per interface
    assert yaml.safe_load(text) == {'net': [
        {'net type': 'o2ib', 'local NI(s)': [{'interfaces': {0: 'ib0'}}, {'interfaces': {0: 'ib1'}}]},
        {'net type': 'tcp1', 'local NI(s)': [{'interfaces': {0: 'eth0'}, 'CPT': '[0,1]'}]}]}


def test_a_bad_spec_is_named():
    with pytest.raises(ValueError, match="'o2ib0 ib0' is not an LNet network spec"):
        planned_networks(['o2ib0(ib0)', 'o2ib0 ib0'])


def test_the_recorded_o2ib_client_is_up(lnetctl):
    tree = lnetctl('lnetctl_net_show_o2ib.txt')
    assert net_show(tree) == {'o2ib': [{'nid': '172.25.81.11@o2ib', 'status': 'up', 'interfaces': ['ibs1f1']}]}
    assert net_problems(['o2ib0(ibs1f1)'], tree) == []


def test_what_is_not_up_is_named(lnetctl):
    assert net_problems(['o2ib0(ibs1f1,ibs2f1)', 'o2ib1(ibs3f1)'], lnetctl('lnetctl_net_show_o2ib.txt')) == [
        'LNet network o2ib has no NI on ibs2f1',
        'LNet network o2ib1 is not configured (lnetctl net show lists o2ib)']
    assert net_problems(['tcp(eth0)'], lnetctl('lnetctl_net_show_nid_down.txt')) == [
        'LNet NID 192.168.122.60@tcp on eth0 is down, not up']


def test_lnetctl_errors_are_its_own_words(lnetctl, fixture_text):
    assert net_problems(['o2ib0(ib0)'], lnetctl('lnetctl_net_show_network_down.txt')) == [
        'lnetctl net show: Network is down']
    # not YAML at all: the filter hands the text over as the reason
    assert net_problems(['o2ib0(ib0)'], {'descr': fixture_text('storage', 'lnetctl_net_show_not_loaded.txt')}) == [
        'lnetctl net show: opening /dev/lnet failed: No such device']
    assert net_problems(['o2ib0(ib0)'], ['something else']) == ['lnetctl net show: not the net: list of lnetctl net show']


def test_pings(lnetctl):
    assert ping_problem('172.25.81.1@o2ib0', 0, lnetctl('lnetctl_ping_ok.txt')) is None
    assert ping_problem('172.25.81.9@o2ib0', 1, lnetctl('lnetctl_ping_failed.txt')) == (
        'lnetctl ping 172.25.81.9@o2ib0 failed (exit 1): failed to ping 172.25.81.9@o2ib: Input/output error')
    # a zero exit without a peer NI is no answer
    assert ping_problem('172.25.81.1@o2ib0', 0, {'ping': []}) == (
        'lnetctl ping 172.25.81.1@o2ib0 failed (exit 0): no peer NI in its answer')
