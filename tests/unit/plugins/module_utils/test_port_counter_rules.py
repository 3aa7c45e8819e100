# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""port_counters: recorded ethtool -S outputs, sysfs counter trees, deltas over a job and the fatal and warning rules."""

from __future__ import annotations

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
        'fab0': {'rdma_port': None, 'deltas': {'statistics/rx_bytes': 50000}, 'went_back': []}}}}}]
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
