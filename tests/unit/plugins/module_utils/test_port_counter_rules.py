# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""port_counters: recorded ethtool -S outputs, sysfs counter trees, deltas over a job and the fatal and warning rules."""

from __future__ import annotations

import json

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils import port_counters
from ansible_collections.hpcfabric.cluster.plugins.module_utils.port_counters import (
    EthtoolParseError,
    counters_report,
    parse_ethtool_stats,
    read_port,
    rule_problems,
)


def write_tree(root, files):
    """Write {relative path: text} under root, as sysfs presents counters (one number per file)."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_mlx5_head_has_no_flow_control_counter_and_every_line_reads(fixture_text):
    values, unreadable = parse_ethtool_stats(fixture_text('ethtool', 'mlx5_cx4_ubuntu1804_head.txt'))
    assert (values, unreadable) == ({}, [])


def test_ice_per_priority_xon_xoff_without_header(fixture_text):
    values, unreadable = parse_ethtool_stats(fixture_text('ethtool', 'ice_e810_grep_prio.txt'))
    assert unreadable == []
    assert len(values) == 32
    assert values['ethtool/tx_priority_2_xoff.nic'] == 14864
    assert values['ethtool/tx_priority_3_xoff.nic'] == 6434
    assert values['ethtool/rx_priority_3_xoff.nic'] == 0


def test_mlx5_pause_names_of_the_kernel_documentation_are_kept_and_traffic_is_not():
    # names from the kernel's mlx5 counters.rst; the queue-prefixed line is the form bnx2x prints (ethq issue 6)
    text = ('NIC statistics:\n     rx_bytes: 10\n     rx_prio3_pause: 5\n     tx_prio3_pause: 7\n'
            '     rx_prio3_pause_duration: 900\n     rx_pause_ctrl_phy: 5\n     [0]: tx_bytes: 3\n')
    values, unreadable = parse_ethtool_stats(text)
    assert values == {'ethtool/rx_prio3_pause': 5, 'ethtool/tx_prio3_pause': 7,
                      'ethtool/rx_prio3_pause_duration': 900, 'ethtool/rx_pause_ctrl_phy': 5}
    assert unreadable == []


def test_partly_unreadable_text_gives_the_rest_and_names_the_lines(fixture_text):
    text = fixture_text('ethtool', 'ice_e810_grep_prio.txt') + '     rx_pfc_duration_us: 1,247\n'
    values, unreadable = parse_ethtool_stats(text)
    assert len(values) == 32
    assert unreadable == [(33, '     rx_pfc_duration_us: 1,247')]


def test_terminal_escapes_of_a_pasted_copy_are_removed(fixture_text):
    text = fixture_text('ethtool', 'ice_e810_grep_prio.txt').replace('tx_priority_2_xoff.nic', '\x1b[01;31mtx_priority_2_xoff\x1b[m.nic')
    values, unreadable = parse_ethtool_stats(text)
    assert (values['ethtool/tx_priority_2_xoff.nic'], unreadable) == (14864, [])


@pytest.mark.parametrize('text', ['', 'NIC statistics:\n', 'Cannot get stats strings information: Operation not supported\n'])
def test_text_without_any_counter_fails_naming_the_line(text):
    with pytest.raises(EthtoolParseError) as caught:
        parse_ethtool_stats(text)
    assert 'no "name: value" counter line' in str(caught.value)
    if text.startswith('Cannot'):
        assert caught.value.lineno == 1 and caught.value.line.startswith('Cannot get stats')


def test_read_port_takes_netdev_statistics_and_the_rdma_port_counters(tmp_path):
    # port_rcv_data is mlx5_1's value in leptonai/gpud's recorded H100 tree (see fixtures/sysfs/SOURCES.md)
    write_tree(tmp_path, {
        'class/net/ens1f0np0/statistics/rx_bytes': '2195783498134\n',
        'class/net/ens1f0np0/statistics/tx_packets': '896117891\n',
        'class/infiniband/mlx5_1/ports/1/counters/port_rcv_data': '205128687774249\n',
        'class/infiniband/mlx5_1/ports/1/counters/link_downed': '0\n',
        'class/infiniband/mlx5_1/ports/1/hw_counters/np_cnp_sent': '7\n',
        'class/infiniband/mlx5_1/ports/1/hw_counters/lifespan': '10\n',
    })
    port = read_port(str(tmp_path / 'class/net'), str(tmp_path / 'class/infiniband'), 'ens1f0np0', 'mlx5_1:1')
    assert port == {'rdma_port': 'mlx5_1:1', 'counters': {
        'statistics/rx_bytes': 2195783498134, 'statistics/tx_packets': 896117891,
        'counters/port_rcv_data': 205128687774249, 'counters/link_downed': 0, 'hw_counters/np_cnp_sent': 7}}


def test_read_port_of_a_netdev_without_rdma_leaves_out_unreadable_files(tmp_path):
    write_tree(tmp_path, {'class/net/fab0/statistics/rx_bytes': '42\n',
                          'class/net/fab0/statistics/broken': 'not a number\n'})
    port = read_port(str(tmp_path / 'class/net'), str(tmp_path / 'class/infiniband'), 'fab0', None)
    assert port == {'rdma_port': None, 'counters': {'statistics/rx_bytes': 42}}


def read(at, ports):
    return {'read_at': at, 'ports': dict((name, {'rdma_port': rdma, 'counters': counters})
                                         for name, (rdma, counters) in ports.items())}


def test_deltas_keep_what_moved_and_pass_without_fatal_counters():
    reads = {'node01': {'allreduce': {
        'before': read(100.0, {'fab0': (None, {'statistics/rx_bytes': 1000, 'statistics/rx_dropped': 3})}),
        'after': read(112.5, {'fab0': (None, {'statistics/rx_bytes': 51000, 'statistics/rx_dropped': 3})})}}}
    report = counters_report(reads, ['link_downed'], {'symbol_error': 10})
    assert report['passed'] is True
    assert report['findings'] == [] and report['unread'] == []
    assert report['jobs'] == [{'name': 'allreduce', 'hosts': {'node01': {'seconds': 12.5, 'ports': {
        'fab0': {'rdma_port': None, 'deltas': {'statistics/rx_bytes': 50000}, 'went_back': [], 'saturated': []}}}}}]
    assert report['summary'] == 'no fatal counter rose on 1 hosts'


def test_a_link_down_during_the_job_is_fatal_and_names_host_and_port():
    before = read(0.0, {'ens1f0np0': ('mlx5_0:1', {'counters/link_downed': 2, 'counters/symbol_error': 0})})
    after = read(10.0, {'ens1f0np0': ('mlx5_0:1', {'counters/link_downed': 3, 'counters/symbol_error': 5})})
    report = counters_report({'node02': {'allreduce on all nodes': {'before': before, 'after': after}}},
                             list(port_counters.DEFAULT_FATAL), dict(port_counters.DEFAULT_WARN_RATES))
    assert report['passed'] is False
    assert [finding['severity'] for finding in report['findings']] == ['fatal']
    finding = report['findings'][0]
    assert (finding['host'], finding['port'], finding['rdma_port'], finding['counter'], finding['delta']) == (
        'node02', 'ens1f0np0', 'mlx5_0:1', 'counters/link_downed', 1)
    assert report['summary'] == 'node02 ens1f0np0 (mlx5_0:1): counters/link_downed rose by 1 during allreduce on all nodes'


def test_a_rate_above_its_limit_warns_with_the_rate_and_a_rate_below_does_not():
    before = read(0.0, {'p0': ('mlx5_0:1', {'counters/symbol_error': 0, 'counters/port_xmit_discards': 0})})
    after = read(4.0, {'p0': ('mlx5_0:1', {'counters/symbol_error': 60, 'counters/port_xmit_discards': 400})})
    report = counters_report({'n1': {'job': {'before': before, 'after': after}}}, [],
                             {'symbol_error': 10, 'counters/port_xmit_discards': 100})
    assert report['passed'] is True
    assert [(f['severity'], f['counter'], f['rate_per_s'], f['limit_per_s']) for f in report['findings']] == [
        ('warning', 'counters/symbol_error', 15.0, 10)]
    assert report['findings'][0]['message'] == 'n1 p0 (mlx5_0:1): counters/symbol_error at 15/s over the 4 s of job, above 10/s'
    assert report['summary'] == ('no fatal counter rose on 1 hosts; 1 warnings: '
                                 'n1 p0 (mlx5_0:1): counters/symbol_error at 15/s over the 4 s of job, above 10/s')


def test_the_summary_names_the_first_warnings_and_counts_them_all():
    before = read(0.0, dict(('p%d' % index, (None, {'statistics/rx_dropped': 0})) for index in range(7)))
    after = read(1.0, dict(('p%d' % index, (None, {'statistics/rx_dropped': 50})) for index in range(7)))
    report = counters_report({'n1': {'job': {'before': before, 'after': after}}}, [], {'rx_dropped': 1})
    assert len(report['findings']) == 7
    assert report['summary'].startswith('no fatal counter rose on 1 hosts; 7 warnings: n1 p0: statistics/rx_dropped')
    assert report['summary'].count('rx_dropped') == port_counters.SUMMARY_WARNINGS
    assert report['summary'].endswith('; ...')


def test_a_counter_that_went_back_has_no_delta_and_no_finding():
    before = read(0.0, {'p0': ('mlx5_0:1', {'counters/link_downed': 4})})
    after = read(1.0, {'p0': ('mlx5_0:1', {'counters/link_downed': 0})})
    report = counters_report({'n1': {'job': {'before': before, 'after': after}}}, ['link_downed'], {})
    port = report['jobs'][0]['hosts']['n1']['ports']['p0']
    assert (port['deltas'], port['went_back'], report['passed']) == ({}, ['counters/link_downed'], True)


def test_a_host_without_its_after_read_is_listed_as_unread():
    reads = {'n1': {'job': {'before': read(0.0, {'p0': (None, {'statistics/rx_bytes': 1})})}}}
    report = counters_report(reads, [], {})
    assert report['unread'] == [{'job': 'job', 'host': 'n1'}]
    assert report['jobs'] == [{'name': 'job', 'hosts': {}}]


@pytest.mark.parametrize('fatal, rates, expected', [
    (['link_downed'], {'symbol_error': 10}, []),
    ('link_downed', {}, ["validate_counters_fatal must be a list of counter names, got 'link_downed'"]),
    ([], {'symbol_error': 'ten', 'roce_slow_restart': -1}, [
        "validate_counters_warn_rates.roce_slow_restart must be a number of events per second >= 0, got -1",
        "validate_counters_warn_rates.symbol_error must be a number of events per second >= 0, got 'ten'"]),
    ([], [10], ['validate_counters_warn_rates must map counter names to rates per second, got [10]']),
])
def test_rule_problems_name_the_variable(fatal, rates, expected):
    assert rule_problems(fatal, rates) == expected


def test_report_refuses_bad_rules():
    with pytest.raises(ValueError, match='validate_counters_warn_rates.symbol_error'):
        counters_report({}, [], {'symbol_error': True})


def recorded_counters(fixture_text):
    """``{file name: text}`` of the recorded ``cat`` of an H100 host's mlx5_1 port counters (fixtures/ib_counters)."""
    text = fixture_text('ib_counters', 'h100-cx7-mlx5_1-counters.txt')
    files = {}
    for block in text.split('=== ./')[1:]:
        name, dummy, value = block.partition(' ===\n')
        files[name] = value.strip() + '\n'
    return files


