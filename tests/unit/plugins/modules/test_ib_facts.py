# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""ib_facts module: saved ibstat text, fake sysfs trees, a fake ibstat on PATH, and the failures."""

from __future__ import annotations

import os

import pytest

from ansible_collections.hpcfabric.cluster.plugins.modules import ib_facts

SBIN_DIRS = ('/sbin', '/usr/sbin', '/usr/local/sbin')


def fake_ibstat(tmp_path, monkeypatch, stdout_file=None, stderr=None, rc=0):
    """Put an `ibstat` shell script first on PATH that prints a recorded output."""
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    lines = ['#!/bin/sh']
    if stdout_file:
        lines.append("cat '%s'" % stdout_file)
    if stderr:
        lines.append("echo \"%s\" >&2" % stderr)
    lines.append('exit %d' % rc)
    script = bindir / 'ibstat'
    script.write_text('\n'.join(lines) + '\n')
    script.chmod(0o755)
    monkeypatch.setenv('PATH', '%s%s%s' % (bindir, os.pathsep, os.environ.get('PATH', '')))
    return script


def test_output_parameter_parses_without_running_anything(run_module, fixture_text):
    result = run_module(ib_facts, {'output': fixture_text('ibstat', 'h100_ndr_mixed_tabs.txt'),
                                   'ibstat_path': '/nonexistent/ibstat'})
    ib = result['ansible_facts']['ib']
    assert result['changed'] is False
    assert ib['source'] == 'ibstat'
    assert ib['ca_names'][:4] == ['mlx5_0', 'mlx5_1', 'mlx5_10', 'mlx5_11']
    assert ib['ca_names'][4] == 'mlx5_2'
    assert (ib['active_ports'], ib['min_active_rate_gbps'], ib['link_layers']) == (9, 100, ['Ethernet', 'InfiniBand'])
    assert ib['devices']['mlx5_10']['ports']['1']['base_lid'] == 828
    assert result['warnings'] == []


def test_output_with_trailing_error_line_warns(run_module, fixture_text):
    result = run_module(ib_facts, {'output': fixture_text('ibstat', 'a100_hdr_ibpanic.txt')})
    assert result['ansible_facts']['ib']['active_ports'] == 8
    assert result['warnings'] == [
        "ibstat: ignored unreadable line 137: "
        "\"ibpanic: [1400444] main: stat of IB device 'mlx5_8' failed: No such file or directory\""]


@pytest.mark.parametrize('name, ca_names, form', [
    ('cx3_fdr56_two_cas_list_l.txt', ['mlx4_0', 'mlx4_1'], '`ibstat -l` form'),
    ('cx3_fdr56_two_cas_ports_p.txt', [], '`ibstat -p` form'),
])
def test_output_in_a_shorter_ibstat_form_gives_what_it_holds_and_warns(run_module, fixture_text, name, ca_names, form):
    result = run_module(ib_facts, {'output': fixture_text('ibstat', name)})
    assert not result.get('failed')
    ib = result['ansible_facts']['ib']
    assert (ib['ca_names'], ib['active_ports'], ib['min_active_rate_gbps']) == (ca_names, 0, None)
    assert len(result['warnings']) == 1 and form in result['warnings'][0]


def test_unparseable_output_fails_naming_command_and_line(run_module, fixture_text):
    result = run_module(ib_facts, {'output': fixture_text('ibstat', 'ibpanic_only.txt')})
    assert result['failed'] is True
    assert result['msg'].startswith('cannot parse ibstat output: no CA found in ibstat output; line 1')
    assert result['line'] == "ibpanic: [7851] main: stat of IB device 'mlx5_1' failed: Invalid argument"
    assert result['lineno'] == 1


def test_output_cannot_be_combined_with_sysfs_source(run_module, fixture_text):
    result = run_module(ib_facts, {'output': fixture_text('ibstat', 'cx3_qdr_noindent.txt'), 'source': 'sysfs'})
    assert result['failed'] is True
    assert 'source=sysfs' in result['msg']


@pytest.mark.parametrize('source', ['sysfs', 'auto'])
def test_fake_sysfs_tree(run_module, fixture_path, source):
    result = run_module(ib_facts, {'source': source, 'sysfs_root': str(fixture_path('sysfs', 'ib_mixed')),
                                   'ibstat_path': '/nonexistent/ibstat'})
    ib = result['ansible_facts']['ib']
    assert ib['source'] == 'sysfs'
    assert ib['ca_names'] == ['mlx5_0', 'mlx5_10', 'mlx5_2']
    assert (ib['active_ports'], ib['min_active_rate_gbps'], ib['link_layers']) == (2, 2.5, ['Ethernet', 'InfiniBand'])
    assert ib['devices']['mlx5_2']['ports']['1']['netdev'] == 'ens13'
    assert ib['devices']['mlx5_0']['ports']['1']['rate_gbps'] == 200


def test_sysfs_root_may_be_the_class_directory(run_module, fixture_path):
    root = fixture_path('sysfs', 'roce_gid5_ipv6') / 'class' / 'infiniband'
    result = run_module(ib_facts, {'sysfs_root': str(root)})
    port = result['ansible_facts']['ib']['devices']['mlx5_0']['ports']['1']
    assert (port['roce_v2_gid_index'], port['netdev']) == (5, 'ens1f0')


