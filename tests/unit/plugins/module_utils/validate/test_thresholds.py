# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""validate.thresholds: explicit, derived and calibrated thresholds, the threshold settings and inputs, the pair
runs' threshold, on ib facts from the real parsers."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.ib_sysfs import class_dir, read_devices
from ansible_collections.hpcfabric.cluster.plugins.module_utils.ibstat import parse_ibstat, summarize
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.thresholds import (
    allreduce_threshold, pair_threshold, threshold_inputs,
)

_SPEC = importlib.util.spec_from_file_location('validate_fakes', Path(__file__).with_name('validate_fakes.py'))
fakes = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(fakes)

MIB, LARGE, EXPLICIT, bench = fakes.MIB, fakes.LARGE, fakes.EXPLICIT, fakes.bench


# allreduce_threshold

def test_explicit_threshold():
    assert EXPLICIT == {'mode': 'explicit', 'description': 'explicit: 1.5 GB/s bus bandwidth', 'min_busbw_gbs': 1.5,
                        'per_size_gbs': None, 'applies_to': 'busbw'}
    assert allreduce_threshold('explicit', min_busbw_gbs=0)['min_busbw_gbs'] == 0.0
    assert allreduce_threshold('explicit', min_busbw_gbs='2.5')['min_busbw_gbs'] == 2.5


def test_derived_threshold_uses_the_slowest_node():
    result = allreduce_threshold('derived', derived_fraction=0.4,
                                 node_rates_gbps={'node01': 800, 'node02': 400, 'node03': 800})
    assert result['min_busbw_gbs'] == pytest.approx(20.0)
    assert result['per_size_gbs'] is None
    assert result['description'] == (
        "derived: 0.4 × 400 Gb/s of node02, the slowest node's Active fabric bandwidth = 20 GB/s")


def test_derived_threshold_names_the_nodes_without_a_rate():
    with pytest.raises(ValueError) as info:
        allreduce_threshold('derived', derived_fraction=0.4,
                            node_rates_gbps={'node01': 800, 'node02': None, 'node03': 0})
    message = str(info.value)
    assert 'node02, node03' in message
    assert 'node01' not in message
    assert 'derived mode needs ib facts (Active ports) on every node' in message
    assert 'explicit threshold' in message


def test_calibrated_threshold_from_a_baseline():
    baseline = bench(lambda size: size / MIB / 10.0, world_size=4)
    result = allreduce_threshold('calibrated', calibrated_fraction=0.9, baseline=baseline)
    assert result['mode'] == 'calibrated'
    assert result['min_busbw_gbs'] is None
    assert result['per_size_gbs'][str(LARGE)] == pytest.approx(0.9 * 6.4)
    assert len(result['per_size_gbs']) == 8
    assert 'baseline of 4 ranks, 1 MiB to 128 MiB' in result['description']
    # a report's run and a whole report give the same
    assert allreduce_threshold('calibrated', calibrated_fraction=0.9, baseline={'name': 'x', 'bench': baseline}) == result
    report = {'runs': [{'name': 'all', 'hosts': [], 'bench': baseline}]}
    assert allreduce_threshold('calibrated', calibrated_fraction=0.9, baseline=report) == result


@pytest.mark.parametrize('baseline', [None, {}, {'results': []}, {'runs': []}])
def test_calibrated_threshold_without_a_baseline(baseline):
    with pytest.raises(ValueError, match='run once with calibration'):
        allreduce_threshold('calibrated', calibrated_fraction=0.9, baseline=baseline)


def test_calibrated_threshold_refuses_a_wrong_baseline():
    with pytest.raises(ValueError, match='wrong results'):
        allreduce_threshold('calibrated', calibrated_fraction=0.9, baseline=bench(3.0, correct=False))


