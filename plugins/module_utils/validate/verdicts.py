# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The validation's verdicts: a bench JSON of ``files/bench/allreduce.py`` judged against its threshold (the judged
engine's bus bandwidth at the large sizes, the ring's rails, any engine's wrong result, the job's exit status), and the
smoke training's two jobs judged from their summaries and exits. Each node's own verdict over the whole report is
``node_verdicts.py``'s; the isolation's rounds and findings are ``isolation.py``'s.

Bad input raises :class:`ValueError` with a message meant for the sysadmin; the filter plugins turn it into an
AnsibleFilterError.
"""

from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.engines import (
    engine_names, engine_rows, link_suspects, rail_checks, slow_links,
)
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.jobs import (
    exit_status, fetched_json, mpirun_error,
)
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.thresholds import (
    bench_rows, check_threshold, threshold_at,
)
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.units import format_gbs, human_size, whole

# the smoke training's two jobs, in the order they run, and how messages name them
TRAIN_JOBS = {'first': 'smoke training (first job)', 'resumed': 'smoke training (resumed job)'}


def _wrong_result_reason(bench, rows):
    errors = [str(error) for error in bench.get('errors') or []]
    if errors:
        return 'wrong allreduce result: %s' % '; '.join(errors)
    wrong = [human_size(row['size_bytes']) for row in rows if row.get('correct') is False]
    if wrong:
        return 'wrong allreduce result at %s' % ', '.join(wrong)
    return 'wrong allreduce result (the benchmark reports correct: false)'


def _failure_text(failure):
    what = 'rail %s busbw' % failure['rail'] if 'rail' in failure else 'busbw'
    return '%s %s GB/s at %s < %s GB/s' % (
        what, format_gbs(failure['busbw_gbs']), human_size(failure['size_bytes']), format_gbs(failure['threshold_gbs']))


def _judged_rows(bench, engine):
    """The rows the verdict judges: ``engine``'s, or all of a JSON that ran one engine (or none)."""
    if engine is None:
        names = engine_names(bench)
        if len(names) > 1:
            raise ValueError('the benchmark ran %s: name the engine to judge' % ', '.join(names))
        return bench_rows(bench, 'bench JSON')
    return bench_rows(dict(bench, results=engine_rows(bench, engine)), 'bench JSON')


def suspect_text(suspect):
    """``(who, evidence)`` of one of ``link_suspects``: ``node03 sends slowly on rail 1`` and its links with their
    rates, as the verdict and report.md say them."""
    return ('%s %s slowly on rail %s' % (suspect['host'], suspect['direction'], suspect['rail']),
            ', '.join('%s -> %s %s GB/s' % (link['src'], link['dst'], format_gbs(link['gbs'])) for link in suspect['links']))


def _link_evidence(bench, engine, limit):
    """What the ring's link probe says about the rails below ``limit``: the ends it blames, else the slowest link."""
    links = ((bench.get('engines') or {}).get(engine or '') or {}).get('links') or []
    suspects = link_suspects(links, limit)
    if suspects:
        return '; '.join('%s (%s)' % suspect_text(item) for item in suspects)
    slow = slow_links(links, limit)
    if slow:
        return 'slowest link: rail %s %s -> %s %s GB/s' % (slow[0].get('rail') if slow[0].get('rail') is not None
                                                           else 'of local rank %s' % slow[0].get('local_rank'),
                                                           slow[0]['src'], slow[0]['dst'], format_gbs(slow[0]['gbs']))
    return None


