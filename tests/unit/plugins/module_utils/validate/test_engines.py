# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The engines of allreduce.py as the validation judges them: each engine's rows, the ring's rails against the one-rail
threshold, the derived threshold's arithmetic on 8 x 800G nodes, the link probe's suspects, the link-rate bound."""

from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.engines import (
    engine_bench, engine_rows, engines_summary, link_rate_bound, link_suspects, nccl_mismatches, nccl_used, rail_checks,
)
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.report import report_runs
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.thresholds import (
    allreduce_threshold, pair_threshold, threshold_inputs,
)
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.verdicts import allreduce_verdict

MIB = 1024 * 1024
SIZES = [64 * MIB, 128 * MIB, 256 * MIB]
# two B300-class nodes as inventories/example has them: eight 800G RoCE ports each
PORTS = {'b300-01': 800, 'b300-02': 800}
NODES = {'b300-01': 6400, 'b300-02': 6400}


def ring_rows(rails_gbs, busbw=None, correct=True):
    """The ring engine's rows at SIZES: each rail's inter-node busbw as given (rail r is local rank r)."""
    rows = []
    for size in SIZES:
        rails = [{'local_rank': rank, 'rail': rank, 'rails_seen': [rank], 'segment_bytes': size // len(rails_gbs),
                  'inter_us': 100.0, 'busbw_gbs': value} for rank, value in enumerate(rails_gbs)]
        rows.append({'engine': 'ring', 'size_bytes': size, 'time_us': 1000.0, 'algbw_gbs': 1.0,
                     'busbw_gbs': busbw if busbw is not None else 1.875 * min(rails_gbs) * len(rails_gbs) / 2,
                     'correct': correct, 'phases_us': {}, 'rails': rails})
    return rows


def flat_rows(engine, busbw, correct=True):
    return [{'engine': engine, 'size_bytes': size, 'time_us': 1000.0, 'algbw_gbs': busbw / 1.875, 'busbw_gbs': busbw,
             'correct': correct} for size in SIZES]


def bench(rows, links=None, errors=None, world_size=16):
    engines = {}
    for row in rows:
        engines.setdefault(row['engine'], {'algorithm': row['engine']})
    if 'ring' in engines:
        engines['ring'].update(nodes=2, ranks_per_node=8, hierarchical=True, links=links or [])
    return {'world_size': world_size, 'device': 'cuda', 'hosts': sorted(PORTS), 'mpi': {'library_version': 'Open MPI'},
            'engines': engines, 'results': rows, 'errors': errors or [],
            'correct': all(row['correct'] for row in rows)}


def derived(engine, fraction=0.6):
    return allreduce_threshold('derived', derived_fraction=fraction, node_rates_gbps=NODES, port_rates_gbps=PORTS,
                               engine=engine)


# the derived threshold on 8 x 800G: a healthy fabric passes, one rail of eight at half speed fails

HEALTHY_RAIL = 0.85 * 100  # GB/s of one 800G rail's inter-node phase on a healthy fabric (an assumed efficiency)


def test_the_rings_derived_threshold_judges_each_rail_against_one_ports_rate():
    threshold = derived('ring')
    assert (threshold['mode'], threshold['applies_to']) == ('derived', 'rails')
    assert threshold['min_busbw_gbs'] == pytest.approx(60.0)
    assert threshold['description'] == ("derived: each rail's inter-node bus bandwidth ≥ 0.6 × 800 Gb/s of b300-01, the "
                                        'slowest Active fabric port (one rail) = 60 GB/s')


def test_a_healthy_fabric_passes_the_rings_derived_threshold():
    verdict = allreduce_verdict(bench(ring_rows([HEALTHY_RAIL] * 8)), derived('ring'), 64 * MIB, engine='ring')
    assert verdict['passed'] is True
    # every rail at every large size; the ring's own busbw holds the node phases too, so it is not judged here
    assert len(verdict['checked']) == 8 * 3 and all('rail' in entry for entry in verdict['checked'])


def test_one_rail_of_eight_at_half_speed_fails_the_rings_derived_threshold():
    rails = [HEALTHY_RAIL] * 8
    rails[3] = HEALTHY_RAIL / 2
    verdict = allreduce_verdict(bench(ring_rows(rails)), derived('ring'), 64 * MIB, engine='ring')
    assert verdict['passed'] is False
    assert set(entry['rail'] for entry in verdict['failures']) == {3}
    assert verdict['reason'].startswith('3 of 24 checks (sizes and rails) below threshold (derived): rail 3 busbw 42.5 '
                                        'GB/s at 64 MiB < 60 GB/s')


@pytest.mark.parametrize('engine', ['nccl', 'mpi'])
def test_a_flat_engines_derived_threshold_fails_a_half_speed_rail_and_passes_a_healthy_fabric(engine):
    threshold = derived(engine)
    # a flat ring's busbw is bound by the node's eight rails: 6400 Gb/s = 800 GB/s, 0.6 of it 480 GB/s
    assert (threshold['applies_to'], threshold['min_busbw_gbs']) == ('busbw', pytest.approx(480.0))
    healthy = allreduce_verdict(bench(flat_rows(engine, 0.92 * 800)), threshold, 64 * MIB, engine=engine)
    # one rail at half speed gates every ring NCCL splits across the rails: half the bandwidth
    slow = allreduce_verdict(bench(flat_rows(engine, 0.92 * 400)), threshold, 64 * MIB, engine=engine)
    assert (healthy['passed'], slow['passed']) == (True, False)


@pytest.mark.parametrize('fraction, catches', [(0.4, False), (0.5, False), (0.6, True)])
def test_only_a_fraction_above_half_catches_a_rail_at_half_speed(fraction, catches):
    rails = [100.0] * 8
    rails[5] = 50.0
    verdict = allreduce_verdict(bench(ring_rows(rails)), derived('ring', fraction), 64 * MIB, engine='ring')
    assert verdict['passed'] is not catches


def test_a_rail_exactly_at_the_threshold_passes():
    verdict = allreduce_verdict(bench(ring_rows([60.0] * 8)), derived('ring'), 64 * MIB, engine='ring')
    assert verdict['passed'] is True
    just_below = allreduce_verdict(bench(ring_rows([60.0] * 7 + [59.999])), derived('ring'), 64 * MIB, engine='ring')
    assert just_below['passed'] is False


def test_a_derived_ring_threshold_on_one_node_refuses_to_judge():
    rows = ring_rows([None] * 8, busbw=400.0)
    with pytest.raises(ValueError, match='no rail crossed nodes at the large sizes'):
        allreduce_verdict(bench(rows), derived('ring'), 64 * MIB, engine='ring')


# an explicit threshold judges the busbw; the ring's rails still meet the one-rail threshold

def test_an_explicit_threshold_judges_the_busbw_and_the_rails_the_pair_threshold():
    threshold = allreduce_threshold('explicit', min_busbw_gbs=100)
    rail_threshold = pair_threshold(threshold, derived_fraction=0.6, port_rates_gbps=PORTS)
    rails = [HEALTHY_RAIL] * 8
    rails[1] = 20.0
    verdict = allreduce_verdict(bench(ring_rows(rails, busbw=300.0)), threshold, 64 * MIB, engine='ring',
                                rail_threshold=rail_threshold)
    assert verdict['passed'] is False
    assert [entry.get('rail') for entry in verdict['failures']] == [1, 1, 1]
    busbw_only = allreduce_verdict(bench(ring_rows(rails, busbw=300.0)), threshold, 64 * MIB, engine='ring')
    assert busbw_only['passed'] is True and len(busbw_only['checked']) == 3


def test_the_judged_engine_alone_is_held_to_the_threshold_but_a_wrong_sum_anywhere_fails():
    threshold = allreduce_threshold('explicit', min_busbw_gbs=100)
    rows = ring_rows([HEALTHY_RAIL] * 8, busbw=300.0) + flat_rows('mpi', 0.4)
    assert allreduce_verdict(bench(rows), threshold, 64 * MIB, engine='ring')['passed'] is True
    assert allreduce_verdict(bench(rows), threshold, 64 * MIB, engine='mpi')['passed'] is False
    wrong = ring_rows([HEALTHY_RAIL] * 8, busbw=300.0) + flat_rows('mpi', 0.4, correct=False)
    verdict = allreduce_verdict(bench(wrong, errors=['mpi: size 268435456: rank 3 on b300-01 got 33.0']), threshold,
                                64 * MIB, engine='ring')
    assert verdict['passed'] is False and verdict['reason'].startswith('wrong allreduce result: mpi: size 268435456')


def test_a_json_of_several_engines_needs_the_engine_named():
    rows = ring_rows([HEALTHY_RAIL] * 8) + flat_rows('mpi', 1.0)
    with pytest.raises(ValueError, match='the benchmark ran ring, mpi: name the engine to judge'):
        allreduce_verdict(bench(rows), allreduce_threshold('explicit', min_busbw_gbs=1), 64 * MIB)
    with pytest.raises(ValueError, match='the benchmark ran ring, mpi, not the nccl engine'):
        allreduce_verdict(bench(rows), allreduce_threshold('explicit', min_busbw_gbs=1), 64 * MIB, engine='nccl')


def test_a_calibrated_threshold_takes_the_baseline_rows_of_the_judged_engine():
    baseline = bench(ring_rows([HEALTHY_RAIL] * 8, busbw=300.0) + flat_rows('mpi', 2.0))
    threshold = allreduce_threshold('calibrated', calibrated_fraction=0.5, baseline=baseline, engine='mpi')
    assert set(threshold['per_size_gbs'].values()) == {1.0}
    assert 'mpi engine' in threshold['description']
    with pytest.raises(ValueError, match='the baseline ran ring, mpi, not the judged nccl engine: recalibrate'):
        allreduce_threshold('calibrated', calibrated_fraction=0.5, baseline=baseline, engine='nccl')
    # a baseline written before the engines (no engine in its rows) is MPI_Allreduce's, taken as it is
    old = {'world_size': 2, 'correct': True, 'results': [{'size_bytes': MIB, 'busbw_gbs': 4.0}]}
    assert allreduce_threshold('calibrated', calibrated_fraction=0.5, baseline=old, engine='ring')['per_size_gbs'] == {
        str(MIB): 2.0}


@pytest.mark.parametrize('changes, problem', [
    ({'validate_engine': 'nccl', 'validate_device': 'cpu'},
     'validate_engine names nccl, which reduces GPU buffers only: set validate_device=cuda or leave nccl out'),
    ({'validate_engines_reported': ['mpi', 'nccl'], 'validate_device': 'cpu'},
     'validate_engines_reported names nccl, which reduces GPU buffers only'),
])
def test_nccl_on_host_buffers_is_a_setting_problem(changes, problem):
    settings = {'validate_min_bytes': 4, 'validate_max_bytes': 8, 'validate_iters': 1,
                'validate_warmup': 0, 'validate_threshold_mode': 'auto', 'validate_derived_fraction': 0.6,
                'validate_calibrated_fraction': 0.9, 'validate_isolation_repeats': 0, 'validate_engine': 'ring',
                'validate_engines_reported': ['mpi'], 'validate_device': 'cuda'}
    assert threshold_inputs(settings)['problems'] == []
    settings.update(changes)
    assert [p for p in threshold_inputs(settings)['problems'] if problem in p]


# the ring's link probe names the end of a slow link

def links_of_three_nodes(slow_src='node03', rail=1):
    """Rail 0 and 1 rings over node01 -> node02 -> node03 -> node01, both directions; ``slow_src`` sends slowly on
    ``rail`` (tc tbf on its egress)."""
    order = ['node01', 'node02', 'node03']
    links = []
    for each in (0, 1):
        for index, src in enumerate(order):
            for dst in (order[(index + 1) % 3], order[(index - 1) % 3]):
                slow = each == rail and src == slow_src
                links.append({'rail': each, 'local_rank': each, 'src': src, 'dst': dst, 'bytes': 4 * MIB,
                              'gbs': 0.01 if slow else 0.8})
    return links


def test_a_node_that_sends_slowly_on_one_rail_is_the_links_suspect():
    assert link_suspects(links_of_three_nodes(), 0.1) == [
        {'host': 'node03', 'rail': 1, 'direction': 'sends',
         'links': [link for link in links_of_three_nodes() if link['src'] == 'node03' and link['rail'] == 1]}]


def test_with_two_nodes_a_slow_link_has_no_one_end_to_blame():
    links = [{'rail': 0, 'local_rank': 0, 'src': 'a', 'dst': 'b', 'gbs': 0.01},
             {'rail': 0, 'local_rank': 0, 'src': 'b', 'dst': 'a', 'gbs': 0.8}]
    assert link_suspects(links, 0.1) == []


def test_a_rail_failure_names_the_links_suspect_in_the_verdict():
    threshold = allreduce_threshold('explicit', min_busbw_gbs=0.025)
    rails = [0.3, 0.012]
    data = bench(ring_rows(rails, busbw=0.3), links=links_of_three_nodes())
    verdict = allreduce_verdict(data, threshold, 64 * MIB, engine='ring', rail_threshold=threshold)
    assert verdict['passed'] is False
    assert verdict['reason'].endswith('node03 sends slowly on rail 1 (node03 -> node01 0.01 GB/s, node03 -> node02 '
                                      '0.01 GB/s)')


# what the report shows beside the judged engine

def test_the_hierarchical_rings_bound_is_above_the_nodes_rate_on_few_nodes():
    ring = {'nodes': 2, 'hierarchical': True}
    # 2 nodes of 8 ranks: 800 GB/s x 2/1 x 15/16
    assert link_rate_bound('ring', ring, 16, 6400) == pytest.approx(1500.0)
    assert link_rate_bound('ring', {'nodes': 64, 'hierarchical': True}, 512, 6400) == pytest.approx(
        800 * 64 / 63 * 511 / 512)
    assert link_rate_bound('nccl', {}, 16, 6400) == pytest.approx(800.0)
    assert link_rate_bound('ring', {'nodes': 1, 'hierarchical': True}, 8, 6400) is None
    assert link_rate_bound('mpi', {}, 16, None) is None


def test_report_runs_put_the_judged_engine_first_each_with_its_own_rows():
    data = bench(ring_rows([HEALTHY_RAIL] * 8, busbw=300.0) + flat_rows('mpi', 0.4) + flat_rows('nccl', 700.0),
                 errors=['mpi: size 67108864: rank 1 on b300-02 got 3.0'])
    runs = report_runs(data, None, 0, 'nccl')
    assert [(run['name'], run['engine'], run['judged']) for run in runs] == [
        ('all nodes (16 ranks), nccl engine', 'nccl', True), ('all nodes (16 ranks), ring engine', 'ring', False),
        ('all nodes (16 ranks), mpi engine', 'mpi', False)]
    assert [set(row['engine'] for row in run['bench']['results']) for run in runs] == [{'nccl'}, {'ring'}, {'mpi'}]
    assert [run['bench']['errors'] for run in runs] == [[], [], ['mpi: size 67108864: rank 1 on b300-02 got 3.0']]
    summary = engines_summary(runs, 6400)
    # against 800 GB/s for NCCL and MPI, and 1500 GB/s for the hierarchical ring on 2 nodes of 8
    assert [(item['engine'], item['judged'], round(item['ratio'], 4)) for item in summary] == [
        ('nccl', True, 0.875), ('ring', False, 0.2), ('mpi', False, 0.0005)]
    with pytest.raises(ValueError, match='name the judged engine'):
        report_runs(data)


def test_a_rail_exactly_on_its_threshold_passes_and_a_size_exactly_at_the_threshold_size_is_judged():
    rows = [{'size_bytes': size, 'rails': [{'rail': 'rail0', 'local_rank': 0, 'busbw_gbs': busbw}]}
            for size, busbw in ((MIB, 0.1), (2 * MIB, 1.0), (4 * MIB, 0.999))]
    checked = rail_checks(rows, lambda size: 1.0, 2 * MIB)
    assert [(item['size_bytes'], item['passed']) for item in checked] == [(2 * MIB, True), (4 * MIB, False)]


def test_rows_without_engines_are_one_engines():
    old = {'world_size': 2, 'correct': True, 'results': [{'size_bytes': MIB, 'busbw_gbs': 4.0}]}
    assert engine_rows(old, 'ring') == old['results']
    assert engine_bench(old, 'ring')['results'] == old['results']
    assert rail_checks(old['results'], lambda size: 1.0, 0) == []


# what NCCL says it used, from its INFO lines (tests/unit/fixtures/nccl-debug, see SOURCES.md)

def test_nccl_names_its_network_ports_and_the_variables_it_read(fixture_text):
    used = nccl_used(fixture_text('nccl-debug', 'nccl-1052-roce-hca-set.txt').splitlines())
    assert used == {'network': 'IB', 'devices': [{'device': 'mlx5_4:1', 'link_layer': 'RoCE'}],
                    'settings': {'NCCL_IB_HCA': 'mlx5_4'}}
    # HPC-X's plugin, and NCCL's merged NICs: every port of every merged NIC
    merged = nccl_used(fixture_text('nccl-debug', 'nccl-tests-373-merged-nics.txt').splitlines())
    assert merged['network'] == 'IBext_v8'
    assert [entry['device'] for entry in merged['devices']] == ['mlx5_2:1', 'mlx5_3:1', 'mlx5_0:1', 'mlx5_1:1']
    assert merged['settings'] == {'NCCL_P2P_LEVEL': 'LOC'}
    # the full stop NCCL ends some lines with is not part of the value
    gid = nccl_used(fixture_text('nccl-debug', 'nccl-1814-gid-socket-ifname.txt').splitlines())
    assert gid['settings'] == {'NCCL_SOCKET_IFNAME': 'bond0', 'NCCL_IB_GID_INDEX': '3'}
    assert gid['network'] is None and gid['devices'] == []


def test_what_nccl_used_is_held_against_the_job_environment(fixture_text):
    gid = nccl_used(fixture_text('nccl-debug', 'nccl-1814-gid-socket-ifname.txt').splitlines())
    assert nccl_mismatches(gid, {'NCCL_IB_GID_INDEX': '3', 'NCCL_SOCKET_IFNAME': 'bond0'}) == []
    assert nccl_mismatches(gid, {'NCCL_IB_GID_INDEX': '5', 'NCCL_SOCKET_IFNAME': 'bond0'}) == [
        'NCCL read NCCL_IB_GID_INDEX=3, the job environment has 5']
    roce = nccl_used(fixture_text('nccl-debug', 'nccl-1052-roce-hca-set.txt').splitlines())
    assert nccl_mismatches(roce, {'NCCL_IB_HCA': '=mlx5_0:1,mlx5_1:1'}) == [
        'NCCL read NCCL_IB_HCA=mlx5_4, the job environment has =mlx5_0:1,mlx5_1:1',
        'NCCL used mlx5_4:1, which NCCL_IB_HCA==mlx5_0:1,mlx5_1:1 leaves out']
    # an exclusion list names no port NCCL must use
    assert nccl_mismatches(dict(roce, settings={}), {'NCCL_IB_HCA': '^mlx5_0'}) == []
    sockets = {'network': 'Socket', 'devices': [], 'settings': {}}
    assert nccl_mismatches(sockets, {'NCCL_IB_HCA': '=mlx5_4:1'}) == [
        'NCCL used sockets although the job environment names RDMA ports (NCCL_IB_HCA==mlx5_4:1)']
