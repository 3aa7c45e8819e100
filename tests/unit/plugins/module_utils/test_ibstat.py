# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""ibstat parser on recorded outputs (tests/unit/fixtures/ibstat, see SOURCES.md there)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.ibstat import (
    IbstatParseError,
    new_device,
    parse_ibstat,
    parse_rate,
    summarize,
)


def parsed(fixture_text, name):
    return parse_ibstat(fixture_text('ibstat', name))


@pytest.mark.parametrize('name, ca_names, active, min_rate, link_layers', [
    ('h100_ndr_mixed_tabs.txt',
     ['mlx5_0', 'mlx5_1', 'mlx5_10', 'mlx5_11', 'mlx5_2', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_7',
      'mlx5_8', 'mlx5_9'], 9, 100, ['Ethernet', 'InfiniBand']),
    ('a100_hdr_ibpanic.txt', ['mlx5_%d' % i for i in range(8)], 8, 200, ['InfiniBand']),
    ('cx3_dual_port_polling_disabled.txt', ['mlx4_0'], 0, None, ['Ethernet', 'InfiniBand']),
    ('cx3_fdr56_ibwarn_tabs.txt', ['mlx4_0'], 1, 56, ['InfiniBand']),
    ('cx3_qdr_noindent.txt', ['mlx4_0'], 1, 40, ['InfiniBand']),
    ('cx6_hdr_initializing.txt', ['mlx5_7'], 0, None, ['InfiniBand']),
    ('cx6dx_eth_100_two_cas.txt', ['mlx5_0', 'mlx5_1'], 2, 100, ['Ethernet']),
    ('cx6dx_eth_rate_2_5.txt', ['mlx5_2'], 1, 2.5, []),
    ('single_port_form_noindent.txt', ['mlx4_0'], 0, None, []),
    ('sriov_vf_rate_25_elided.txt', ['mlx5_8'], 0, None, ['Ethernet']),
    ('cx3_fdr56_two_cas.txt', ['mlx4_0', 'mlx4_1'], 4, 56, ['InfiniBand']),
    ('cx3_fdr56_two_cas_short_s.txt', ['mlx4_0', 'mlx4_1'], 0, None, []),
    ('cx3_fdr56_two_cas_list_l.txt', ['mlx4_0', 'mlx4_1'], 0, None, []),
    ('single_ca_list_l.txt', ['mlx4_0'], 0, None, []),
    ('cx3_fdr56_two_cas_ports_p.txt', [], 0, None, []),
])
def test_summaries_per_fixture(fixture_text, name, ca_names, active, min_rate, link_layers):
    devices, dummy = parsed(fixture_text, name)
    facts = summarize(devices, 'ibstat')
    assert facts['ca_names'] == ca_names
    assert facts['active_ports'] == active
    assert facts['min_active_rate_gbps'] == min_rate
    assert facts['link_layers'] == link_layers
    assert facts['source'] == 'ibstat'


def test_tab_indented_h100_orders_mlx5_10_before_mlx5_2(fixture_text):
    devices, warnings = parsed(fixture_text, 'h100_ndr_mixed_tabs.txt')
    names = summarize(devices, 'ibstat')['ca_names']
    assert names.index('mlx5_10') < names.index('mlx5_2')
    assert warnings == []
    assert devices['mlx5_0'] == {
        'node_type': 'CA', 'ca_type': 'MT4129', 'num_ports': 1, 'firmware_version': '28.39.1002',
        'hardware_version': '0', 'node_guid': '0x946dae0300cde72c', 'system_image_guid': '0x946dae0300cde72c',
        'ports': {'1': {
            'state': 'Active', 'physical_state': 'LinkUp', 'rate_gbps': 400, 'link_layer': 'InfiniBand',
            'base_lid': 75, 'sm_lid': 334, 'lmc': 0, 'port_guid': '0x946dae0300cde72c',
            'netdev': None, 'roce_v2_gid_index': None}},
    }
    down = devices['mlx5_2']['ports']['1']
    assert (down['state'], down['physical_state'], down['rate_gbps'], down['link_layer']) == \
        ('Down', 'Disabled', 40, 'Ethernet')
    assert devices['mlx5_1']['ports']['1']['port_guid'] == '0x966daefffec2b690'


