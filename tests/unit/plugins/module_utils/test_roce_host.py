# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Host side of the RoCE policy: recorded mlnx_qos/dcb outputs, a fake sysfs/configfs, replaying tools."""
from __future__ import annotations
import importlib.util
import json
from pathlib import Path

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils import roce_host
from ansible_collections.hpcfabric.cluster.plugins.module_utils.roce_policy import resolve_policy


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fakes = load('roce_fakes', Path(__file__).with_name('roce_fakes.py'))
# the boot-time script the roce_qos role installs next to roce_host.py
apply_script = load('roce_qos_apply', Path(__file__).resolve().parents[4] / 'roles' / 'roce_qos' / 'files' / 'roce_qos_apply.py')

POLICY = resolve_policy({})
IF0 = 'ens1f0np0'


@pytest.fixture
def tree(tmp_path):
    return tmp_path / 'sys', tmp_path / 'config'


@pytest.fixture
def tools(tmp_path, monkeypatch):
    def make(responses):
        return fakes.FakeTools(tmp_path, responses).activate(monkeypatch)
    return make


def host(tree, interfaces, tools=None, backend='auto', **config):
    config = dict({'policy': POLICY, 'interfaces': interfaces, 'backend': backend}, **config)
    return roce_host.RoceHost(config, run=apply_script.run, which=tools.which if tools else (lambda name: None),
                              sysfs_root=str(tree[0]), configfs_root=str(tree[1]), host='node01')


def mlnx(before, after=None, names=(IF0,)):
    text = {'before': fakes.fixture('mlnx_qos', before), 'after': fakes.fixture('mlnx_qos', after or before)}
    return {'mlnx_qos': dict((name, text) for name in names)}


# --- derived values ---------------------------------------------------------------------------------

def test_traffic_class_is_dscp_shifted_with_ect0():
    assert roce_host.traffic_class(POLICY) == 106
    assert roce_host.traffic_class(resolve_policy({'roce': {'dscp': 24, 'priority': 3}})) == 98


def test_desired_qos_from_default_policy():
    desired = roce_host.desired_qos(POLICY)
    assert desired['dscp2prio'] == {26: [3], 48: [6]}
    assert desired['pfc'] == [3]
    assert desired['prio_tc'] == [0, 1, 2, 3, 4, 5, 6, 7]
    assert desired['tsa'][6] == 'strict' and desired['tsa'][3] == 'ets'
    assert desired['tcbw'] == {0: 50, 1: 0, 2: 0, 3: 50, 4: 0, 5: 0, 7: 0}


# --- mlnx_qos parser --------------------------------------------------------------------------------

def test_parse_mlnx_qos_recorded_report():
    state, warnings = roce_host.parse_mlnx_qos(fakes.fixture('mlnx_qos', 'os_controlled_vendor.txt'))
    assert warnings == []
    assert state['trust'] == 'dscp'
    assert state['dscp2prio'][26] == [3] and state['dscp2prio'][48] == [6] and state['dscp2prio'][0] == [0]
    assert len(state['dscp2prio']) == 64
    assert state['pfc'] == [3]
    assert state['prio_tc'] == [1, 0, 2, 3, 4, 5, 6, 7]
    assert state['tsa'] == dict((tc, 'vendor') for tc in range(8))
    assert state['tcbw'] == {}


def test_recorded_driver_defaults_differ_in_ets_only():
    state, _warnings = roce_host.parse_mlnx_qos(fakes.fixture('mlnx_qos', 'os_controlled_vendor.txt'))
    diffs = roce_host.compare_qos(state, roce_host.desired_qos(POLICY))
    assert diffs[0] == 'priority to traffic class map [1,0,2,3,4,5,6,7], policy [0,1,2,3,4,5,6,7]'
    assert 'traffic class 6 uses vendor, policy strict' in diffs
    assert 'traffic class 3 uses vendor, policy ets' in diffs
    assert len(diffs) == 9


def test_policy_compliant_report_has_no_difference():
    state, warnings = roce_host.parse_mlnx_qos(fakes.fixture('mlnx_qos', 'policy_compliant.txt'))
    assert warnings == []
    assert state['tcbw'] == {0: 50, 1: 0, 2: 0, 3: 50, 4: 0, 5: 0, 7: 0}
    assert roce_host.compare_qos(state, roce_host.desired_qos(POLICY)) == []


