# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""port_counters module: a copied sysfs tree with counters, a fake ethtool on PATH, saved ethtool text, the failures."""

from __future__ import annotations

import os
import shutil

import pytest

from ansible_collections.hpcfabric.cluster.plugins.modules import port_counters


@pytest.fixture
def sysfs(tmp_path, fixture_path):
    """The roce_gid5_ipv6 tree (mlx5_0 port 1 on ens1f0) with port counters and a netdev without RDMA (fab0)."""
    root = tmp_path / 'sys'
    shutil.copytree(str(fixture_path('sysfs', 'roce_gid5_ipv6')), str(root))
    port = root / 'class' / 'infiniband' / 'mlx5_0' / 'ports' / '1'
    for group, name, value in [('counters', 'link_downed', 0), ('counters', 'port_rcv_data', 205128687774249),
                               ('hw_counters', 'rp_cnp_handled', 12)]:
        (port / group).mkdir(exist_ok=True)
        (port / group / name).write_text('%d\n' % value)
    for interface, value in [('ens1f0', 2195783498134), ('fab0', 42)]:
        (root / 'class' / 'net' / interface / 'statistics').mkdir(parents=True)
        (root / 'class' / 'net' / interface / 'statistics' / 'rx_bytes').write_text('%d\n' % value)
    return root


def fake_ethtool(tmp_path, monkeypatch, stdout_file, interface='ens1f0'):
    """An ethtool first on PATH that prints a recorded output for `-S interface` and fails otherwise."""
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    script = bindir / 'ethtool'
    script.write_text("#!/bin/sh\n[ \"$1\" = -S ] && [ \"$2\" = %s ] || { echo 'no stats available' >&2; exit 94; }\n"
                      "cat '%s'\n" % (interface, stdout_file))
    script.chmod(0o755)
    monkeypatch.setenv('PATH', '%s%s%s' % (bindir, os.pathsep, os.environ.get('PATH', '')))


def test_reads_netdev_rdma_and_ethtool_counters_and_changes_nothing(run_module, sysfs, tmp_path, monkeypatch,
                                                                    fixture_path):
    fake_ethtool(tmp_path, monkeypatch, fixture_path('ethtool', 'ice_e810_grep_prio.txt'))
    args = {'interfaces': ['ens1f0', 'fab0'], 'sysfs_root': str(sysfs)}
    result = run_module(port_counters, args)
    assert result['changed'] is False and result['warnings'] == []
    ports = result['counters']['ports']
    assert ports['fab0'] == {'rdma_port': None, 'counters': {'statistics/rx_bytes': 42}}
    assert ports['ens1f0']['rdma_port'] == 'mlx5_0:1'
    counters = ports['ens1f0']['counters']
    assert (counters['statistics/rx_bytes'], counters['counters/port_rcv_data'], counters['counters/link_downed'],
            counters['hw_counters/rp_cnp_handled'], counters['ethtool/tx_priority_3_xoff.nic']) == (
        2195783498134, 205128687774249, 0, 12, 6434)
    checked = run_module(port_counters, args, check_mode=True)
    assert checked['counters']['ports'] == result['counters']['ports']


def test_saved_ethtool_text_runs_nothing(run_module, sysfs, fixture_text):
    result = run_module(port_counters, {'interfaces': ['ens1f0'], 'sysfs_root': str(sysfs),
                                        'ethtool_path': '/nonexistent/ethtool',
                                        'ethtool_output': {'ens1f0': fixture_text('ethtool', 'ice_e810_grep_prio.txt')}})
    assert result['warnings'] == []
    assert result['counters']['ports']['ens1f0']['counters']['ethtool/tx_priority_2_xoff.nic'] == 14864


def test_missing_ethtool_warns_and_keeps_the_sysfs_counters(run_module, sysfs):
    result = run_module(port_counters, {'interfaces': ['ens1f0'], 'sysfs_root': str(sysfs),
                                        'ethtool_path': '/nonexistent/ethtool'})
    assert result['warnings'] == ['/nonexistent/ethtool not found: no flow control counters for ens1f0']
    assert result['counters']['ports']['ens1f0']['counters']['counters/link_downed'] == 0


def test_failing_ethtool_warns_with_its_exit(run_module, sysfs, tmp_path, monkeypatch, fixture_path):
    fake_ethtool(tmp_path, monkeypatch, fixture_path('ethtool', 'ice_e810_grep_prio.txt'), interface='other0')
    result = run_module(port_counters, {'interfaces': ['ens1f0'], 'sysfs_root': str(sysfs)})
    assert result['warnings'] == ['%s -S ens1f0 exited 94: no stats available' % (tmp_path / 'bin' / 'ethtool')]
    assert result['counters']['ports']['ens1f0']['counters']['counters/port_rcv_data'] == 205128687774249


def test_ethtool_off_reads_sysfs_only(run_module, sysfs, tmp_path, monkeypatch, fixture_path):
    fake_ethtool(tmp_path, monkeypatch, fixture_path('ethtool', 'ice_e810_grep_prio.txt'))
    result = run_module(port_counters, {'interfaces': ['ens1f0'], 'sysfs_root': str(sysfs), 'ethtool': False})
    assert result['warnings'] == []
    assert not [name for name in result['counters']['ports']['ens1f0']['counters'] if name.startswith('ethtool/')]


def test_partly_readable_saved_text_warns_naming_the_line(run_module, sysfs, fixture_text):
    text = fixture_text('ethtool', 'ice_e810_grep_prio.txt') + 'root@node01:~# \n'
    result = run_module(port_counters, {'interfaces': ['ens1f0'], 'sysfs_root': str(sysfs),
                                        'ethtool_output': {'ens1f0': text}})
    assert result['warnings'] == ["ethtool_output.ens1f0: ignored unreadable line 33: 'root@node01:~#'"]
    assert result['counters']['ports']['ens1f0']['counters']['ethtool/tx_priority_3_xoff.nic'] == 6434


def test_unparseable_saved_text_fails_naming_the_interface_and_line(run_module, sysfs):
    result = run_module(port_counters, {'interfaces': ['ens1f0'], 'sysfs_root': str(sysfs),
                                        'ethtool_output': {'ens1f0': 'no stats available\n'}})
    assert result['failed'] is True
    assert result['msg'].startswith('cannot parse ethtool_output.ens1f0: no "name: value" counter line')
    assert (result['line'], result['lineno']) == ('no stats available', 1)


def test_an_interface_without_counters_fails_naming_it(run_module, sysfs):
    result = run_module(port_counters, {'interfaces': ['fab0', 'fab9'], 'sysfs_root': str(sysfs)})
    assert result['failed'] is True
    assert result['msg'].startswith('fab9: no counters under %s/class/net/fab9/statistics' % sysfs)
    assert result['interface'] == 'fab9'
