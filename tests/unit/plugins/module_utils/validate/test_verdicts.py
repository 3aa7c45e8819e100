# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""validate.verdicts: the allreduce judged against its threshold, and the smoke training judged from its jobs'
summaries and exits."""

from __future__ import annotations

import base64
import importlib.util
from pathlib import Path

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.perftest import bench_of_report
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.thresholds import allreduce_threshold
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.verdicts import (
    allreduce_verdict, train_smoke_verdict, train_verdict,
)

_SPEC = importlib.util.spec_from_file_location('validate_fakes', Path(__file__).with_name('validate_fakes.py'))
fakes = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(fakes)

MIB, LARGE, EXPLICIT, NOT_FETCHED = fakes.MIB, fakes.LARGE, fakes.EXPLICIT, fakes.NOT_FETCHED
bench, mpirun, slurped = fakes.bench, fakes.mpirun, fakes.slurped


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


def test_a_busbw_exactly_on_the_threshold_passes_and_the_least_below_fails():
    # EXPLICIT is 1.5 GB/s: on it is enough, as the reason's ">=" says
    assert allreduce_verdict(bench(1.5), EXPLICIT, LARGE)['passed'] is True
    below = allreduce_verdict(bench(1.4999), EXPLICIT, LARGE)
    assert below['passed'] is False and len(below['failures']) == 2


def test_the_size_exactly_at_the_threshold_size_is_judged():
    slow_at_large = bench(lambda size: 0.5 if size == LARGE else 2.0)
    assert allreduce_verdict(slow_at_large, EXPLICIT, LARGE)['failures'][0]['size_bytes'] == LARGE
    assert allreduce_verdict(slow_at_large, EXPLICIT, LARGE + 1)['passed'] is True


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


def test_an_ib_write_bw_report_is_judged_at_its_one_size_whatever_the_sweeps_window(fixture_text):
    report = bench_of_report(fixture_text('perftest', 'ib_write_bw-a40-cuda-duration.txt'), ['node01', 'node02'], True)
    size = report['results'][0]['size_bytes']
    assert size < LARGE
    result = allreduce_verdict(report, EXPLICIT, LARGE)
    assert [(entry['size_bytes'], entry['passed']) for entry in result['checked']] == [(size, True)]


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


# train_smoke_verdict

# the jobs' summaries as train_smoke.py writes them
FIRST_JOB = {'world_size': 2, 'device': 'cpu', 'hosts': ['node01', 'node02'], 'start_step': 0, 'end_step': 10,
             'resumed': False, 'ok': True, 'errors': [], 'params_consistent': True,
             'checkpoint': '/ckpt/step-10.npz', 'rank0_host': 'node01'}
RESUMED_JOB = dict(FIRST_JOB, start_step=10, end_step=20, resumed=True, resumed_from='/ckpt/step-10.npz',
                   checkpoint='/ckpt/step-20.npz', rank0_host='node02')


def loop(results):
    """A looped task's registered ``results``, with each item as the smoke training's loop labels it."""
    return [dict(result, item={'name': name}) for name, result in zip(('first', 'resumed'), results)]


def test_train_smoke_verdict_of_two_good_jobs():
    verdict = train_smoke_verdict(loop([mpirun(0), mpirun(0)]), loop([slurped(FIRST_JOB), slurped(RESUMED_JOB)]),
                                  'node01')
    assert verdict == {'first': FIRST_JOB, 'resumed': RESUMED_JOB, 'passed': True, 'errors': [],
                       'mpirun_rc': {'first': 0, 'resumed': 0}}


def test_train_smoke_verdict_of_jobs_that_exit_non_zero_after_writing_their_summaries(fixture_text):
    stderr = fixture_text('mpirun', 'openmpi-4.1.4-exit-3.stderr.txt')
    verdict = train_smoke_verdict(loop([mpirun(0), mpirun(3, stderr)]),
                                  loop([slurped(FIRST_JOB), slurped(RESUMED_JOB)]), 'node01')
    assert verdict['passed'] is False
    assert (verdict['first'], verdict['resumed']) == (FIRST_JOB, RESUMED_JOB)
    assert verdict['mpirun_rc'] == {'first': 0, 'resumed': 3}
    assert len(verdict['errors']) == 1
    assert verdict['errors'][0].startswith('smoke training (resumed job) exited 3 (mpirun on node01): Primary job ')
    assert verdict['errors'][0].endswith('Exit code: 3')


def test_train_smoke_verdict_names_the_node_each_job_was_launched_from():
    """The resumed job starts from the next node (its loop item says which), and its failure names that node."""
    runs = loop([mpirun(0), mpirun(1, 'no checkpoint in /lustre/scratch/validate')])
    runs[1]['item']['launcher'] = 'node02'
    verdict = train_smoke_verdict(runs, loop([slurped(FIRST_JOB), slurped(RESUMED_JOB)]), 'node01')
    assert verdict['errors'] == [
        'smoke training (resumed job) exited 1 (mpirun on node02): no checkpoint in /lustre/scratch/validate']


def test_train_smoke_verdict_of_a_first_job_that_died_without_a_summary():
    verdict = train_smoke_verdict(loop([mpirun(1, 'checkpoint dir not writable'), mpirun(0)]),
                                  loop([NOT_FETCHED, slurped(RESUMED_JOB)]), 'node01')
    assert verdict['passed'] is False
    assert verdict['first'] is None
    assert verdict['errors'] == [
        'smoke training (first job) exited 1 (mpirun on node01): checkpoint dir not writable',
        'smoke training (first job) wrote no summary']


def test_train_smoke_verdict_of_a_garbled_summary():
    cut = dict(slurped(FIRST_JOB), content=base64.b64encode(b'{"world_size": 2, "dev').decode())
    verdict = train_smoke_verdict(loop([mpirun(0), mpirun(0)]), loop([cut, slurped(RESUMED_JOB)]), 'node01')
    assert verdict['passed'] is False
    assert verdict['errors'][0].startswith('smoke training (first job): summary is not JSON (')
    assert verdict['errors'][1] == 'smoke training (first job) wrote no summary'


@pytest.mark.parametrize('runs, fetched, message', [
    ([mpirun(0)], [{}, {}], '^runs must be a list of 2 results [(]first, resumed[)]'),
    ([mpirun(0), mpirun(0)], None, '^fetched must be a list of 2 results'),
])
def test_train_smoke_verdict_reject(runs, fetched, message):
    with pytest.raises(ValueError, match=message):
        train_smoke_verdict(runs, fetched, 'node01')