def recorded_port(tmp_path, fixture_text, change=None):
    """The recorded counters as sysfs presents them, read by read_port; ``change`` replaces or drops (None) files."""
    files = dict(recorded_counters(fixture_text), **(change or {}))
    write_tree(tmp_path, dict(('class/infiniband/mlx5_1/ports/1/counters/%s' % name, text)
                              for name, text in files.items() if text is not None))
    return read_port(str(tmp_path / 'class/net'), str(tmp_path / 'class/infiniband'), 'ibp1s0', 'mlx5_1:1')


def test_the_widths_cover_every_narrow_file_of_the_kernel_portcounters_table():
    # the widths the rule knows are every narrow file the kernel's PortCounters table shows
    assert sorted(port_counters.PORT_COUNTER_BITS) == sorted([
        'symbol_error', 'link_error_recovery', 'link_downed', 'port_rcv_errors', 'port_rcv_remote_physical_errors',
        'port_rcv_switch_relay_errors', 'port_xmit_discards', 'port_xmit_constraint_errors',
        'port_rcv_constraint_errors', 'local_link_integrity_errors', 'excessive_buffer_overrun_errors', 'VL15_dropped',
        'port_xmit_wait'])


def test_recorded_counters_at_their_maximum_are_saturated_not_unchanged(tmp_path, fixture_text):
    port = recorded_port(tmp_path, fixture_text)
    assert len(port['counters']) == 21
    # the same read before and after a job, as counters stuck at their maximum give
    assert port_counters.saturated_counters(port['counters'], port['counters']) == {
        'counters/excessive_buffer_overrun_errors': (15, 4), 'counters/link_downed': (255, 8),
        'counters/port_xmit_discards': (65535, 16), 'counters/port_xmit_wait': (4294967295, 32)}
    job = {'before': {'read_at': 0.0, 'ports': {'ibp1s0': port}}, 'after': {'read_at': 30.0, 'ports': {'ibp1s0': port}}}
    reads = {'gpu07': {'allreduce': job}}
    report = counters_report(reads, list(port_counters.DEFAULT_FATAL), dict(port_counters.DEFAULT_WARN_RATES))
    assert [(f['severity'], f['counter'], f['value'], f['bits']) for f in report['findings']] == [
        ('saturated', 'counters/excessive_buffer_overrun_errors', 15, 4),
        ('saturated', 'counters/link_downed', 255, 8),
        ('saturated', 'counters/port_xmit_discards', 65535, 16),
        ('saturated', 'counters/port_xmit_wait', 4294967295, 32)]
    finding = report['findings'][1]
    assert finding['message'] == (
        'gpu07 ibp1s0 (mlx5_1:1): counters/link_downed is saturated at 255, the most its 8-bit field holds: it no '
        'longer counts, so whether it rose during allreduce is unknown')
    assert finding['action'].startswith("reset the port's counters so they count again (as root: perfquery -C mlx5_1 "
                                        "-P 1 -R; perfquery -x reads the 64-bit extended counters")
    assert report['findings'][2]['message'].endswith('so what it did during allreduce is unknown')
    assert report['jobs'][0]['hosts']['gpu07']['ports']['ibp1s0']['saturated'] == [
        'counters/excessive_buffer_overrun_errors', 'counters/link_downed', 'counters/port_xmit_discards',
        'counters/port_xmit_wait']
    # the node warns, the validation is not failed by it, and the summary no longer says the fatal counters are fine
    assert report['passed'] is True
    assert report['summary'] == (
        'no fatal counter that can count rose on 1 hosts; 4 saturated (at their maximum they no longer count; reset '
        'them): gpu07 ibp1s0 (mlx5_1:1): counters/excessive_buffer_overrun_errors at 15; gpu07 ibp1s0 (mlx5_1:1): '
        'counters/link_downed at 255; gpu07 ibp1s0 (mlx5_1:1): counters/port_xmit_discards at 65535; gpu07 ibp1s0 '
        '(mlx5_1:1): counters/port_xmit_wait at 4294967295')