def allreduce_verdict(bench, threshold, min_size_bytes, run_error=None, engine=None, rail_threshold=None):
    """Judge a bench JSON at the sizes >= min_size_bytes: ``{passed, correct, checked, failures, reason, run_error,
    engine}``.

    ``engine`` names the judged engine of a JSON that ran several (``validate_engine``); its bus bandwidth is checked
    against ``threshold`` unless that judges rails (``applies_to: rails``), and where its rows carry rails (the ring)
    each rail's inter-node bus bandwidth is checked against ``rail_threshold`` (the one-rail threshold the isolation's
    pair runs use; ``threshold`` itself when that judges rails). A wrong result of any engine fails the verdict.
    ``run_error`` says how the job that wrote the JSON failed (``jobs.mpirun_error``: a non-zero exit),
    None when it exited 0. A failed job fails the verdict whatever its results; the reason gives the failure, then
    what the results say. An ib_write_bw report (``perftest.bench_of_report``) is judged at its one message size,
    whatever ``min_size_bytes``.

    ``checked`` is every pass or fail the verdict decided, ``{size_bytes, busbw_gbs, threshold_gbs, passed}`` per
    size and, with ``rail`` and ``local_rank``, per rail at a size: report.md's ``ok`` cells are these, not a second
    comparison.
    """
    if not isinstance(bench, dict):
        raise ValueError('bench must be the JSON of files/bench/allreduce.py, got %s' % type(bench).__name__)
    if run_error is not None and not isinstance(run_error, str):
        raise ValueError('run_error must be the text of how the job failed, or null, got %r' % (run_error,))
    check_threshold(threshold)
    rails_judged = threshold.get('applies_to') == 'rails'
    if rails_judged:
        rail_threshold = threshold
    elif rail_threshold is not None:
        check_threshold(rail_threshold)
    min_size = whole(min_size_bytes, 'min_size_bytes (validate_threshold_min_bytes)')
    if min_size < 0:
        raise ValueError('min_size_bytes (validate_threshold_min_bytes) must not be negative, got %r' % (min_size_bytes,))
    if 'correct' not in bench:
        raise ValueError('bench JSON has no "correct" field: not a files/bench/allreduce.py result?')
    rows = _judged_rows(bench, engine)
    if not rows:
        raise ValueError('bench JSON has no results: the sweep measured nothing')
    if bench.get('tool') == 'ib_write_bw':
        # ib_write_bw runs one message size, judged there rather than in the allreduce sweep's window
        min_size = max(row['size_bytes'] for row in rows)
    large = [row for row in rows if row['size_bytes'] >= min_size]
    if not large:
        raise ValueError('the sweep stops at %d bytes, below validate_threshold_min_bytes=%d: extend the sweep '
                         '(validate_max_bytes) or lower the threshold size' % (max(row['size_bytes'] for row in rows),
                                                                               min_size))
    checked = []
    not_in_baseline = []
    for row in [] if rails_judged else large:
        limit = threshold_at(threshold, row['size_bytes'])
        if limit is None:
            not_in_baseline.append(row['size_bytes'])
            continue
        checked.append({'size_bytes': row['size_bytes'], 'busbw_gbs': row['busbw_gbs'], 'threshold_gbs': limit,
                        'passed': row['busbw_gbs'] >= limit})
    if not checked and not_in_baseline:
        raise ValueError('none of the large sizes (%s) is in the calibration baseline: recalibrate with the same sweep'
                         % ', '.join(human_size(size) for size in not_in_baseline))
    rails = rail_checks(large, lambda size: threshold_at(rail_threshold, size), min_size) if rail_threshold else []
    if rails_judged and not rails:
        raise ValueError('a derived threshold of the ring judges its rails, and no rail crossed nodes at the large '
                         'sizes (one node?): set an explicit threshold (validate_allreduce_min_busbw_gbs)')
    checked.extend(rails)
    failures = [entry for entry in checked if not entry['passed']]
    noun = 'checks (sizes and rails)' if rails else 'large sizes'
    # None: the tool checks no data (ib_write_bw), so bandwidth alone decides; anything but true or None is wrong
    correct = None if bench['correct'] is None else bench['correct'] is True
    mode = threshold['mode']
    if correct is False:
        reason = _wrong_result_reason(bench, rows)
    elif len(failures) == 1:
        reason = '%s threshold (%s)' % (_failure_text(failures[0]), mode)
    elif failures:
        reason = '%d of %d %s below threshold (%s): %s' % (
            len(failures), len(checked), noun, mode, ', '.join(_failure_text(failure) for failure in failures))
    else:
        lowest = min(checked, key=lambda entry: entry['busbw_gbs'] - entry['threshold_gbs'])
        reason = 'all %d %s ≥ threshold (%s; closest: %s ≥ %s GB/s)' % (
            len(checked), noun, mode, _failure_text(lowest).rsplit(' < ', 1)[0], format_gbs(lowest['threshold_gbs']))
    rail_failures = [entry for entry in failures if 'rail' in entry]
    if rail_failures and correct is not False:
        evidence = _link_evidence(bench, engine, max(entry['threshold_gbs'] for entry in rail_failures))
        if evidence:
            reason += '; %s' % evidence
    if not_in_baseline:
        reason += '; not in the baseline, not checked: %s' % ', '.join(human_size(size) for size in not_in_baseline)
    if run_error:
        reason = '%s; results: %s' % (run_error, reason)
    return {'passed': correct is not False and not failures and not run_error, 'correct': correct, 'checked': checked,
            'failures': failures, 'reason': reason, 'run_error': run_error or None, 'engine': engine}