def test_rates_are_int_except_sdr(fixture_text):
    hdr = parsed(fixture_text, 'a100_hdr_ibpanic.txt')[0]['mlx5_0']['ports']['1']['rate_gbps']
    sdr = parsed(fixture_text, 'cx6dx_eth_rate_2_5.txt')[0]['mlx5_2']['ports']['1']['rate_gbps']
    assert hdr == 200 and isinstance(hdr, int)
    assert sdr == 2.5 and isinstance(sdr, float)


def test_trailing_ibpanic_keeps_cas_and_warns_with_the_line(fixture_text):
    devices, warnings = parsed(fixture_text, 'a100_hdr_ibpanic.txt')
    assert devices['mlx5_7']['ports']['1']['base_lid'] == 13305
    assert devices['mlx5_0']['ports']['1']['port_guid'] == '0x00155dfffd3411eb'
    assert devices['mlx5_0']['system_image_guid'] == '0xb83fd203006e2704'
    assert warnings == [
        "ibstat: ignored unreadable line 137: "
        "\"ibpanic: [1400444] main: stat of IB device 'mlx5_8' failed: No such file or directory\""]


def test_space_indented_two_port_ca_polling_and_disabled(fixture_text):
    devices, warnings = parsed(fixture_text, 'cx3_dual_port_polling_disabled.txt')
    ca = devices['mlx4_0']
    assert (ca['ca_type'], ca['num_ports'], ca['firmware_version'], ca['hardware_version']) == \
        ('MT4099', 2, '2.42.5000', '1')
    assert sorted(ca['ports']) == ['1', '2']
    ib, eth = ca['ports']['1'], ca['ports']['2']
    assert (ib['state'], ib['physical_state'], ib['rate_gbps'], ib['link_layer'], ib['port_guid']) == \
        ('Down', 'Polling', 10, 'InfiniBand', '0xe41d2d03007b4081')
    assert (eth['state'], eth['physical_state'], eth['rate_gbps'], eth['link_layer'], eth['port_guid']) == \
        ('Down', 'Disabled', 40, 'Ethernet', '0xe61d2dfffe7b4082')
    assert warnings == []


def test_leading_ibwarn_lines_and_truncated_second_port(fixture_text):
    devices, warnings = parsed(fixture_text, 'cx3_fdr56_ibwarn_tabs.txt')
    ports = devices['mlx4_0']['ports']
    assert (ports['1']['state'], ports['1']['physical_state'], ports['1']['base_lid'], ports['1']['sm_lid']) == \
        ('Down', 'Disabled', 38, 13)
    assert (ports['2']['state'], ports['2']['physical_state'], ports['2']['rate_gbps']) == ('Active', 'LinkUp', 56)
    assert ports['2']['base_lid'] is None and ports['2']['link_layer'] is None
    assert len(warnings) == 4
    assert warnings[0] == "ibstat: ignored unreadable line 1: 'ibwarn: [168988] umad_init: umad_init'"
    assert all('ibwarn' in warning for warning in warnings)


def test_ellipsis_lines_from_an_edited_paste_are_warned(fixture_text):
    devices, warnings = parsed(fixture_text, 'sriov_vf_rate_25_elided.txt')
    port = devices['mlx5_8']['ports']['1']
    assert (port['state'], port['physical_state'], port['rate_gbps'], port['link_layer']) == \
        ('Down', 'Disabled', 25, 'Ethernet')
    assert devices['mlx5_8']['firmware_version'] == 'xx.xx.xxxx'
    assert devices['mlx5_8']['node_guid'] == '0x0000000000000000'
    assert warnings == ["ibstat: ignored unreadable line 1: '...'", "ibstat: ignored unreadable line 19: '...'"]


def test_single_port_form_without_indentation(fixture_text):
    devices, warnings = parsed(fixture_text, 'single_port_form_noindent.txt')
    ca = devices['mlx4_0']
    assert ca['ca_type'] is None and ca['num_ports'] is None
    assert list(ca['ports']) == ['2']
    port = ca['ports']['2']
    assert (port['state'], port['physical_state'], port['rate_gbps'], port['base_lid'], port['port_guid']) == \
        ('Down', 'Polling', 10, 0, '0x0002c903005a7b7e')
    assert port['link_layer'] is None
    assert warnings == []