def test_below_their_maximum_the_recorded_counters_are_not_saturated(tmp_path, fixture_text):
    port = recorded_port(tmp_path, fixture_text, {'excessive_buffer_overrun_errors': '14\n', 'link_downed': '254\n',
                                                  'port_xmit_discards': '65534\n', 'port_xmit_wait': '4294967294\n'})
    assert port_counters.saturated_counters(port['counters'], port['counters']) == {}


def test_a_fatal_counter_that_reaches_its_maximum_during_the_job_rose_by_at_least_its_delta():
    before = read(0.0, {'ib0': ('mlx5_0:1', {'counters/link_downed': 250})})
    after = read(10.0, {'ib0': ('mlx5_0:1', {'counters/link_downed': 255})})
    report = counters_report({'n1': {'job': {'before': before, 'after': after}}}, ['link_downed'], {})
    assert [(f['severity'], f['delta']) for f in report['findings']] == [('fatal', 5), ('saturated', 5)]
    assert report['findings'][0]['message'] == 'n1 ib0 (mlx5_0:1): counters/link_downed rose by at least 5 during job'
    assert report['passed'] is False
    assert report['summary'].startswith('n1 ib0 (mlx5_0:1): counters/link_downed rose by at least 5 during job; '
                                        '1 saturated')