def test_pfc_on_an_extra_priority_is_named():
    state, _warnings = roce_host.parse_mlnx_qos(fakes.fixture('mlnx_qos', 'pfc_3_4.txt'))
    assert state['pfc'] == [3, 4]
    assert 'PFC enabled on [3,4], policy [3]' in roce_host.compare_qos(state, roce_host.desired_qos(POLICY))


def test_pcp_trust_reported_once_without_a_map_complaint():
    state, _warnings = roce_host.parse_mlnx_qos(fakes.fixture('mlnx_qos', 'trust_pcp.txt'))
    assert state['trust'] == 'pcp' and state['dscp2prio'] is None
    diffs = roce_host.compare_qos(state, roce_host.desired_qos(POLICY))
    assert diffs[0] == 'trust pcp, policy dscp'
    assert not [diff for diff in diffs if 'DSCP' in diff]


def test_dscp_remapped_to_another_priority():
    state, _warnings = roce_host.parse_mlnx_qos(fakes.fixture('mlnx_qos', 'dscp26_prio1.txt'))
    assert state['dscp2prio'][8] == [1] and state['dscp2prio'][26] == [1]
    assert 'DSCP 26 maps to priority 1, policy 3' in roce_host.compare_qos(state, roce_host.desired_qos(POLICY))


def test_truncated_report_keeps_what_is_there_and_warns():
    state, warnings = roce_host.parse_mlnx_qos(fakes.fixture('mlnx_qos', 'truncated.txt'), 'mlnx_qos -i eth4')
    assert state['pfc'] == [3] and state['trust'] == 'dscp'
    assert state['prio_tc'] is None and state['tsa'] == {}
    assert warnings == ['mlnx_qos -i eth4: no traffic class lines in the output (truncated?); ETS not checked']


def test_unknown_line_is_a_warning():
    text = fakes.fixture('mlnx_qos', 'policy_compliant.txt') + 'Enabled TC: 0,1\n'
    _state, warnings = roce_host.parse_mlnx_qos(text, 'mlnx_qos -i eth4')
    assert warnings == ["mlnx_qos -i eth4: ignored unexpected line 'Enabled TC: 0,1'"]


def test_usage_text_is_a_parse_error_naming_the_line():
    with pytest.raises(roce_host.ParseError) as error:
        roce_host.parse_mlnx_qos('Interface name is required\nUsage: mlnx_qos -i <interface> [options]\n', 'mlnx_qos -i eth9')
    assert str(error.value) == "mlnx_qos -i eth9: cannot parse 'Interface name is required' (no mlnx_qos report in the output)"


# --- dcb parser -------------------------------------------------------------------------------------

def test_parse_dcb_manual_page_outputs():
    text = ''.join(fakes.fixture('dcb', name) for name in ('app_show_numeric.txt', 'pfc_show_prio67.txt', 'ets_show_33_33_34.txt'))
    state, warnings = roce_host.parse_dcb(text)
    assert warnings == []
    assert state['dscp2prio'] == {0: [0], 24: [4], 48: [6]}
    assert state['trust'] == 'dscp'
    assert state['pfc'] == [6, 7]
    assert state['prio_tc'] == list(range(8))
    assert state['tsa'] == {0: 'ets', 1: 'ets', 2: 'ets', 3: 'strict', 4: 'strict', 5: 'strict', 6: 'strict', 7: 'strict'}
    assert state['tcbw'] == {0: 33, 1: 33, 2: 34, 3: 0, 4: 0, 5: 0, 6: 0, 7: 0}
    diffs = roce_host.compare_qos(state, roce_host.desired_qos(POLICY))
    assert 'DSCP 26 has no priority, policy 3' in diffs
    assert 'PFC enabled on [6,7], policy [3]' in diffs
    assert 'traffic class 0 ETS share 33%, policy 50%' in diffs


def test_parse_dcb_symbolic_dscp_names_and_double_mapping():
    state, _warnings = roce_host.parse_dcb(fakes.fixture('dcb', 'app_show_symbolic.txt'))
    assert state['dscp2prio'] == {0: [0], 24: [2, 3], 48: [6]}
    assert roce_host.dscp_value('AF31') == 26 and roce_host.dscp_value('EF') == 46 and roce_host.dscp_value('CS6') == 48