def test_unindented_full_output(fixture_text):
    devices, dummy = parsed(fixture_text, 'cx3_qdr_noindent.txt')
    ca = devices['mlx4_0']
    assert (ca['ca_type'], ca['firmware_version'], ca['node_guid']) == ('MT4099', '2.10.0', '0x0002c9030031fdc0')
    port = ca['ports']['1']
    assert (port['state'], port['rate_gbps'], port['base_lid'], port['sm_lid'], port['link_layer']) == \
        ('Active', 40, 1, 1, 'InfiniBand')


def test_initializing_state(fixture_text):
    port = parsed(fixture_text, 'cx6_hdr_initializing.txt')[0]['mlx5_7']['ports']['1']
    assert (port['state'], port['physical_state'], port['rate_gbps'], port['base_lid']) == \
        ('Initializing', 'LinkUp', 200, 65535)


def test_port_without_link_layer_line_keeps_other_fields(fixture_text):
    devices, warnings = parsed(fixture_text, 'cx6dx_eth_rate_2_5.txt')
    port = devices['mlx5_2']['ports']['1']
    assert port['link_layer'] is None
    assert port['port_guid'] == '0xbacef6fffe71f6fc'
    assert warnings == []


def test_list_form_gives_ca_names_and_says_what_is_missing(fixture_text):
    devices, warnings = parsed(fixture_text, 'cx3_fdr56_two_cas_list_l.txt')
    assert devices == {'mlx4_0': new_device(), 'mlx4_1': new_device()}
    assert warnings == [
        'ibstat: the text is the `ibstat -l` form (CA names only): mlx4_0, mlx4_1; type, firmware, GUIDs and '
        'every port fact (state, rate, link layer) are missing: save plain `ibstat` output for those']
    # the same CAs as the full output of that machine, none of its facts
    full, dummy = parsed(fixture_text, 'cx3_fdr56_two_cas.txt')
    assert sorted(devices) == sorted(full)


def test_list_form_of_one_ca_without_trailing_newline(fixture_text):
    devices, warnings = parsed(fixture_text, 'single_ca_list_l.txt')
    assert list(devices) == ['mlx4_0'] and devices['mlx4_0']['ports'] == {}
    assert len(warnings) == 1 and '`ibstat -l` form' in warnings[0]


def test_port_guid_form_names_the_guids_and_gives_no_devices(fixture_text):
    devices, warnings = parsed(fixture_text, 'cx3_fdr56_two_cas_ports_p.txt')
    assert devices == {}
    full, dummy = parsed(fixture_text, 'cx3_fdr56_two_cas.txt')
    guids = [full[name]['ports'][port]['port_guid'] for name in sorted(full) for port in sorted(full[name]['ports'])]
    assert warnings == [
        'ibstat: the text is the `ibstat -p` form (port GUIDs only): %s; it names no CA, so no device or port '
        'facts are read from it: save plain `ibstat` output for those' % ', '.join(guids)]


def test_short_form_keeps_device_facts_and_says_ports_are_missing(fixture_text):
    devices, warnings = parsed(fixture_text, 'cx3_fdr56_two_cas_short_s.txt')
    full, dummy = parsed(fixture_text, 'cx3_fdr56_two_cas.txt')
    for name in ('mlx4_0', 'mlx4_1'):
        assert devices[name] == dict(full[name], ports={})
    assert len(warnings) == 1
    assert '`ibstat -s` form' in warnings[0] and 'port state, rate, link layer' in warnings[0]


def test_list_form_followed_by_an_error_line(fixture_text):
    # an -l listing pasted together with the ibpanic of a later plain ibstat run
    text = fixture_text('ibstat', 'cx3_fdr56_two_cas_list_l.txt') + fixture_text('ibstat', 'ibpanic_only.txt')
    devices, warnings = parse_ibstat(text)
    assert sorted(devices) == ['mlx4_0', 'mlx4_1']
    assert warnings[1] == ("ibstat: ignored unreadable line 3: "
                           "\"ibpanic: [7851] main: stat of IB device 'mlx5_1' failed: Invalid argument\"")
    assert len(warnings) == 2