def test_a_counter_stuck_over_several_jobs_is_named_once():
    stuck = read(0.0, {'ib0': ('mlx5_0:1', {'counters/symbol_error': 65535})})
    reads = {'n1': {'allreduce': {'before': stuck, 'after': stuck}, 'pairs': {'before': stuck, 'after': stuck}}}
    report = counters_report(reads, [], {'symbol_error': 10})
    assert [(f['job'], f['counter']) for f in report['findings']] == [('allreduce', 'counters/symbol_error')]
    assert [job['hosts']['n1']['ports']['ib0']['saturated'] for job in report['jobs']] == [
        ['counters/symbol_error'], ['counters/symbol_error']]
    # no fatal counter is among them: the usual words stay
    assert report['summary'].startswith('no fatal counter rose on 1 hosts; 1 saturated')


@pytest.mark.parametrize('extended, moved, saturated', [
    (False, False, ['counters/port_xmit_data']),
    # a 32-bit data counter that moved is not stuck; nor is a 64-bit one, which can pass 2**32 - 1 on its way up
    (False, True, []),
    (True, False, []),
])
def test_a_data_counter_is_saturated_only_where_it_is_32_bit_and_stuck(extended, moved, saturated):
    top = 2 ** 32 - 1
    counters = {'counters/port_xmit_data': top}
    if extended:
        counters['counters/unicast_xmit_packets'] = 5
    after = dict(counters, **({'counters/port_xmit_data': top} if not moved else {}))
    before = dict(counters, **({'counters/port_xmit_data': top - 100} if moved else {}))
    assert sorted(port_counters.saturated_counters(before, after)) == saturated