def test_parse_dcb_policy_compliant():
    state, warnings = roce_host.parse_dcb(fakes.fixture('dcb', 'policy_compliant.txt'))
    assert warnings == []
    assert roce_host.compare_qos(state, roce_host.desired_qos(POLICY)) == []


def test_dcb_error_message_is_a_parse_error():
    with pytest.raises(roce_host.ParseError) as error:
        roce_host.parse_dcb(fakes.fixture('dcb', 'unsupported.txt'), 'dcb pfc show dev lo')
    assert "dcb pfc show dev lo: cannot parse 'Attribute read: Operation not supported'" in str(error.value)


def test_guess_backend_from_saved_text():
    assert roce_host.guess_backend(fakes.fixture('mlnx_qos', 'truncated.txt')) == 'mlnx_qos'
    assert roce_host.guess_backend(fakes.fixture('dcb', 'policy_compliant.txt')) == 'dcb'


# --- sysfs detection --------------------------------------------------------------------------------

def test_eight_rails_detected_with_gid_index_from_sysfs(tree):
    names = fakes.make_rails(tree[0])
    result = host(tree, names).result()
    assert result['capable_interfaces'] == names
    assert [nic['ibdev'] for nic in result['interfaces']] == ['mlx5_%d' % rail for rail in range(8)]
    assert all(nic['gid_index'] == 3 and nic['port'] == 1 and nic['mtu'] == 9000 for nic in result['interfaces'])
    assert result['roce_v2_gid_index'] == 3


def test_gid_index_is_read_not_assumed(tree):
    gids = {0: ('IB/RoCE v1', 'fe80:0000:0000:0000:9640:c9ff:fe8c:a09c'),
            1: ('RoCE v2', 'fe80:0000:0000:0000:9640:c9ff:fe8c:a09c'),
            2: (None, '0000:0000:0000:0000:0000:0000:0000:0000'),
            3: (None, '0000:0000:0000:0000:0000:0000:0000:0000'),
            4: ('IB/RoCE v1', '0000:0000:0000:0000:0000:ffff:0a00:0105'),
            5: ('RoCE v2', '0000:0000:0000:0000:0000:ffff:0a00:0105')}
    fakes.make_nic(tree[0], IF0, ibdev='mlx5_0', gids=gids)
    assert host(tree, [IF0]).result()['interfaces'][0]['gid_index'] == 5


def test_gid_index_unknown_without_ipv4_address(tree):
    gids = dict((index, entry) for index, entry in fakes.STANDARD_GIDS.items() if index < 2)
    fakes.make_nic(tree[0], IF0, ibdev='mlx5_0', gids=gids)
    result = host(tree, [IF0]).result()
    assert result['interfaces'][0]['gid_index'] is None
    assert result['roce_v2_gid_index'] is None


def test_gid_index_not_exported_when_nics_disagree(tree):
    names = fakes.make_rails(tree[0], count=2)
    port_dir = tree[0] / 'class' / 'infiniband' / 'mlx5_1' / 'ports' / '1' / 'gid_attrs' / 'types' / '3'
    port_dir.write_text('IB/RoCE v1\n')
    fakes.write(port_dir.parent.parent.parent / 'gids' / '7', '0000:0000:0000:0000:0000:ffff:c0a8:0685')
    fakes.write(port_dir.parent / '7', 'RoCE v2')
    fakes.write(port_dir.parent.parent / 'ndevs' / '7', names[1])
    result = host(tree, names).result()
    assert [nic['gid_index'] for nic in result['interfaces']] == [3, 7]
    assert result['roce_v2_gid_index'] is None


def test_lab_veth_infiniband_port_and_missing_interface_are_not_roce(tree):
    fakes.make_nic(tree[0], 'eth1')
    fakes.make_nic(tree[0], 'ib0', ibdev='mlx5_4', link_layer='InfiniBand')
    result = host(tree, ['eth1', 'ib0', 'ens9f0np0']).result()
    assert result['capable_interfaces'] == []
    reasons = [nic['reason'] for nic in result['interfaces']]
    assert reasons[0] == 'no RDMA device (%s/class/net/eth1/device/infiniband is missing)' % tree[0]
    assert reasons[1] == 'link layer is InfiniBand, not Ethernet (RoCE)'
    assert reasons[2] == 'no such network interface'