@pytest.mark.parametrize('args, message', [
    (dict(mode='explicit'), 'min_busbw_gbs .* is required'),
    (dict(mode='explicit', min_busbw_gbs=-1), 'must not be negative'),
    (dict(mode='explicit', min_busbw_gbs='fast'), 'must be a number'),
    (dict(mode='explicit', min_busbw_gbs=True), 'must be a number'),
    (dict(mode='derived', derived_fraction=0, node_rates_gbps={'a': 400}), r'must be in \(0, 1\]'),
    (dict(mode='derived', derived_fraction=1.5, node_rates_gbps={'a': 400}), r'must be in \(0, 1\]'),
    (dict(mode='derived', derived_fraction=-0.4, node_rates_gbps={'a': 400}), r'must be in \(0, 1\]'),
    (dict(mode='derived', node_rates_gbps={'a': 400}), 'derived_fraction .* is required'),
    (dict(mode='derived', derived_fraction=0.4, node_rates_gbps={}), 'must map every node'),
    (dict(mode='derived', derived_fraction=0.4, node_rates_gbps={'a': -400}), 'must not be negative'),
    (dict(mode='calibrated', calibrated_fraction=0, baseline={'results': []}), r'must be in \(0, 1\]'),
    (dict(mode='calibrated', calibrated_fraction=1.01, baseline={'results': []}), r'must be in \(0, 1\]'),
    (dict(mode='auto'), 'mode must be one of explicit, derived, calibrated'),
])
def test_threshold_rejects(args, message):
    with pytest.raises(ValueError, match=message):
        allreduce_threshold(**args)


def test_fraction_one_is_allowed():
    assert allreduce_threshold('derived', derived_fraction=1, node_rates_gbps={'a': 80})['min_busbw_gbs'] == 10.0


# threshold_inputs

# the role's defaults (roles/validate/defaults/main.yml) that threshold_inputs reads, by name as the role hands them over
SETTINGS = {'validate_group': 'gpu_nodes', 'validate_min_bytes': 1048576,
            'validate_max_bytes': 1073741824, 'validate_iters': 20, 'validate_warmup': 5,
            'validate_threshold_mode': 'auto', 'validate_allreduce_min_busbw_gbs': None,
            'validate_derived_fraction': 0.4, 'validate_calibrated_fraction': 0.9,
            'validate_threshold_min_bytes': None, 'validate_calibrate': False, 'validate_isolation_repeats': 0}


def settings(**changes):
    return dict(SETTINGS, **changes)


def test_threshold_inputs_of_the_defaults():
    assert threshold_inputs(SETTINGS) == {'problems': [], 'mode': 'derived', 'min_busbw_gbs': None, 'node_rates': {},
                                          'port_rates': {}, 'min_size_bytes': 268435456}


def test_threshold_inputs_auto_is_explicit_with_a_threshold():
    inputs = threshold_inputs(settings(validate_allreduce_min_busbw_gbs=12.5))
    assert (inputs['mode'], inputs['min_busbw_gbs']) == ('explicit', 12.5)


def test_threshold_inputs_take_the_strings_of_extra_vars():
    inputs = threshold_inputs(settings(validate_min_bytes='65536', validate_max_bytes='16777216', validate_iters='5',
                                       validate_warmup='0', validate_threshold_min_bytes='4194304',
                                       validate_allreduce_min_busbw_gbs='0.5', validate_derived_fraction='0.4',
                                       validate_calibrate='no'))
    assert inputs['problems'] == []
    assert inputs['min_size_bytes'] == 4194304
    assert (inputs['mode'], inputs['min_busbw_gbs']) == ('explicit', '0.5')


def test_threshold_inputs_size_window_is_the_top_quarter_unless_set():
    assert threshold_inputs(settings(validate_max_bytes=16777216))['min_size_bytes'] == 4194304
    assert threshold_inputs(settings(validate_threshold_min_bytes=1048576))['min_size_bytes'] == 1048576


@pytest.mark.parametrize('baseline, calibrate, mode, min_busbw', [
    # the first calibration has no baseline yet: it checks correctness only
    (None, True, 'explicit', 0),
    # -e validate_calibrate=yes
    (None, 'yes', 'explicit', 0),
    ({'results': [{'size_bytes': MIB, 'busbw_gbs': 2.0}]}, True, 'calibrated', None),
    # without calibrating, a missing baseline is for allreduce_threshold to refuse
    (None, False, 'calibrated', None),
])
def test_threshold_inputs_calibration(baseline, calibrate, mode, min_busbw):
    inputs = threshold_inputs(settings(validate_threshold_mode='calibrated', validate_calibrate=calibrate),
                              baseline=baseline)
    assert (inputs['mode'], inputs['min_busbw_gbs']) == (mode, min_busbw)