def test_terminal_escapes_of_a_pasted_copy_are_removed(fixture_text):
    text = fixture_text('ibstat', 'cx3_fdr56_two_cas.txt')
    coloured = text.replace("CA 'mlx4_1'", "^[[1mCA 'mlx4_1'^[[0m").replace('State: Active', '\x1b[32mState: Active\x1b[0m')
    assert parse_ibstat(coloured) == parse_ibstat(text)


def test_nothing_parseable_names_the_line(fixture_text):
    with pytest.raises(IbstatParseError) as error:
        parsed(fixture_text, 'ibpanic_only.txt')
    assert error.value.lineno == 1
    assert error.value.line == "ibpanic: [7851] main: stat of IB device 'mlx5_1' failed: Invalid argument"
    assert "line 1 is not ibstat output" in str(error.value)
    assert "stat of IB device 'mlx5_1' failed" in str(error.value)


def test_empty_output_is_an_error():
    with pytest.raises(IbstatParseError, match='ibstat printed nothing'):
        parse_ibstat('\n\n')


def test_fewer_ports_than_announced_warns(fixture_text):
    text = fixture_text('ibstat', 'cx3_dual_port_polling_disabled.txt')
    truncated = text[:text.index('        Port 2:')]
    devices, warnings = parse_ibstat(truncated)
    assert list(devices['mlx4_0']['ports']) == ['1']
    assert warnings == ["ibstat: CA 'mlx4_0' has 2 ports but the output lists 1 (truncated output?)"]


def test_non_numeric_lid_is_null_with_a_warning(fixture_text):
    text = fixture_text('ibstat', 'cx3_qdr_noindent.txt').replace('Base lid: 1', 'Base lid: ...')
    devices, warnings = parse_ibstat(text)
    assert devices['mlx4_0']['ports']['1']['base_lid'] is None
    assert warnings == ["ibstat line 12: Base lid '...' is not a number; left null"]


def test_many_unreadable_lines_are_capped(fixture_text):
    text = fixture_text('ibstat', 'cx3_qdr_noindent.txt') + 'garbage\n' * 12
    devices, warnings = parse_ibstat(text)
    assert list(devices) == ['mlx4_0']
    assert len(warnings) == 11
    assert warnings[0] == "ibstat: ignored unreadable line 18: 'garbage'"
    assert warnings[-1] == 'ibstat: 2 more unreadable lines ignored'


@pytest.mark.parametrize('text, expected', [
    ('200', 200), ('2.5', 2.5), ('40 (FDR10)', 40), ('200 Gb/sec (4X HDR)', 200),
    ('2.5 Gb/sec (1X SDR)', 2.5), ('', None), (None, None), ('unknown', None),
])
def test_parse_rate(text, expected):
    value = parse_rate(text)
    assert value == expected
    assert type(value) is type(expected)


def test_summary_of_no_devices():
    assert summarize({}, 'sysfs') == {
        'source': 'sysfs', 'devices': {}, 'ca_names': [], 'active_ports': 0,
        'min_active_rate_gbps': None, 'link_layers': []}


def test_boot_time_copy_of_the_roce_qos_role_imports_alone(tmp_path):
    # the module_utils files roles/roce_qos/tasks/install.yml copies, and only those, beside roce_qos_apply.py
    root = Path(__file__).resolve().parents[4]
    install = (root / 'roles' / 'roce_qos' / 'tasks' / 'install.yml').read_text()
    copied = re.findall(r'plugins/module_utils/(\w+[.]py)"', install)
    assert 'ibstat.py' in copied
    for name in copied:
        shutil.copy(root / 'plugins' / 'module_utils' / name, tmp_path / name)
    code = ('import sys; sys.path.insert(0, "."); import roce_host, ibstat; '
            'print(ibstat.summarize({"mlx5_0": ibstat.new_device()}, "sysfs")["ca_names"])')
    result = subprocess.run([sys.executable, '-I', '-c', code], cwd=str(tmp_path), capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "['mlx5_0']\n"