def test_port_found_through_gid_ndevs(tree):
    fakes.make_nic(tree[0], 'ens1f1np1', ibdev='mlx5_bond_0', port=2)
    nic = host(tree, ['ens1f1np1']).result()['interfaces'][0]
    assert nic['port'] == 2 and nic['gid_index'] == 3


# --- apply and verify with the replaying tools ------------------------------------------------------

def test_apply_mlnx_qos_changes_only_what_differs(tree, tools):
    fakes.make_nic(tree[0], IF0, ibdev='mlx5_0', ecn='0', cnp=('48', '6'))
    fakes.make_rdma_cm(tree[1], ['mlx5_0'])
    fake = tools(mlnx('os_controlled_vendor.txt', 'policy_compliant.txt'))
    result = host(tree, [IF0], fake).apply()
    assert result['changed'] is True and result['backend'] == 'mlnx_qos'
    assert fake.writes() == [['mlnx_qos', '-i', IF0, '--prio_tc', '0,1,2,3,4,5,6,7',
                              '--tsa', 'ets,ets,ets,ets,ets,ets,strict,ets', '--tcbw', '50,0,0,50,0,0,0,0']]
    net = tree[0] / 'class' / 'net' / IF0 / 'ecn'
    assert (net / 'roce_np' / 'enable' / '3').read_text() == '1'
    assert (net / 'roce_rp' / 'enable' / '3').read_text() == '1'
    assert (net / 'roce_np' / 'enable' / '4').read_text() == '0\n'
    port = tree[1] / 'rdma_cm' / 'mlx5_0' / 'ports' / '1'
    assert (port / 'default_roce_tos').read_text() == '106'
    assert (port / 'default_roce_mode').read_text() == 'RoCE v2'
    assert 'node01 mlx5_0/ens1f0np0: RDMA-CM default ToS 0, policy 106' in result['changes']
    assert 'node01 mlx5_0/ens1f0np0: ECN roce_np on priority 3 0, policy 1' in result['changes']
    assert host(tree, [IF0], fake).verify()['differences'] == []


def test_apply_in_check_mode_changes_nothing(tree, tools):
    fakes.make_nic(tree[0], IF0, ibdev='mlx5_0', ecn='0')
    fakes.make_rdma_cm(tree[1], ['mlx5_0'])
    fake = tools(mlnx('pfc_3_4.txt', 'policy_compliant.txt'))
    result = host(tree, [IF0], fake).apply(check=True)
    assert result['changed'] is True
    assert 'node01 mlx5_0/ens1f0np0: PFC enabled on [3,4], policy [3]' in result['changes']
    assert fake.writes() == []
    assert (tree[1] / 'rdma_cm' / 'mlx5_0' / 'ports' / '1' / 'default_roce_tos').read_text() == '0\n'
    assert (tree[0] / 'class' / 'net' / IF0 / 'ecn' / 'roce_np' / 'enable' / '3').read_text() == '0\n'


def test_apply_is_idempotent_on_a_compliant_nic(tree, tools):
    fakes.make_nic(tree[0], IF0, ibdev='mlx5_0', ecn='1', cnp=('48', '6'))
    fakes.make_rdma_cm(tree[1], ['mlx5_0'], tos='106', mode='RoCE v2')
    fake = tools(mlnx('policy_compliant.txt'))
    result = host(tree, [IF0], fake).apply()
    assert result['changed'] is False and result['changes'] == [] and result['warnings'] == []
    assert fake.writes() == []


def test_dscp_map_fix_is_a_separate_mlnx_qos_call(tree, tools):
    fakes.make_nic(tree[0], IF0, ibdev='mlx5_0')
    fake = tools(mlnx('dscp26_prio1.txt'))
    host(tree, [IF0], fake, rdma_cm=False, ecn=False).apply()
    assert fake.writes()[-1] == ['mlnx_qos', '-i', IF0, '--dscp2prio', 'set,26,3']


def test_verify_names_host_device_interface_and_difference(tree, tools):
    fakes.make_nic(tree[0], IF0, ibdev='mlx5_0', mtu=1500, ecn='1', cnp=('48', '6'))
    fakes.make_rdma_cm(tree[1], ['mlx5_0'], tos='106', mode='RoCE v2')
    fake = tools(mlnx('pfc_3_4.txt'))
    result = host(tree, [IF0], fake).verify()
    assert 'node01 mlx5_0/ens1f0np0: PFC enabled on [3,4], policy [3]' in result['differences']
    assert 'node01 mlx5_0/ens1f0np0: MTU 1500, policy 9000' in result['differences']
    assert fake.writes() == []
    # what the NIC holds, for the cluster-wide comparison with the switches
    nic = result['interfaces'][0]
    assert nic['mtu'] == 1500
    assert nic['qos']['pfc'] == [3, 4] and nic['qos']['trust'] == 'dscp' and nic['qos']['dscp2prio'][26] == [3]