@pytest.mark.parametrize('changes, problem', [
    (dict(validate_min_bytes=2), 'validate_min_bytes=2 must be at least 4 and at most validate_max_bytes=1073741824'),
    (dict(validate_min_bytes=2048, validate_max_bytes=1024),
     'validate_min_bytes=2048 must be at least 4 and at most validate_max_bytes=1024'),
    (dict(validate_iters=0), 'validate_iters=0 must be at least 1 and validate_warmup=5 at least 0'),
    (dict(validate_warmup='-1'), 'validate_iters=20 must be at least 1 and validate_warmup=-1 at least 0'),
    (dict(validate_allreduce_min_busbw_gbs=-1.5), 'validate_allreduce_min_busbw_gbs=-1.5 is below zero'),
    (dict(validate_isolation_min_busbw_gbs='-2'), 'validate_isolation_min_busbw_gbs=-2 is below zero'),
    (dict(validate_isolation_min_busbw_gbs=0), 'validate_isolation_min_busbw_gbs=0 lets any bandwidth pass; set '
                                               'validate_allow_zero_threshold: true to check correctness only'),
    (dict(validate_threshold_mode='explicit'), 'validate_threshold_mode=explicit needs validate_allreduce_min_busbw_gbs'),
    (dict(validate_threshold_mode='fastest'),
     'validate_threshold_mode=fastest must be one of auto, explicit, derived, calibrated'),
    (dict(validate_derived_fraction=0), 'validate_derived_fraction=0 must be above 0 and at most 1'),
    (dict(validate_derived_fraction=None), 'validate_derived_fraction=None must be above 0 and at most 1'),
    (dict(validate_calibrated_fraction=1.2), 'validate_calibrated_fraction=1.2 must be above 0 and at most 1'),
    (dict(validate_calibrated_fraction='most'), 'validate_calibrated_fraction=most must be above 0 and at most 1'),
    (dict(validate_isolation_repeats='-2'), 'validate_isolation_repeats=-2 must be at least 0'),
    (dict(validate_threshold_min_bytes=2147483648),
     'validate_threshold_min_bytes=2147483648 is above validate_max_bytes=1073741824: no size would be checked'),
])
def test_threshold_inputs_setting_problems(changes, problem):
    assert threshold_inputs(settings(**changes))['problems'] == [problem]


def test_threshold_inputs_list_every_problem_in_order():
    problems = threshold_inputs(settings(validate_iters=0, validate_derived_fraction=2,
                                         validate_calibrated_fraction=0))['problems']
    assert [problem.split('=')[0] for problem in problems] == [
        'validate_iters', 'validate_derived_fraction', 'validate_calibrated_fraction']


def test_fraction_one_is_a_valid_setting():
    assert threshold_inputs(settings(validate_derived_fraction=1, validate_calibrated_fraction='1'))['problems'] == []


@pytest.mark.parametrize('args, message', [
    (([],), 'settings must be a dict'),
    ((settings(validate_calibrate='maybe'),), 'validate_calibrate must be true or false'),
    ((settings(validate_allreduce_min_busbw_gbs=0, validate_allow_zero_threshold=None),),
     'validate_allow_zero_threshold must be true or false'),
    ((settings(validate_max_bytes='big'),), 'validate_max_bytes must be a number'),
    ((settings(validate_min_bytes=1.5),), 'validate_min_bytes must be a whole number'),
    ((SETTINGS, ['node01']), 'node_ib_facts must map each node'),
])
def test_threshold_inputs_reject(args, message):
    with pytest.raises(ValueError, match=message):
        threshold_inputs(*args)