def test_check_mode_gives_the_same_facts(run_module, fixture_path):
    args = {'sysfs_root': str(fixture_path('sysfs', 'roce_gid3_bond'))}
    result = run_module(ib_facts, args, check_mode=True)
    assert result['changed'] is False
    assert result['ansible_facts'] == run_module(ib_facts, args)['ansible_facts']
    assert result['ansible_facts']['ib']['devices']['mlx5_bond_0']['ports']['1']['roce_v2_gid_index'] == 5


def test_missing_ibstat_and_empty_sysfs_fails_naming_both(run_module, tmp_path):
    missing = str(tmp_path / 'no-such-dir' / 'ibstat')
    result = run_module(ib_facts, {'sysfs_root': str(tmp_path), 'ibstat_path': missing})
    assert result['failed'] is True
    assert result['msg'].startswith('%s not found' % missing)
    assert 'no RDMA device under %s' % (tmp_path / 'class' / 'infiniband') in result['msg']
    assert result['sysfs_path'] == str(tmp_path / 'class' / 'infiniband')


@pytest.mark.skipif(any(os.path.exists(os.path.join(d, 'ibstat')) for d in SBIN_DIRS),
                    reason='infiniband-diags is installed on this machine')
def test_default_ibstat_name_missing_from_path(run_module, tmp_path, monkeypatch):
    monkeypatch.setenv('PATH', str(tmp_path))
    result = run_module(ib_facts, {'sysfs_root': str(tmp_path)})
    assert result['failed'] is True
    assert result['msg'].startswith('ibstat not found')


def test_sysfs_source_with_empty_root_fails_naming_the_path(run_module, tmp_path):
    result = run_module(ib_facts, {'source': 'sysfs', 'sysfs_root': str(tmp_path)})
    assert result['failed'] is True
    assert result['msg'] == 'no RDMA device under %s' % (tmp_path / 'class' / 'infiniband')


def test_auto_runs_fake_ibstat_on_path_when_sysfs_is_empty(run_module, fixture_path, tmp_path, monkeypatch):
    fake_ibstat(tmp_path, monkeypatch, stdout_file=fixture_path('ibstat', 'cx3_dual_port_polling_disabled.txt'))
    result = run_module(ib_facts, {'sysfs_root': str(tmp_path / 'sys')})
    ib = result['ansible_facts']['ib']
    assert ib['source'] == 'ibstat'
    assert ib['ca_names'] == ['mlx4_0']
    assert ib['devices']['mlx4_0']['ports']['1']['physical_state'] == 'Polling'
    assert ib['devices']['mlx4_0']['ports']['2']['link_layer'] == 'Ethernet'
    assert (ib['active_ports'], ib['min_active_rate_gbps']) == (0, None)


def test_source_ibstat_runs_ibstat_even_with_devices_in_sysfs(run_module, fixture_path, tmp_path, monkeypatch):
    fake_ibstat(tmp_path, monkeypatch, stdout_file=fixture_path('ibstat', 'cx6dx_eth_100_two_cas.txt'))
    result = run_module(ib_facts, {'source': 'ibstat', 'sysfs_root': str(fixture_path('sysfs', 'ib_mixed'))})
    ib = result['ansible_facts']['ib']
    assert (ib['source'], ib['ca_names'], ib['min_active_rate_gbps']) == ('ibstat', ['mlx5_0', 'mlx5_1'], 100)


def test_ibstat_failing_midway_keeps_facts_and_warns(run_module, fixture_path, tmp_path, monkeypatch):
    """ibstat prints the CAs it could read on stdout, then ibpanic on stderr and exits 255."""
    partial = tmp_path / 'partial.txt'
    text = fixture_path('ibstat', 'a100_hdr_ibpanic.txt').read_text()
    partial.write_text(text[:text.index('ibpanic:')])
    fake_ibstat(tmp_path, monkeypatch, stdout_file=partial, rc=255,
                stderr="ibpanic: [1400444] main: stat of IB device 'mlx5_8' failed: No such file or directory")
    result = run_module(ib_facts, {'source': 'ibstat'})
    assert result['ansible_facts']['ib']['active_ports'] == 8
    warnings = result['warnings']
    assert len(warnings) == 1, warnings
    assert 'exited with rc 255 after listing mlx5_0, mlx5_1' in warnings[0]
    assert "stat of IB device 'mlx5_8' failed" in warnings[0]


def test_ibstat_printing_nothing_fails_with_its_stderr(run_module, tmp_path, monkeypatch):
    script = fake_ibstat(tmp_path, monkeypatch, rc=255,
                         stderr="ibpanic: [7851] main: stat of IB device 'mlx5_1' failed: Invalid argument")
    result = run_module(ib_facts, {'source': 'ibstat'})
    assert result['failed'] is True
    assert result['msg'] == ("%s printed nothing (rc 255): ibpanic: [7851] main: stat of IB device 'mlx5_1' "
                             "failed: Invalid argument" % script)
    assert result['rc'] == 255