def test_netdev_and_hw_counters_are_never_saturated():
    values = {'statistics/rx_errors': 65535, 'hw_counters/out_of_buffer': 4294967295, 'ethtool/rx_prio3_pause': 255}
    assert port_counters.saturated_counters(values, values) == {}


def test_the_report_names_saturated_counters_of_reads_that_went_through_json(tmp_path, fixture_text):
    # the reads as the role keeps them: registered module results, through Ansible's JSON
    port = json.loads(json.dumps(recorded_port(tmp_path, fixture_text)))
    job = {'before': {'read_at': 5.0, 'ports': {'ibp1s0': port}}, 'after': {'read_at': 65.0, 'ports': {'ibp1s0': port}}}
    report = port_counters.counters_report({'gpu07': {'smoke training': job}}, ['link_downed'], {'port_xmit_discards': 100})
    assert [(f['severity'], f['counter']) for f in report['findings']] == [
        ('saturated', 'counters/excessive_buffer_overrun_errors'), ('saturated', 'counters/link_downed'),
        ('saturated', 'counters/port_xmit_discards'), ('saturated', 'counters/port_xmit_wait')]
    assert 'whether it rose during smoke training is unknown' in report['findings'][1]['message']
    assert 'what it did during smoke training is unknown' in report['findings'][0]['message']