def test_threshold_inputs_sum_the_active_port_rates(fixture_text, fixture_path):
    def ibstat(name):
        return summarize(parse_ibstat(fixture_text('ibstat', name))[0], 'ibstat')

    nodes = {
        # 8 Active NDR ports and one at 100 Gb/s; three Down ones do not count
        'h100': ibstat('h100_ndr_mixed_tabs.txt'),
        # port 1 Down at 10, port 2 Active at FDR 56
        'cx3': ibstat('cx3_fdr56_ibwarn_tabs.txt'),
        # sysfs: Active at 200 and 2.5, Down at 10
        'mixed': summarize(read_devices(class_dir(str(fixture_path('sysfs', 'ib_mixed'))))[0], 'sysfs'),
        # a port still Initializing has no bandwidth yet
        'initializing': ibstat('cx6_hdr_initializing.txt'),
        # RoCE ports whose sysfs rate could not be read
        'no_rate': summarize(read_devices(class_dir(str(fixture_path('sysfs', 'roce_gid7_pod'))))[0], 'sysfs'),
        # ib_facts did not run
        'none': None,
        'empty': {},
    }
    inputs = threshold_inputs(SETTINGS, nodes)
    assert inputs['node_rates'] == {'h100': 3300, 'cx3': 56, 'mixed': 202.5, 'initializing': None, 'no_rate': None,
                                    'none': None, 'empty': None}
    # one rail's worth: the slowest Active port
    assert inputs['port_rates'] == {'h100': 100, 'cx3': 56, 'mixed': 2.5, 'initializing': None, 'no_rate': None,
                                    'none': None, 'empty': None}

    # what the derived threshold then makes of them
    with pytest.raises(ValueError, match='no Active fabric port rate for empty, initializing, no_rate, none;'):
        allreduce_threshold(inputs['mode'], derived_fraction=0.4, node_rates_gbps=inputs['node_rates'])
    healthy = dict((host, rate) for host, rate in inputs['node_rates'].items() if rate)
    threshold = allreduce_threshold('derived', derived_fraction=0.4, node_rates_gbps=healthy)
    assert threshold['min_busbw_gbs'] == pytest.approx(0.4 * 56 / 8)


# pair_threshold

DERIVED_ALL_NODE = allreduce_threshold('derived', derived_fraction=0.4, node_rates_gbps={'a': 3200, 'b': 3200})


def test_pair_threshold_of_multi_rail_nodes_is_one_ports_share():
    # eight 400G rails: the all-node threshold is 160 GB/s, which no single rail can carry
    pair = pair_threshold(DERIVED_ALL_NODE, derived_fraction=0.4, port_rates_gbps={'a': 400, 'b': 200})
    assert pair == {'mode': 'derived', 'min_busbw_gbs': pytest.approx(10.0), 'per_size_gbs': None, 'applies_to': 'busbw',
                    'description': 'derived: 0.4 × 200 Gb/s of b, the slowest Active fabric port (one rail) = 10 GB/s'}


def test_pair_threshold_set_explicitly_wins():
    pair = pair_threshold(DERIVED_ALL_NODE, min_busbw_gbs='35', derived_fraction=0.4, port_rates_gbps={'a': 400})
    assert (pair['mode'], pair['min_busbw_gbs']) == ('explicit', 35.0)
    assert pair['description'] == 'explicit: 35 GB/s bus bandwidth per rail (validate_isolation_min_busbw_gbs)'


@pytest.mark.parametrize('rates', [{'a': None, 'b': None}, {'a': 400, 'b': None}, {}])
def test_pair_threshold_without_every_nodes_port_rate_is_the_all_node_one(rates):
    assert pair_threshold(EXPLICIT, derived_fraction=0.4, port_rates_gbps=rates) is EXPLICIT


@pytest.mark.parametrize('args, kwargs, message', [
    (({'mode': 'fastest'},), {'port_rates_gbps': {}}, 'threshold'),
    ((EXPLICIT,), {'min_busbw_gbs': -1, 'port_rates_gbps': {}}, 'must not be negative'),
    ((EXPLICIT,), {'port_rates_gbps': None}, 'port_rates_gbps must map each node'),
    ((EXPLICIT,), {'derived_fraction': 2, 'port_rates_gbps': {'a': 400}}, 'must be in'),
])
def test_pair_threshold_rejects(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        pair_threshold(*args, **kwargs)
