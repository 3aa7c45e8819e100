# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""validate_checks: ring rounds, thresholds, verdicts, isolation and preflight on facts from the real parsers."""

from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.ib_sysfs import class_dir, read_devices
from ansible_collections.hpcfabric.cluster.plugins.module_utils.ibstat import parse_ibstat, summarize
from ansible_collections.hpcfabric.cluster.plugins.module_utils.mpi_info import mpi_facts
from ansible_collections.hpcfabric.cluster.plugins.module_utils.topology import parse_topology
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate_checks import (
    allreduce_threshold,
    allreduce_verdict,
    format_gbs,
    human_size,
    pair_threshold,
    preflight_problems,
    threshold_inputs,
    train_verdict,
)

MIB = 1024 * 1024
LARGE = 64 * MIB
EXPLICIT = allreduce_threshold('explicit', min_busbw_gbs=1.5)


def bench(busbw, correct=True, errors=None, world_size=2):
    """A bench JSON with 1 MiB .. 128 MiB; busbw maps size to GB/s (a number: every size)."""
    results = []
    for power in range(8):
        size = MIB << power
        value = busbw(size) if callable(busbw) else busbw
        results.append({'size_bytes': size, 'time_us': 100.0 * (power + 1), 'algbw_gbs': value / 2,
                        'busbw_gbs': value, 'correct': correct})
    data = {'world_size': world_size, 'device': 'cpu', 'hosts': ['node01', 'node02'],
            'mpi': {'library_version': 'Open MPI v4.1.4', 'cuda_aware': False}, 'results': results,
            'correct': correct}
    if errors is not None:
        data['errors'] = errors
    return data


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

# the role's defaults (roles/validate/defaults/main.yml) as vars/main.yml hands them over, on a host of the group
SETTINGS = {'in_group': True, 'validate_group': 'gpu_nodes', 'validate_min_bytes': 1048576,
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
                                       validate_allreduce_min_busbw_gbs='0.5', validate_derived_fraction='0.4'))
    assert inputs['problems'] == []
    assert inputs['min_size_bytes'] == 4194304
    assert (inputs['mode'], inputs['min_busbw_gbs']) == ('explicit', '0.5')


def test_threshold_inputs_size_window_is_the_top_quarter_unless_set():
    assert threshold_inputs(settings(validate_max_bytes=16777216))['min_size_bytes'] == 4194304
    assert threshold_inputs(settings(validate_threshold_min_bytes=1048576))['min_size_bytes'] == 1048576


@pytest.mark.parametrize('baseline, calibrate, mode, min_busbw', [
    # the first calibration has no baseline yet: it checks correctness only
    (None, True, 'explicit', 0),
    ({'results': [{'size_bytes': MIB, 'busbw_gbs': 2.0}]}, True, 'calibrated', None),
    # without calibrating, a missing baseline is for allreduce_threshold to refuse
    (None, False, 'calibrated', None),
])
def test_threshold_inputs_calibration(baseline, calibrate, mode, min_busbw):
    inputs = threshold_inputs(settings(validate_threshold_mode='calibrated', validate_calibrate=calibrate),
                              baseline=baseline)
    assert (inputs['mode'], inputs['min_busbw_gbs']) == (mode, min_busbw)


