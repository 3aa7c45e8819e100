# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""roce_host_qos module: detect, apply (check mode too), verify, saved output, clear failures."""
from __future__ import annotations
import importlib.util
from pathlib import Path

import pytest

from ansible_collections.hpcfabric.cluster.plugins.modules import roce_host_qos

_SPEC = importlib.util.spec_from_file_location('roce_fakes', Path(__file__).parents[1] / 'module_utils' / 'roce_fakes.py')
fakes = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(fakes)

IF0 = 'ens1f0np0'


@pytest.fixture
def tree(tmp_path):
    return tmp_path / 'sys', tmp_path / 'config'


def args(tree, **extra):
    return dict({'interfaces': [IF0], 'host': 'node01', 'sysfs_root': str(tree[0]), 'configfs_root': str(tree[1])}, **extra)


def replay(tmp_path, monkeypatch, before, after=None):
    text = {'before': fakes.fixture('mlnx_qos', before), 'after': fakes.fixture('mlnx_qos', after or before)}
    return fakes.FakeTools(tmp_path, {'mlnx_qos': {IF0: text}}).activate(monkeypatch)


def test_node_without_roce_nic_reports_and_changes_nothing(tree, run_module):
    fakes.make_nic(tree[0], 'eth1')
    result = run_module(roce_host_qos, args(tree, interfaces=['eth1'], mode='apply'))
    assert result['changed'] is False and 'failed' not in result
    assert result['capable_interfaces'] == []
    assert result['msg'] == ('no RoCE-capable NIC on node01; checked eth1 (no RDMA device (%s/class/net/eth1/device/infiniband '
                             'is missing))' % tree[0])
    assert result['traffic_class'] == 106


def test_detect_reports_rails_backend_and_gid_index(tree, tmp_path, monkeypatch, run_module):
    names = fakes.make_rails(tree[0], count=8)
    replay(tmp_path, monkeypatch, 'policy_compliant.txt')
    result = run_module(roce_host_qos, args(tree, interfaces=names, mode='detect'))
    assert result['capable_interfaces'] == names
    assert result['backend'] == 'mlnx_qos'
    assert result['roce_v2_gid_index'] == 3
    assert result['changed'] is False


def test_apply_in_check_mode_reports_without_changing(tree, tmp_path, monkeypatch, run_module):
    fakes.make_nic(tree[0], IF0, ibdev='mlx5_0', ecn='1', cnp=('48', '6'))
    fakes.make_rdma_cm(tree[1], ['mlx5_0'], tos='106', mode='RoCE v2')
    fake = replay(tmp_path, monkeypatch, 'pfc_3_4.txt', 'policy_compliant.txt')
    result = run_module(roce_host_qos, args(tree, mode='apply'), check_mode=True)
    assert result['changed'] is True
    assert 'node01 mlx5_0/ens1f0np0: PFC enabled on [3,4], policy [3]' in result['changes']
    assert fake.writes() == []


def test_apply_then_verify(tree, tmp_path, monkeypatch, run_module):
    fakes.make_nic(tree[0], IF0, ibdev='mlx5_0', ecn='1', cnp=('48', '6'))
    fakes.make_rdma_cm(tree[1], ['mlx5_0'])
    fake = replay(tmp_path, monkeypatch, 'pfc_3_4.txt', 'policy_compliant.txt')
    applied = run_module(roce_host_qos, args(tree, mode='apply'))
    assert applied['changed'] is True
    assert fake.writes()[0][:5] == ['mlnx_qos', '-i', IF0, '--pfc', '0,0,0,1,0,0,0,0']
    verified = run_module(roce_host_qos, args(tree, mode='verify'))
    assert 'failed' not in verified and verified['differences'] == []


def test_verify_fails_naming_host_interface_and_difference(tree, tmp_path, monkeypatch, run_module):
    fakes.make_nic(tree[0], IF0, ibdev='mlx5_0', ecn='1', cnp=('48', '6'))
    fakes.make_rdma_cm(tree[1], ['mlx5_0'], tos='106', mode='RoCE v2')
    replay(tmp_path, monkeypatch, 'pfc_3_4.txt')
    result = run_module(roce_host_qos, args(tree))
    assert result['failed'] is True
    assert result['msg'].startswith('RoCE QoS differs from the policy: node01 mlx5_0/ens1f0np0: ')
    assert 'node01 mlx5_0/ens1f0np0: PFC enabled on [3,4], policy [3]' in result['differences']


def test_missing_backend_command_is_named(tree, run_module):
    fakes.make_nic(tree[0], IF0, ibdev='mlx5_0')
    result = run_module(roce_host_qos, args(tree, mode='apply', backend='mlnx_qos'))
    assert result['failed'] is True
    assert result['msg'] == 'mlnx_qos is not installed (mlnx-tools from DOCA)'


def test_invalid_policy_fails_before_touching_anything(tree, run_module):
    result = run_module(roce_host_qos, args(tree, mode='apply', policy={'pfc': {'priorities': [3, 6]}}))
    assert result['failed'] is True
    assert result['msg'].startswith('roce_qos_policy.cnp.priority: 6 is a PFC priority')


def test_saved_output_is_verified_without_commands(run_module, tmp_path):
    saved = {IF0: fakes.fixture('mlnx_qos', 'policy_compliant.txt'), 'ens2f0np0': fakes.fixture('dcb', 'policy_compliant.txt')}
    result = run_module(roce_host_qos, {'interfaces': [IF0, 'ens2f0np0'], 'output': saved, 'host': 'node07',
                                        'sysfs_root': str(tmp_path / 'absent')})
    assert 'failed' not in result and result['differences'] == []
    saved[IF0] = fakes.fixture('mlnx_qos', 'pfc_3_4.txt')
    result = run_module(roce_host_qos, {'interfaces': [IF0], 'output': saved, 'host': 'node07'})
    assert 'node07 ens1f0np0: PFC enabled on [3,4], policy [3]' in result['differences']


def test_unparsable_saved_output_names_the_command_and_line(run_module):
    result = run_module(roce_host_qos, {'interfaces': [IF0], 'backend': 'dcb',
                                        'output': {IF0: fakes.fixture('dcb', 'unsupported.txt')}})
    assert result['failed'] is True
    assert result['msg'] == "dcb (ens1f0np0): cannot parse 'Attribute read: Operation not supported' (unexpected 'Attribute')"


def test_saved_output_only_in_verify_mode(run_module):
    result = run_module(roce_host_qos, {'interfaces': [IF0], 'mode': 'apply', 'output': {IF0: ''}})
    assert result['msg'] == 'output: saved read-back text can only be verified (mode=verify), not apply'


def test_truncated_saved_output_warns(run_module):
    result = run_module(roce_host_qos, {'interfaces': [IF0], 'output': {IF0: fakes.fixture('mlnx_qos', 'truncated.txt')}})
    assert result['warnings'] == ['mlnx_qos (ens1f0np0): no traffic class lines in the output (truncated?); ETS not checked']