def test_apply_dcb_backend_on_eight_rails(tree, tools):
    names = fakes.make_rails(tree[0])
    fakes.make_rdma_cm(tree[1], ['mlx5_%d' % rail for rail in range(8)], tos='106', mode='RoCE v2')
    before = ''.join(fakes.fixture('dcb', name) for name in ('app_show_numeric.txt', 'pfc_show_prio67.txt', 'ets_show_33_33_34.txt'))
    reply = {'before': before, 'after': fakes.fixture('dcb', 'policy_compliant.txt')}
    fake = tools({'dcb': dict((name, reply) for name in names)})
    result = host(tree, names, fake).apply()
    assert result['backend'] == 'dcb' and result['changed'] is True
    writes = [call for call in fake.writes() if call[4] == names[7]]
    assert writes == [
        ['dcb', 'app', 'replace', 'dev', names[7], 'dscp-prio', '26:3', '48:6'],
        ['dcb', 'pfc', 'set', 'dev', names[7], 'prio-pfc', '0:off', '1:off', '2:off', '3:on', '4:off', '5:off', '6:off', '7:off'],
        ['dcb', 'ets', 'set', 'dev', names[7], 'prio-tc', '0:0', '1:1', '2:2', '3:3', '4:4', '5:5', '6:6', '7:7',
         'tc-tsa', '0:ets', '1:ets', '2:ets', '3:ets', '4:ets', '5:ets', '6:strict', '7:ets',
         'tc-bw', '0:50', '1:0', '2:0', '3:50', '4:0', '5:0', '6:0', '7:0'],
    ]
    assert len(fake.writes()) == 24
    assert 'node01 mlx5_7/ens8f0np0: the driver exposes no ecn/roce_np, roce_rp switches; ECN stays at the driver default' \
        in result['warnings']
    assert host(tree, names, fake).verify()['differences'] == []


def test_failing_tool_is_reported_with_its_message(tree, tools):
    fakes.make_nic(tree[0], IF0, ibdev='mlx5_0')
    fake = tools({'dcb': {IF0: {'rc': 1, 'stderr': 'Attribute read: Operation not supported\n'}}})
    with pytest.raises(roce_host.HostError) as error:
        host(tree, [IF0], fake).verify()
    assert str(error.value) == ('%s -N app show dev %s dscp-prio failed (rc 1): Attribute read: Operation not supported'
                                % (fake.which('dcb'), IF0))


def test_backend_choice(tree, tools):
    fakes.make_nic(tree[0], IF0, ibdev='mlx5_0')
    both = tools(dict(mlnx('policy_compliant.txt'), dcb={}))
    assert host(tree, [IF0], both).backend().name == 'mlnx_qos'
    assert host(tree, [IF0], both, backend='dcb').backend().name == 'dcb'
    with pytest.raises(roce_host.HostError) as error:
        host(tree, [IF0]).backend()
    assert str(error.value) == 'neither mlnx_qos (mlnx-tools) nor dcb (iproute2) is installed'
    with pytest.raises(roce_host.HostError) as error:
        host(tree, [IF0], backend='mlnx_qos').backend()
    assert str(error.value) == 'mlnx_qos is not installed (mlnx-tools from DOCA)'


def test_no_capable_nic_changes_nothing(tree):
    fakes.make_nic(tree[0], 'eth1')
    result = host(tree, ['eth1']).apply()
    assert result['capable_interfaces'] == [] and result['changed'] is False and result['backend'] is None


def test_missing_rdma_cm_fails_apply_and_shows_in_verify(tree, tools):
    fakes.make_nic(tree[0], IF0, ibdev='mlx5_0', ecn='1', cnp=('48', '6'))
    fake = tools(mlnx('policy_compliant.txt'))
    with pytest.raises(roce_host.HostError) as error:
        host(tree, [IF0], fake).apply()
    assert 'rdma_cm is missing: load rdma_cm (modprobe rdma_cm)' in str(error.value)
    differences = host(tree, [IF0], fake).verify()['differences']
    assert differences == ['node01 mlx5_0/ens1f0np0: RDMA-CM defaults not set: %s' % error.value]