@pytest.mark.parametrize('changes, problem', [
    (dict(in_group=False), 'validate_group: this host is not in group gpu_nodes'),
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
    problems = threshold_inputs(settings(in_group=False, validate_iters=0, validate_derived_fraction=2,
                                         validate_calibrated_fraction=0))['problems']
    assert [problem.split('=')[0].split(':')[0] for problem in problems] == [
        'validate_group', 'validate_iters', 'validate_derived_fraction', 'validate_calibrated_fraction']


def test_fraction_one_is_a_valid_setting():
    assert threshold_inputs(settings(validate_derived_fraction=1, validate_calibrated_fraction='1'))['problems'] == []


@pytest.mark.parametrize('args, message', [
    (([],), 'settings must be a dict'),
    ((settings(validate_calibrate='yes'),), 'validate_calibrate must be true or false'),
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


# allreduce_verdict

def test_verdict_passes():
    result = allreduce_verdict(bench(2.0), EXPLICIT, LARGE)
    assert result['passed'] is True
    assert result['correct'] is True
    assert result['failures'] == []
    assert [entry['size_bytes'] for entry in result['checked']] == [LARGE, 2 * LARGE]
    assert result['checked'][0] == {'size_bytes': LARGE, 'busbw_gbs': 2.0, 'threshold_gbs': 1.5, 'passed': True}
    assert result['reason'] == 'all 2 large sizes ≥ threshold (explicit; closest: busbw 2 GB/s at 64 MiB ≥ 1.5 GB/s)'


def test_verdict_fails_at_one_large_size():
    result = allreduce_verdict(bench(lambda size: 0.8 if size == LARGE else 2.0), EXPLICIT, LARGE)
    assert result['passed'] is False
    assert result['failures'] == [{'size_bytes': LARGE, 'busbw_gbs': 0.8, 'threshold_gbs': 1.5, 'passed': False}]
    assert result['reason'] == 'busbw 0.8 GB/s at 64 MiB < 1.5 GB/s threshold (explicit)'


def test_verdict_names_every_failing_size():
    result = allreduce_verdict(bench(0.5), EXPLICIT, LARGE)
    assert result['reason'] == ('2 of 2 large sizes below threshold (explicit): busbw 0.5 GB/s at 64 MiB < 1.5 GB/s, '
                                'busbw 0.5 GB/s at 128 MiB < 1.5 GB/s')


def test_verdict_ignores_small_sizes():
    slow_small = bench(lambda size: 0.01 if size < LARGE else 2.0)
    assert allreduce_verdict(slow_small, EXPLICIT, LARGE)['passed'] is True
    assert allreduce_verdict(slow_small, EXPLICIT, MIB)['passed'] is False


def test_verdict_fails_an_incorrect_run_whatever_its_bandwidth():
    result = allreduce_verdict(bench(50.0, correct=False, errors=['rank 1: size 1048576: expected 3.0, got 4.0']),
                               EXPLICIT, LARGE)
    assert result['passed'] is False
    assert result['correct'] is False
    assert result['failures'] == []
    assert result['reason'] == 'wrong allreduce result: rank 1: size 1048576: expected 3.0, got 4.0'
    assert allreduce_verdict(bench(50.0, correct=False), EXPLICIT, LARGE)['reason'] == (
        'wrong allreduce result at 1 MiB, 2 MiB, 4 MiB, 8 MiB, 16 MiB, 32 MiB, 64 MiB, 128 MiB')


def test_verdict_with_a_calibrated_threshold_skips_sizes_missing_in_the_baseline():
    baseline = bench(2.0)
    baseline['results'] = baseline['results'][:-1]
    threshold = allreduce_threshold('calibrated', calibrated_fraction=0.9, baseline=baseline)
    result = allreduce_verdict(bench(1.7), threshold, LARGE)
    assert result['passed'] is False
    assert result['checked'] == [{'size_bytes': LARGE, 'busbw_gbs': 1.7, 'threshold_gbs': pytest.approx(1.8),
                                  'passed': False}]
    assert result['reason'] == ('busbw 1.7 GB/s at 64 MiB < 1.8 GB/s threshold (calibrated); '
                                'not in the baseline, not checked: 128 MiB')


def test_verdict_when_no_large_size_is_in_the_baseline():
    baseline = bench(2.0)
    baseline['results'] = baseline['results'][:4]
    threshold = allreduce_threshold('calibrated', calibrated_fraction=0.9, baseline=baseline)
    with pytest.raises(ValueError, match='none of the large sizes .* is in the calibration baseline'):
        allreduce_verdict(bench(2.0), threshold, LARGE)


def test_verdict_when_the_sweep_stops_below_the_large_sizes():
    with pytest.raises(ValueError, match='the sweep stops at 134217728 bytes, below validate_threshold_min_bytes=268435456'):
        allreduce_verdict(bench(2.0), EXPLICIT, 4 * LARGE)


EXIT_3 = 'allreduce on all nodes exited 3 (mpirun on node01): Exit code: 3'


def test_verdict_of_a_job_that_exited_non_zero_fails_whatever_its_results():
    result = allreduce_verdict(bench(2.0), EXPLICIT, LARGE, EXIT_3)
    assert result['passed'] is False
    assert result['correct'] is True
    assert result['failures'] == []
    assert result['run_error'] == EXIT_3
    assert result['reason'] == ('allreduce on all nodes exited 3 (mpirun on node01): Exit code: 3; results: all 2 large '
                                'sizes ≥ threshold (explicit; closest: busbw 2 GB/s at 64 MiB ≥ 1.5 GB/s)')
    assert allreduce_verdict(bench(2.0), EXPLICIT, LARGE)['run_error'] is None


def test_verdict_of_a_wrong_result_says_both_the_exit_and_the_result():
    """allreduce.py exits 1 on a wrong result: both are failures, the report says both."""
    exit_1 = 'allreduce on all nodes exited 1 (mpirun on node01): Exit code: 1'
    result = allreduce_verdict(bench(2.0, correct=False, errors=['rank 1: wrong sum']), EXPLICIT, LARGE, exit_1)
    assert result['passed'] is False
    assert result['correct'] is False
    assert result['reason'] == exit_1 + '; results: wrong allreduce result: rank 1: wrong sum'


@pytest.mark.parametrize('data, threshold, message', [
    ([], EXPLICIT, 'must be the JSON'),
    ({'results': []}, EXPLICIT, 'no "correct" field'),
    ({'correct': True, 'results': []}, EXPLICIT, 'no results'),
    ({'correct': True, 'results': [{'size_bytes': 1}]}, EXPLICIT, 'lacks size_bytes or busbw_gbs'),
    (bench(1.0), {'mode': 'fast'}, 'must be the result of allreduce_threshold'),
])
def test_verdict_rejects(data, threshold, message):
    with pytest.raises(ValueError, match=message):
        allreduce_verdict(data, threshold, LARGE)
    with pytest.raises(ValueError, match='^run_error must be the text of how the job failed, or null, got 3$'):
        allreduce_verdict(bench(2.0), EXPLICIT, LARGE, 3)


# train_verdict

FIRST = {'world_size': 2, 'start_step': 0, 'end_step': 10, 'resumed': False, 'ok': True, 'errors': []}
RESUMED = dict(FIRST, start_step=10, end_step=20, resumed=True)


def test_train_verdict_of_two_good_jobs():
    assert train_verdict(FIRST, RESUMED) == train_verdict(FIRST, RESUMED, {'first': None, 'resumed': None}) == {
        'first': FIRST, 'resumed': RESUMED, 'passed': True, 'errors': []}


def test_train_verdict_fails_a_job_that_exited_non_zero_whatever_its_summary():
    error = 'smoke training (first job) exited 3 (mpirun on node01): Exit code: 3'
    result = train_verdict(FIRST, RESUMED, {'first': error, 'resumed': None})
    assert result == {'first': FIRST, 'resumed': RESUMED, 'passed': False, 'errors': [error]}


@pytest.mark.parametrize('first, resumed, errors', [
    (None, RESUMED, ['smoke training (first job) wrote no summary']),
    (FIRST, dict(RESUMED, ok=False, errors=['the loss did not go down', 'no checkpoint was written']),
     ['smoke training (resumed job): the loss did not go down; no checkpoint was written']),
    (dict(FIRST, ok=False, errors=[]), RESUMED, ['smoke training (first job): not ok, without an error']),
    (FIRST, dict(RESUMED, resumed=False), ['smoke training (resumed job) did not resume from a checkpoint']),
    (FIRST, dict(RESUMED, start_step=5),
     ['smoke training (resumed job) started at step 5, the first job stopped at step 10']),
])
def test_train_verdict_names_the_job_and_what_is_wrong(first, resumed, errors):
    result = train_verdict(first, resumed)
    assert result['passed'] is False
    assert result['errors'] == errors
    assert (result['first'], result['resumed']) == (first, resumed)


@pytest.mark.parametrize('hosts, written_on, read_on, passed', [
    (['node01', 'node02'], 'node01', 'node02', True),
    (['node01', 'node02'], 'node01', 'node01', False),
    # one node: there is no other node to resume on
    (['node01'], 'node01', 'node01', True),
    (['node01', 'node02'], None, None, False),
])
def test_train_verdict_wants_the_restart_on_another_node_when_the_jobs_span_nodes(hosts, written_on, read_on, passed):
    first = dict(FIRST, hosts=hosts, rank0_host=written_on)
    result = train_verdict(first, dict(RESUMED, hosts=hosts, rank0_host=read_on))
    assert result['passed'] is passed
    assert result['errors'] == ([] if passed else [
        'smoke training (resumed job) read the checkpoint on node01, the node that wrote it: the restart did not '
        'cross nodes' if read_on else 'smoke training (resumed job): the summaries do not say on which node rank 0 '
        'wrote and read the checkpoint (rank0_host)'])


@pytest.mark.parametrize('first, run_errors, message', [
    ([], None, '^the first summary must be the JSON of files/bench/train_smoke.py'),
    (FIRST, ['exit 3'], '^run_errors must map first and resumed to their failure'),
])
def test_train_verdict_rejects(first, run_errors, message):
    with pytest.raises(ValueError, match=message):
        train_verdict(first, RESUMED, run_errors)


# preflight_problems, on facts the real parsers build from the recorded outputs

@pytest.fixture
def facts_of(fixture_text, fixture_path):
    def build(topo='dgx-a100-8gpu-nv12-nic-legend.txt', sysfs='roce_gid7_pod', ibstat=None,
              ompi='openmpi-docs-cuda-aware-check.txt', ucx=('ucx-1.16.0-cuda-v.txt', 'ucx-1.16.0-cuda-d.txt')):
        if ibstat:
            ib = summarize(parse_ibstat(fixture_text('ibstat', ibstat))[0], 'ibstat')
        else:
            ib = summarize(read_devices(class_dir(str(fixture_path('sysfs', sysfs))))[0], 'sysfs')
        mpi = mpi_facts(fixture_text('ompi_info', ompi),
                        fixture_text('ucx_info', ucx[0]) if ucx else None,
                        fixture_text('ucx_info', ucx[1]) if ucx else None)[0]
        return {
            'gpu_topology': parse_topology(fixture_text('nvidia-smi-topo', topo))[0],
            'ib': ib,
            'mpi': mpi,
            'interfaces': {'net1': {'mtu': 9000, 'operstate': 'up'}, 'net2': {'mtu': 9000, 'operstate': 'up'}},
            'modules': ['mlx5_ib', 'nvidia', 'nvidia_peermem'],
            'kernel': '6.8.0-45-generic',
            'nvidia_open': True,
        }
    return build


CUDA_ROCE = {'device': 'cuda', 'gpu_count': 8, 'rdma': True, 'port_rate_gbps': None, 'link_layer': 'Ethernet',
             'mtu': 9000, 'interfaces': ['net1', 'net2']}


def test_preflight_healthy_node(facts_of):
    assert preflight_problems(facts_of(), CUDA_ROCE) == []


def test_preflight_gpu_count(facts_of):
    facts = facts_of(topo='gtx10-7gpu-pix-phb-spaces.txt')
    assert preflight_problems(facts, CUDA_ROCE) == ['GPU count: expected 8, seen 7']
    assert preflight_problems(facts, dict(CUDA_ROCE, gpu_count=None)) == []
    facts['gpu_topology'] = dict(facts['gpu_topology'], gpu_count=0)
    assert preflight_problems(facts, dict(CUDA_ROCE, gpu_count=None)) == ['GPU count: expected at least 1, seen 0']


def test_preflight_slots_must_match_the_gpu_count(facts_of):
    facts = facts_of()
    assert preflight_problems(facts, dict(CUDA_ROCE, slots=8)) == []
    assert preflight_problems(facts, dict(CUDA_ROCE, slots=1)) == [
        'hostfile slots: 1, but the node has 8 GPUs (one rank per GPU: set mpi_hostfile_slots to 8 or leave it unset)']
    # host buffers: ranks need not match GPUs
    assert preflight_problems(facts, dict(CUDA_ROCE, device='cpu', rdma=False, slots=1)) == []


def test_preflight_ports_down_rate_and_link_layer(facts_of):
    facts = facts_of(sysfs='ib_mixed')
    expect = dict(CUDA_ROCE, port_rate_gbps=200, link_layer='InfiniBand', interfaces=[])
    assert preflight_problems(facts, expect) == [
        'mlx5_10 port 1: state Down, expected Active',
        'mlx5_2 port 1: rate 2.5 Gb/s, expected 200',
        'mlx5_2 port 1: link layer Ethernet, expected InfiniBand',
        'mlx5_2 port 1: no RoCE v2 GID (no IPv4 address on ens13?)',
    ]


def test_preflight_ibstat_rates(facts_of):
    facts = facts_of(ibstat='cx6dx_eth_100_two_cas.txt')
    expect = dict(CUDA_ROCE, port_rate_gbps=400, interfaces=[])
    assert preflight_problems(facts, expect) == [
        'mlx5_0 port 1: rate 100 Gb/s, expected 400',
        'mlx5_0 port 1: RoCE v2 GID unknown (ib facts from ibstat, which shows no GIDs; sysfs is needed)',
        'mlx5_1 port 1: rate 100 Gb/s, expected 400',
        'mlx5_1 port 1: RoCE v2 GID unknown (ib facts from ibstat, which shows no GIDs; sysfs is needed)',
    ]


def test_preflight_ib_ports_from_ibstat(facts_of):
    facts = facts_of(ibstat='h100_ndr_mixed_tabs.txt')
    problems = preflight_problems(facts, dict(CUDA_ROCE, link_layer='InfiniBand', port_rate_gbps=400, interfaces=[]))
    assert 'mlx5_2 port 1: state Down, expected Active' in problems
    assert 'mlx5_1 port 1: rate 100 Gb/s, expected 400' in problems
    assert 'mlx5_1 port 1: link layer Ethernet, expected InfiniBand' in problems
    assert 'mlx5_0 port 1: rate 400 Gb/s, expected 400' not in problems


def test_preflight_rate_unknown(facts_of):
    problems = preflight_problems(facts_of(), dict(CUDA_ROCE, port_rate_gbps=400, interfaces=[]))
    assert problems == ['mlx5_0 port 1: rate unknown, expected 400', 'mlx5_1 port 1: rate unknown, expected 400']


def test_preflight_interfaces(facts_of):
    facts = facts_of()
    facts['interfaces'] = {'net1': {'mtu': 1500, 'operstate': 'up'}, 'net2': {'mtu': 9000, 'operstate': 'down'},
                           'net3': {'mtu': None, 'operstate': None}}
    assert preflight_problems(facts, dict(CUDA_ROCE, interfaces=['net1', 'net2', 'net3', 'fab0'])) == [
        'net1: MTU 1500, expected 9000', 'net2: state down, expected up', 'net3: not present', 'fab0: not present']


def test_preflight_interfaces_are_checked_on_cpu_nodes_too():
    facts = {'interfaces': {'fab0': {'mtu': 1500, 'operstate': 'up'}}}
    expect = {'device': 'cpu', 'gpu_count': None, 'rdma': False, 'port_rate_gbps': None, 'link_layer': None,
              'mtu': 9000, 'interfaces': ['fab0']}
    assert preflight_problems(facts, expect) == ['fab0: MTU 1500, expected 9000']
    assert preflight_problems(facts, dict(expect, mtu=None)) == []


def test_preflight_mtu_per_interface_as_the_cluster_model_gives_it():
    facts = {'interfaces': {'fab0': {'mtu': 1500, 'operstate': 'up'}, 'fab1': {'mtu': 4200, 'operstate': 'up'}}}
    expect = {'device': 'cpu', 'gpu_count': None, 'rdma': False, 'port_rate_gbps': None, 'link_layer': None,
              'mtu': {'fab0': 1500, 'fab1': 9000}, 'interfaces': ['fab0', 'fab1']}
    assert preflight_problems(facts, expect) == ['fab1: MTU 4200, expected 9000']


def test_preflight_mpi_not_cuda_aware(facts_of):
    facts = facts_of(ompi='debian12-openmpi-4.1.4-parsable-all.txt',
                     ucx=('debian12-ucx-1.13.1-v.txt', 'debian12-ucx-1.13.1-d.txt'))
    assert preflight_problems(facts, CUDA_ROCE) == [
        'MPI: not CUDA-aware (mpi_built_with_cuda_support false)',
        'UCX: no cuda transports (cuda_copy, cuda_ipc) in [cma, posix, self, sysv, tcp]',
    ]


def test_preflight_mpi_unknown_and_no_ucx(facts_of):
    facts = facts_of(ompi='openmpi-5.0.2-parsable-header.txt', ucx=None)
    assert preflight_problems(facts, CUDA_ROCE) == [
        'MPI: CUDA support unknown (no mpi_built_with_cuda_support in ompi_info), expected CUDA-aware',
        'UCX: not found (no ucx_info output), expected UCX with cuda transports (cuda_copy, cuda_ipc)',
    ]


def test_preflight_gpudirect(facts_of):
    facts = facts_of()
    facts['modules'] = ['mlx5_ib', 'nvidia']
    assert preflight_problems(facts, CUDA_ROCE) == [], 'open modules on 6.8 give DMA-BUF'
    facts['nvidia_open'] = False
    assert preflight_problems(facts, CUDA_ROCE) == [
        'GPUDirect RDMA: neither nvidia_peermem loaded nor DMA-BUF (open kernel modules and kernel ≥ 5.12); '
        'seen proprietary kernel modules, kernel 6.8.0-45-generic']
    facts.update(nvidia_open=True, kernel='5.4.0-150-generic')
    assert preflight_problems(facts, CUDA_ROCE) == [
        'GPUDirect RDMA: neither nvidia_peermem loaded nor DMA-BUF (open kernel modules and kernel ≥ 5.12); '
        'seen open kernel modules, kernel 5.4.0-150-generic']
    facts.update(nvidia_open=None, kernel=None)
    assert preflight_problems(facts, CUDA_ROCE) == [
        'GPUDirect RDMA: neither nvidia_peermem loaded nor DMA-BUF (open kernel modules and kernel ≥ 5.12); '
        'seen NVIDIA module flavour unknown, kernel unknown']
    assert preflight_problems(facts, dict(CUDA_ROCE, rdma=False, interfaces=[])) == [], 'no RDMA, no GPUDirect check'


def test_preflight_dmabuf_needs_a_recent_ucx(facts_of):
    facts = facts_of(ucx=('debian12-ucx-1.13.1-v.txt', 'ucx-1.16.0-cuda-d.txt'))
    facts['modules'] = []
    assert preflight_problems(facts, CUDA_ROCE) == [
        'GPUDirect RDMA: DMA-BUF needs UCX ≥ 1.14, seen UCX 1.13.1 (or load nvidia_peermem)']


def test_preflight_missing_fact_sets(facts_of):
    facts = dict(facts_of(), gpu_topology=None, ib=None, mpi=None, interfaces=None)
    assert preflight_problems(facts, CUDA_ROCE) == [
        'GPU topology facts missing (gpu_topology_facts did not run or failed)',
        'ib facts missing (ib_facts did not run)',
        'interface facts missing',
        'mpi facts missing (mpi_facts did not run)',
    ]
    facts['ib'] = {'source': 'sysfs', 'devices': {}}
    assert 'RDMA: no RDMA device (ib facts list no CA)' in preflight_problems(facts, CUDA_ROCE)


def test_preflight_cpu_without_rdma_checks_only_interfaces():
    facts = {'gpu_topology': None, 'ib': None, 'mpi': None, 'interfaces': {}, 'modules': [], 'kernel': None,
             'nvidia_open': None}
    expect = {'device': 'cpu', 'gpu_count': 8, 'rdma': False, 'port_rate_gbps': 400, 'link_layer': 'Ethernet',
              'mtu': 9000, 'interfaces': []}
    assert preflight_problems(facts, expect) == []


@pytest.mark.parametrize('facts, expect, message', [
    ([], {'device': 'cpu'}, 'facts must be a dict'),
    ({}, None, 'expectations must be a dict'),
    ({}, {'device': 'gpu'}, 'device must be cpu or cuda'),
    ({}, {'device': 'cpu', 'rdma': 'yes'}, 'rdma must be true or false'),
])
def test_preflight_rejects(facts, expect, message):
    with pytest.raises(ValueError, match=message):
        preflight_problems(facts, expect)


# formatting

@pytest.mark.parametrize('size, text', [(8, '8 B'), (1536, '1.5 KiB'), (32 * MIB, '32 MiB'), (1 << 30, '1 GiB'),
                                        (3 << 40, '3 TiB')])
def test_human_size(size, text):
    assert human_size(size) == text


@pytest.mark.parametrize('value, text', [(0.0, '0'), (0.01, '0.01'), (1.5, '1.5'), (12.34, '12.3'), (175.0, '175'),
                                         (1234.5, '1234'), (None, '-')])
def test_format_gbs(value, text):
    assert format_gbs(value) == text