def _train_job_errors(name, summary, run_error):
    job = TRAIN_JOBS[name]
    errors = [run_error] if run_error else []
    if summary is None:
        return errors + ['%s wrote no summary' % job]
    if not isinstance(summary, dict):
        raise ValueError('the %s summary must be the JSON of files/bench/train_smoke.py, got %r' % (name, summary))
    if summary.get('ok') is not True:
        errors.append('%s: %s' % (job, '; '.join(str(error) for error in summary.get('errors') or [])
                                  or 'not ok, without an error'))
    return errors


def train_verdict(first, resumed, run_errors=None):
    """Judge the smoke training's two jobs: ``{first, resumed, passed, errors}``.

    ``first`` and ``resumed`` are the jobs' JSON summaries of ``files/bench/train_smoke.py`` (None when a job wrote
    none), ``run_errors`` maps ``first`` and ``resumed`` to how that job's mpirun failed (None when it exited 0).
    It passes when both jobs exited 0 and say ok, and the resumed job resumed from a checkpoint at the step where the
    first stopped, on another node than the one that wrote it when the jobs span nodes. ``errors`` has one line per
    problem, naming the job; the summaries are kept as they are.
    """
    run_errors = run_errors or {}
    if not isinstance(run_errors, dict):
        raise ValueError('run_errors must map first and resumed to their failure, got %r' % (run_errors,))
    errors = []
    for name, summary in (('first', first), ('resumed', resumed)):
        errors.extend(_train_job_errors(name, summary, run_errors.get(name)))
    if isinstance(first, dict) and isinstance(resumed, dict):
        if resumed.get('resumed') is not True:
            errors.append('%s did not resume from a checkpoint' % TRAIN_JOBS['resumed'])
        elif resumed.get('start_step') is None or resumed.get('start_step') != first.get('end_step'):
            errors.append('%s started at step %s, the first job stopped at step %s'
                          % (TRAIN_JOBS['resumed'], resumed.get('start_step'), first.get('end_step')))
        # on more than one node the restart must read the checkpoint on another node than the one that wrote it,
        # or a checkpoint directory that is not shared would pass
        if len(first.get('hosts') or []) > 1:
            written, read = first.get('rank0_host'), resumed.get('rank0_host')
            if not written or not read:
                errors.append('%s: the summaries do not say on which node rank 0 wrote and read the checkpoint '
                              '(rank0_host)' % TRAIN_JOBS['resumed'])
            elif written == read:
                errors.append('%s read the checkpoint on %s, the node that wrote it: the restart did not cross nodes'
                              % (TRAIN_JOBS['resumed'], read))
    return {'first': first, 'resumed': resumed, 'passed': not errors, 'errors': errors}


def train_smoke_verdict(runs, fetched, launcher):
    """The smoke training judged: ``{first, resumed, passed, errors, mpirun_rc}``, as ``train_verdict`` and
    ``mpirun_rc``, each job's exit status (``{first, resumed}``).

    ``runs`` and ``fetched`` are the ``results`` of the looped mpirun ``command`` and ``slurp`` of the summaries,
    the first job then the resumed job; a job ran from the ``launcher`` of its loop item, else from ``launcher``.
    """
    for name, value in (('runs', runs), ('fetched', fetched)):
        if not isinstance(value, (list, tuple)) or len(value) != len(TRAIN_JOBS):
            raise ValueError('%s must be a list of %d results (%s), got %r'
                             % (name, len(TRAIN_JOBS), ', '.join(TRAIN_JOBS), value))
    summaries, run_errors, exit_statuses = {}, {}, {}
    for (name, job), run, got in zip(TRAIN_JOBS.items(), runs, fetched):
        item = run.get('item') if isinstance(run, dict) else None
        run_errors[name] = mpirun_error(run, job, (item.get('launcher') if isinstance(item, dict) else None) or launcher)
        exit_statuses[name] = exit_status(run)
        try:
            summaries[name] = fetched_json(got)
        except ValueError as exc:
            summaries[name] = None
            run_errors[name] = ('%s; summary is not JSON (%s)' % (run_errors[name], exc) if run_errors[name]
                                else '%s: summary is not JSON (%s)' % (job, exc))
    verdict = train_verdict(summaries['first'], summaries['resumed'], run_errors)
    verdict['mpirun_rc'] = exit_statuses
    return verdict