def test_rdma_cm_device_directory_is_created_first(tree):
    fakes.make_rdma_cm(tree[1])
    nic = {'ibdev': 'mlx5_0', 'port': 1}
    actions, changes = roce_host.plan_rdma_cm(str(tree[1]), nic, POLICY)
    device = str(tree[1] / 'rdma_cm' / 'mlx5_0')
    assert actions == [('mkdir', device),
                       ('write', device + '/ports/1/default_roce_mode', 'RoCE v2'),
                       ('write', device + '/ports/1/default_roce_tos', '106')]
    assert changes[1] == 'RDMA-CM default ToS unset (no %s), policy 106' % device


def test_verify_saved_outputs_runs_nothing():
    outputs = {IF0: fakes.fixture('mlnx_qos', 'pfc_3_4.txt'), 'ens2f0np0': fakes.fixture('dcb', 'policy_compliant.txt')}
    result = roce_host.verify_saved(outputs, POLICY, host='node07')
    assert 'node07 ens1f0np0: PFC enabled on [3,4], policy [3]' in result['differences']
    assert all(diff.startswith('node07 ens1f0np0: ') for diff in result['differences'])


# --- boot-time script (roles/roce_qos/files/roce_qos_apply.py) -------------------------------------

def write_config(tmp_path, interfaces, **extra):
    path = tmp_path / 'roce-qos.json'
    path.write_text(json.dumps(dict({'policy': POLICY, 'interfaces': interfaces, 'backend': 'auto'}, **extra)))
    return str(path)


def cli(tree, config, *args):
    return apply_script.main([args[0], '--config', config, '--sysfs-root', str(tree[0]),
                              '--configfs-root', str(tree[1]), '--lock', ''] + list(args[1:]))


def test_cli_apply_then_verify(tmp_path, tree, tools, capsys):
    fakes.make_nic(tree[0], IF0, ibdev='mlx5_0', ecn='0', cnp=('48', '6'))
    fakes.make_rdma_cm(tree[1], ['mlx5_0'])
    tools(mlnx('os_controlled_vendor.txt', 'policy_compliant.txt'))
    config = write_config(tmp_path, [IF0])
    assert cli(tree, config, 'apply') == 0
    out = capsys.readouterr().out
    assert ' mlx5_0/ens1f0np0: traffic class 6 uses vendor, policy strict' in out
    assert 'differs' not in out
    assert cli(tree, config, 'verify') == 0


def test_cli_exit_codes(tmp_path, tree, tools, capsys):
    fakes.make_nic(tree[0], IF0, ibdev='mlx5_0', ecn='1', cnp=('48', '6'))
    fakes.make_nic(tree[0], 'eth1')
    fakes.make_rdma_cm(tree[1], ['mlx5_0'], tos='106', mode='RoCE v2')
    tools(mlnx('pfc_3_4.txt'))
    config = write_config(tmp_path, [IF0, 'eth1'])
    assert cli(tree, config, 'verify') == 1
    assert 'differs: ' in capsys.readouterr().out
    assert cli(tree, config, 'apply', '--interface', 'eth9') == 0
    assert capsys.readouterr().out == 'eth9 is not a fabric interface in %s: nothing to do\n' % config
    assert cli(tree, config, 'apply', '--interface', 'eth1') == 0
    assert 'no RoCE-capable NIC; checked eth1 (no RDMA device' in capsys.readouterr().out
    assert cli(tree, str(tmp_path / 'missing.json'), 'apply') == 2


def test_script_runner_reports_a_missing_command():
    assert apply_script.run(['/nonexistent/mlnx_qos', '-i', 'eth0'])[0] == 127
    assert apply_script.run(['sh', '-c', 'echo out; echo err >&2; exit 3']) == (3, 'out\n', 'err\n')


def test_cli_json_detect(tmp_path, tree, capsys):
    names = fakes.make_rails(tree[0], count=2)
    assert cli(tree, write_config(tmp_path, names), 'detect', '--json') == 0
    result = json.loads(capsys.readouterr().out)
    assert result['capable_interfaces'] == names and result['traffic_class'] == 106
