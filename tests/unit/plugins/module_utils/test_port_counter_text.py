# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Saved port counter text: perfquery -x of two ports, plain perfquery without its header, rdma statistic wrapped by a
mail and in -p form, both in one file, the port a text is narrowed to, and text of no form."""

from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.port_counter_text import (
    PERFQUERY_COUNTERS,
    parse_perfquery,
    parse_rdma_statistic,
    port_counters,
    read_port_counters,
)

# The counters under /sys/class/infiniband/DEV/ports/N/counters/ (Documentation/ABI/stable/sysfs-class-infiniband)
SYSFS_COUNTERS = {'excessive_buffer_overrun_errors', 'link_downed', 'link_error_recovery', 'local_link_integrity_errors',
                  'multicast_rcv_packets', 'multicast_xmit_packets', 'port_rcv_constraint_errors', 'port_rcv_data',
                  'port_rcv_errors', 'port_rcv_packets', 'port_rcv_remote_physical_errors',
                  'port_rcv_switch_relay_errors', 'port_xmit_constraint_errors', 'port_xmit_data',
                  'port_xmit_discards', 'port_xmit_packets', 'port_xmit_wait', 'symbol_error', 'unicast_rcv_packets',
                  'unicast_xmit_packets', 'VL15_dropped'}


def test_every_perfquery_counter_has_its_sysfs_name():
    assert set(PERFQUERY_COUNTERS.values()) == SYSFS_COUNTERS


def test_perfquery_x_of_two_ports(fixture_text):
    blocks, unreadable = parse_perfquery(fixture_text('perfquery', 'infiniband-exporter-0x7cfe9003009ce5b0-x.out'))
    assert [(b['lid'], b['port'], b['extended'], len(b['counters'])) for b in blocks] == [
        (1719, 1, True, 21), (1719, 2, True, 21)]
    assert unreadable == []
    read = read_port_counters(fixture_text('perfquery', 'infiniband-exporter-0x7cfe9003009ce5b0-x.out'))
    counters, rdma_port = port_counters(read, 'mlx5_0:2')
    assert rdma_port == 'mlx5_0:2'
    assert set(counters) == set('counters/%s' % name for name in SYSFS_COUNTERS)
    assert (counters['counters/port_xmit_data'], counters['counters/port_rcv_packets'],
            counters['counters/port_xmit_wait'], counters['counters/link_downed']) == (
        26006570014026, 93660802641, 36510964, 0)


def test_a_text_of_several_ports_needs_the_port(fixture_text):
    read = read_port_counters(fixture_text('perfquery', 'infiniband-exporter-0x7cfe9003009ce5b0-x.out'))
    with pytest.raises(ValueError, match='the perfquery text is of port 1, 2, not of one port'):
        port_counters(read, None)
    with pytest.raises(ValueError, match='the perfquery text is of port 1, 2, not of mlx5_1:3'):
        port_counters(read, 'mlx5_1:3')


def test_the_prompt_above_perfquery_is_named(fixture_text):
    read = read_port_counters(fixture_text('perfquery', 'infiniband-diags-issue16-rhel75-x.txt'))
    assert read['unreadable'] == [(1, '# perfquery -x 10 1')]
    assert [(b['lid'], b['port']) for b in read['perfquery']] == [(10, 1)]
    assert port_counters(read, None) == (read['perfquery'][0]['counters'], None)


def test_plain_perfquery_without_its_header_takes_the_port_it_selected(fixture_text):
    read = read_port_counters(fixture_text('perfquery', 'ibsim-pr1-portcounters-excerpt.txt'))
    assert [(b['lid'], b['port'], b['extended']) for b in read['perfquery']] == [(None, 1, False)]
    assert len(read['unreadable']) == 1 and read['unreadable'][0][0] == 1
    counters, dummy = port_counters(read, 'mlx5_0:1')
    assert counters == {'counters/symbol_error': 0, 'counters/link_error_recovery': 0, 'counters/link_downed': 0,
                        'counters/port_rcv_errors': 0, 'counters/port_rcv_remote_physical_errors': 0,
                        'counters/port_rcv_switch_relay_errors': 0, 'counters/port_xmit_discards': 0,
                        'counters/port_xmit_constraint_errors': 0}
    with pytest.raises(ValueError, match='of port 1, not of mlx5_0:2'):
        port_counters(read, 'mlx5_0:2')


def test_extended_counters_win_over_the_basic_ones(fixture_text):
    # derived: a file with plain perfquery (made-up 32-bit PortXmitData) after perfquery -x of the same port
    extended = fixture_text('perfquery', 'infiniband-diags-issue16-rhel75-x.txt')
    basic = '# Port counters: Lid 10 port 1 (CapMask: 0x5300)\nPortXmitData:....................4294967295\n'
    counters, dummy = port_counters(read_port_counters(extended + basic), None)
    assert counters['counters/port_xmit_data'] == 0


def test_rdma_statistic_wrapped_by_a_mail_and_in_p_form(fixture_text):
    links, unreadable = parse_rdma_statistic(fixture_text('rdma-statistic', 'iproute2-stat-counter-cover-letter-2019.txt'))
    assert unreadable == [(1, '[leonro@server ~]$ rdma stat show'), (10, '[leonro@server ~]$ rdma stat show -p')]
    assert list(links) == ['mlx5_0:1'] and len(links['mlx5_0:1']) == 21
    assert set(links['mlx5_0:1']) >= {'hw_counters/out_of_buffer', 'hw_counters/np_cnp_sent',
                                      'hw_counters/rp_cnp_handled', 'hw_counters/local_ack_timeout_err'}


def test_a_value_wrapped_onto_the_next_line_is_its_names(fixture_text):
    # derived: the one-line form of the mail with two counters given values (the mail's are all 0)
    text = fixture_text('rdma-statistic', 'iproute2-stat-counter-cover-letter-2019.txt').split('\n\n')[0]
    text = text.replace('rx_atomic_requests\n0 ', 'rx_atomic_requests\n7 ').replace('out_of_buffer 0', 'out_of_buffer 135')
    links, dummy = parse_rdma_statistic(text)
    assert (links['mlx5_0:1']['hw_counters/rx_atomic_requests'], links['mlx5_0:1']['hw_counters/out_of_buffer'],
            links['mlx5_0:1']['hw_counters/duplicate_request']) == (7, 135, 0)


def test_rdma_statistic_names_the_port_or_is_narrowed_to_it(fixture_text):
    read = read_port_counters(fixture_text('rdma-statistic', 'iproute2-stat-counter-cover-letter-2019.txt'))
    counters, rdma_port = port_counters(read, None)
    assert rdma_port == 'mlx5_0:1' and counters['hw_counters/np_ecn_marked_roce_packets'] == 0
    with pytest.raises(ValueError, match='the rdma statistic text has links mlx5_0/1, not mlx5_1/1'):
        port_counters(read, 'mlx5_1:1')


def test_a_line_that_breaks_the_pairs_is_named():
    links, unreadable = parse_rdma_statistic('link mlx5_2/1 out_of_buffer 3 rnr_nak_retry_err\nroot@node01:~#\n')
    assert links == {'mlx5_2:1': {'hw_counters/out_of_buffer': 3}}
    assert unreadable == [(1, 'link mlx5_2/1 out_of_buffer 3 rnr_nak_retry_err'), (2, 'root@node01:~#')]


def test_a_file_of_both_forms_reads_both(fixture_text):
    text = (fixture_text('perfquery', 'infiniband-diags-issue16-rhel75-x.txt')
            + fixture_text('rdma-statistic', 'iproute2-stat-counter-cover-letter-2019.txt'))
    read = read_port_counters(text)
    # only the lines no parser reads are named: the three prompts
    assert [number for number, dummy in read['unreadable']] == [1, 29, 38]
    counters, rdma_port = port_counters(read, 'mlx5_0:1')
    assert len(counters) == 42 and rdma_port == 'mlx5_0:1'


@pytest.mark.parametrize('text', ['ibwarn: [3845] mad_rpc_open_port: can\'t open UMAD port ((null):0)\n', ''])
def test_text_of_no_form_fails_naming_the_forms(text):
    with pytest.raises(ValueError, match='neither perfquery, perfquery -x or rdma statistic show'):
        read_port_counters(text)
