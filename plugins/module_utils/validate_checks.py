# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Pure logic of the validate role: its settings and threshold inputs, thresholds, verdicts (the allreduce, the smoke
training) and preflight checks; the isolation's rounds and findings are in isolation.py.

Inputs are the benchmark JSON of ``files/bench/allreduce.py`` and the facts of the collection's facts modules.
Bad input raises :class:`ValueError` with a message meant for the sysadmin; the filter plugins turn it into
an AnsibleFilterError.
"""

from __future__ import annotations

import re

from ansible_collections.hpcfabric.cluster.plugins.module_utils.bench_engines import (
    engine_names, engine_rows, link_suspects, rail_checks, slow_links,
)
from ansible_collections.hpcfabric.cluster.plugins.module_utils.mpi_info import CUDA_TRANSPORTS as UCX_CUDA_TRANSPORTS
from ansible_collections.hpcfabric.cluster.plugins.module_utils.mpi_local_fact import launch_tools_differ

THRESHOLD_MODES = ('explicit', 'derived', 'calibrated')
THRESHOLD_SETTING_MODES = ('auto',) + THRESHOLD_MODES
_FRACTION_SETTINGS = ('validate_derived_fraction', 'validate_calibrated_fraction')
# nv_peer_mem is the module's name before it moved into the NVIDIA driver as nvidia-peermem
PEERMEM_MODULES = ('nvidia_peermem', 'nv_peer_mem')
DMABUF_MIN_KERNEL = (5, 12)
DMABUF_MIN_UCX = (1, 14)
_UP_STATES = ('up', 'unknown')
_SIZE_UNITS = ('B', 'KiB', 'MiB', 'GiB', 'TiB')
# the smoke training's two jobs, in the order they run, and how messages name them
TRAIN_JOBS = {'first': 'smoke training (first job)', 'resumed': 'smoke training (resumed job)'}


def human_size(size_bytes):
    """``33554432`` -> ``32 MiB``; ``1536`` -> ``1.5 KiB``."""
    value = float(size_bytes)
    unit = 0
    while value >= 1024 and unit < len(_SIZE_UNITS) - 1:
        value /= 1024
        unit += 1
    if unit == 0:
        return '%d B' % size_bytes
    return '%s %s' % (('%.2f' % value).rstrip('0').rstrip('.'), _SIZE_UNITS[unit])


def format_gbs(value):
    """Three significant digits, without an exponent: ``0.01``, ``1.5``, ``12.3``, ``175``, ``1234``."""
    if value is None:
        return '-'
    return '%.0f' % value if abs(value) >= 1000 else '%.3g' % value


def _number(value, what):
    # values templated by Ansible may arrive as strings
    if isinstance(value, bool):
        raise ValueError('%s must be a number, got %r' % (what, value))
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise ValueError('%s must be a number, got %r' % (what, value))


def _whole(value, what):
    number = _number(value, what)
    if isinstance(number, float):
        if not number.is_integer():
            raise ValueError('%s must be a whole number, got %r' % (what, value))
        number = int(number)
    return number


def _fraction(value, what):
    if value is None:
        raise ValueError('%s is required' % what)
    number = float(_number(value, what))
    if not 0 < number <= 1:
        raise ValueError('%s must be in (0, 1], got %r' % (what, value))
    return number


def _baseline_bench(baseline):
    """The bench JSON inside a baseline: a bench JSON itself, a report's run, or a whole report (its first run)."""
    if isinstance(baseline, dict) and isinstance(baseline.get('runs'), list) and baseline['runs']:
        baseline = baseline['runs'][0]
    if isinstance(baseline, dict) and isinstance(baseline.get('bench'), dict):
        baseline = baseline['bench']
    return baseline


def _explicit_threshold(min_busbw_gbs):
    if min_busbw_gbs is None:
        raise ValueError('explicit threshold: min_busbw_gbs (validate_allreduce_min_busbw_gbs) is required')
    value = float(_number(min_busbw_gbs, 'explicit threshold: min_busbw_gbs'))
    if value < 0:
        raise ValueError('explicit threshold: min_busbw_gbs must not be negative, got %r' % (min_busbw_gbs,))
    return {
        'mode': 'explicit',
        'description': 'explicit: %s GB/s bus bandwidth' % format_gbs(value),
        'min_busbw_gbs': value,
        'per_size_gbs': None,
        'applies_to': 'busbw',
    }


def _derived_threshold(derived_fraction, node_rates_gbps, what="the slowest node's Active fabric bandwidth",
                       applies_to='busbw'):
    fraction = _fraction(derived_fraction, 'derived threshold: derived_fraction (validate_derived_fraction)')
    if not isinstance(node_rates_gbps, dict) or not node_rates_gbps:
        raise ValueError('derived threshold: node_rates_gbps must map every node to its Active fabric rate in Gb/s, '
                         'got %r' % (node_rates_gbps,))
    rates = {}
    missing = []
    for host in sorted(node_rates_gbps):
        rate = node_rates_gbps[host]
        if rate is None or rate == 0 or rate == '':
            missing.append(host)
            continue
        rate = float(_number(rate, 'derived threshold: the fabric rate of %s' % host))
        if rate < 0:
            raise ValueError('derived threshold: the fabric rate of %s must not be negative, got %r' % (host, rate))
        rates[host] = rate
    if missing:
        raise ValueError(
            'derived threshold: no Active fabric port rate for %s; derived mode needs ib facts (Active ports) on every '
            'node: fix the ports or use an explicit threshold (validate_allreduce_min_busbw_gbs) otherwise'
            % ', '.join(missing))
    slowest = min(sorted(rates), key=lambda host: rates[host])
    value = fraction * rates[slowest] / 8
    judged = 'each rail\'s inter-node bus bandwidth ≥ ' if applies_to == 'rails' else ''
    return {
        'mode': 'derived',
        'description': 'derived: %s%s × %s Gb/s of %s, %s = %s GB/s' % (
            judged, '%g' % fraction, '%g' % rates[slowest], slowest, what, format_gbs(value)),
        'min_busbw_gbs': value,
        'per_size_gbs': None,
        'applies_to': applies_to,
    }


def _calibrated_threshold(calibrated_fraction, baseline, engine=None):
    fraction = _fraction(calibrated_fraction, 'calibrated threshold: calibrated_fraction (validate_calibrated_fraction)')
    bench = _baseline_bench(baseline)
    if not isinstance(bench, dict) or not bench.get('results'):
        raise ValueError('calibrated threshold: no calibration baseline (or one without results): run once with '
                         'calibration (validate_calibrate=true) on a known good cluster to write it')
    if bench.get('correct') is False:
        raise ValueError('calibrated threshold: the baseline comes from a run with wrong results: recalibrate')
    names = engine_names(bench)
    if engine is not None and names and engine not in names:
        raise ValueError('calibrated threshold: the baseline ran %s, not the judged %s engine: recalibrate with '
                         'validate_engine=%s' % (', '.join(names), engine, engine))
    rows = engine_rows(bench, engine) if engine is not None and names else bench['results']
    per_size = {}
    for row in _rows(dict(bench, results=rows), 'the baseline'):
        per_size[str(row['size_bytes'])] = fraction * row['busbw_gbs']
    sizes = sorted(int(size) for size in per_size)
    return {
        'mode': 'calibrated',
        'description': 'calibrated: %s × the baseline bus bandwidth per size (baseline of %s ranks%s, %s to %s)' % (
            '%g' % fraction, bench.get('world_size', '?'), ', %s engine' % engine if engine and names else '',
            human_size(sizes[0]), human_size(sizes[-1])),
        'min_busbw_gbs': None,
        'per_size_gbs': per_size,
        'applies_to': 'busbw',
    }


def allreduce_threshold(mode, min_busbw_gbs=None, derived_fraction=None, node_rates_gbps=None, baseline=None,
                        calibrated_fraction=None, engine=None, port_rates_gbps=None):
    """The bus bandwidth threshold of the judged ``engine``: ``{mode, description, min_busbw_gbs, per_size_gbs,
    applies_to}``.

    ``applies_to`` says what it judges: ``busbw``, the all-node run's bus bandwidth, or ``rails``, each rail's
    inter-node bus bandwidth of the ring engine. A derived threshold of the ring judges its rails against
    ``derived_fraction`` of the slowest Active port (``port_rates_gbps``): the ring's inter-node phase is what the
    NICs carry, while its bus bandwidth also holds the node's own phases (NVLink, PCIe). Any other engine's derived
    threshold is ``derived_fraction`` of the slowest node's Active fabric bandwidth (``node_rates_gbps``), the bound
    of a flat ring. Above 0.5, either fails a node with one rail at half speed, which gates every rail of a ring.
    A calibrated threshold takes the baseline's rows of ``engine``. Only the arguments of the chosen mode are read,
    so the role can pass all of them.
    """
    if mode == 'explicit':
        return _explicit_threshold(min_busbw_gbs)
    if mode == 'derived' and engine == 'ring':
        return _derived_threshold(derived_fraction, port_rates_gbps, 'the slowest Active fabric port (one rail)',
                                  applies_to='rails')
    if mode == 'derived':
        return _derived_threshold(derived_fraction, node_rates_gbps)
    if mode == 'calibrated':
        return _calibrated_threshold(calibrated_fraction, baseline, engine)
    raise ValueError('threshold mode must be one of %s, got %r' % (', '.join(THRESHOLD_MODES), mode))


def _setting_whole(settings, name):
    # -e on the command line gives strings: compare numbers
    return _whole(settings.get(name), name)


def _is_fraction(value):
    try:
        return 0 < float(value) <= 1
    except (TypeError, ValueError):
        return False


def _setting_problems(settings, mode, min_bytes, max_bytes, size_floor):
    problems = []
    if not settings.get('in_group'):
        problems.append('validate_group: this host is not in group %s' % settings.get('validate_group'))
    if min_bytes < 4 or min_bytes > max_bytes:
        problems.append('validate_min_bytes=%d must be at least 4 and at most validate_max_bytes=%d'
                        % (min_bytes, max_bytes))
    iters = _setting_whole(settings, 'validate_iters')
    warmup = _setting_whole(settings, 'validate_warmup')
    if iters < 1 or warmup < 0:
        problems.append('validate_iters=%d must be at least 1 and validate_warmup=%d at least 0' % (iters, warmup))
    if _setting_whole(settings, 'validate_isolation_repeats') < 0:
        problems.append('validate_isolation_repeats=%s must be at least 0' % settings['validate_isolation_repeats'])
    for name in ('validate_allreduce_min_busbw_gbs', 'validate_isolation_min_busbw_gbs'):
        value = settings.get(name)
        if value is not None and _number(value, name) < 0:
            problems.append('%s=%s is below zero' % (name, value))
        elif value is not None and _number(value, name) == 0 and settings.get('validate_allow_zero_threshold') is not True:
            # a zero threshold passes any fabric, TCP fallback included: a careless value must not look like a proof
            problems.append('%s=0 lets any bandwidth pass; set validate_allow_zero_threshold: true to check '
                            'correctness only' % name)
    min_busbw = settings.get('validate_allreduce_min_busbw_gbs')
    if mode not in THRESHOLD_MODES:
        problems.append('validate_threshold_mode=%s must be one of %s'
                        % (settings.get('validate_threshold_mode'), ', '.join(THRESHOLD_SETTING_MODES)))
    if mode == 'explicit' and min_busbw is None:
        problems.append('validate_threshold_mode=explicit needs validate_allreduce_min_busbw_gbs')
    for name in _FRACTION_SETTINGS:
        if not _is_fraction(settings.get(name)):
            problems.append('%s=%s must be above 0 and at most 1' % (name, settings.get(name)))
    engines = {'validate_engine': [settings.get('validate_engine')],
               'validate_engines_reported': settings.get('validate_engines_reported') or []}
    nccl = [name for name in sorted(engines) if 'nccl' in engines[name]]
    if nccl and settings.get('validate_device', 'cuda') != 'cuda':
        problems.append('%s names nccl, which reduces GPU buffers only: set validate_device=cuda or leave nccl out'
                        % ' and '.join(nccl))
    if size_floor is not None and size_floor > max_bytes:
        problems.append('validate_threshold_min_bytes=%d is above validate_max_bytes=%d: no size would be checked'
                        % (size_floor, max_bytes))
    return problems


def _active_port_rates(ib):
    if not isinstance(ib, dict):
        return []
    rates = [port.get('rate_gbps')
             for device in (ib.get('devices') or {}).values()
             for port in ((device or {}).get('ports') or {}).values()
             if (port or {}).get('state') == 'Active']
    return [rate for rate in rates if isinstance(rate, (int, float)) and not isinstance(rate, bool)]


def node_fabric_rate(ib):
    """A node's fabric bandwidth in Gb/s: the sum of its Active ports' rates (ib_facts), None without any."""
    rates = _active_port_rates(ib)
    return sum(rates) if rates else None


def node_port_rate(ib):
    """A node's slowest Active port in Gb/s (ib_facts): what one rail of it carries; None without any."""
    rates = _active_port_rates(ib)
    return min(rates) if rates else None


def pair_threshold(threshold, min_busbw_gbs=None, derived_fraction=None, port_rates_gbps=None):
    """The threshold of the isolation's pair runs, one rank per node on one rail, shaped as ``allreduce_threshold``'s.

    - ``min_busbw_gbs`` (``validate_isolation_min_busbw_gbs``) when set;
    - else, where every node has an Active fabric port (``port_rates_gbps``, each node's slowest), ``derived_fraction``
      of the slowest port: a pair run has one rail, so the all-node threshold derived from a node's sum of rails, or
      calibrated on all of them, would fail every pair of a multi-rail node;
    - else the all-node ``threshold`` as it is (a fabric without RDMA ports, such as the lab's TCP).
    """
    _check_threshold(threshold)
    if min_busbw_gbs is not None:
        # a negative one is refused before, by threshold_inputs, naming validate_isolation_min_busbw_gbs
        explicit = _explicit_threshold(min_busbw_gbs)
        return dict(explicit, description='explicit: %s GB/s bus bandwidth per rail (validate_isolation_min_busbw_gbs)'
                    % format_gbs(explicit['min_busbw_gbs']))
    if not isinstance(port_rates_gbps, dict):
        raise ValueError('pair threshold: port_rates_gbps must map each node to its slowest Active port rate, got %r'
                         % (port_rates_gbps,))
    if port_rates_gbps and all(rate for rate in port_rates_gbps.values()):
        return _derived_threshold(derived_fraction, port_rates_gbps, 'the slowest Active fabric port (one rail)')
    return threshold


def threshold_inputs(settings, node_ib_facts=None, baseline=None):
    """The validation's settings checked and its threshold inputs resolved, in one place.

    ``settings`` holds the role's variables by name (``validate_min_bytes``, ``validate_threshold_mode``, ...) and
    ``in_group``, whether the host is in ``validate_group``; ``node_ib_facts`` maps each node to its
    ``ansible_facts.ib`` (None or ``{}`` where ib_facts did not run); ``baseline`` is the calibration baseline,
    None when there is none.

    Returns ``{problems, mode, min_busbw_gbs, node_rates, port_rates, min_size_bytes}``:

    - ``problems``: what is wrong with the settings, one line each naming the variable;
    - ``mode`` and ``min_busbw_gbs``: the threshold mode, ``auto`` resolved (explicit when a threshold is set, else
      derived), and the explicit threshold; a calibrating run without a baseline yet checks correctness only, so
      it is explicit at 0 GB/s;
    - ``node_rates``: each node's Active fabric bandwidth in Gb/s (None without ib facts or Active ports);
    - ``port_rates``: each node's slowest Active fabric port in Gb/s (None likewise), for ``pair_threshold``;
    - ``min_size_bytes``: the smallest message size judged against the threshold.
    """
    if not isinstance(settings, dict):
        raise ValueError('settings must be a dict of the validate role\'s variables, got %s' % type(settings).__name__)
    if node_ib_facts is not None and not isinstance(node_ib_facts, dict):
        raise ValueError('node_ib_facts must map each node to its ib facts, got %s' % type(node_ib_facts).__name__)
    calibrate = settings.get('validate_calibrate', False)
    if not isinstance(calibrate, bool):
        raise ValueError('validate_calibrate must be true or false, got %r' % (calibrate,))
    min_busbw = settings.get('validate_allreduce_min_busbw_gbs')
    mode = settings.get('validate_threshold_mode')
    if mode == 'auto':
        mode = 'explicit' if min_busbw is not None else 'derived'
    max_bytes = _setting_whole(settings, 'validate_max_bytes')
    size_floor = settings.get('validate_threshold_min_bytes')
    size_floor = None if size_floor is None else _whole(size_floor, 'validate_threshold_min_bytes')
    min_bytes = _setting_whole(settings, 'validate_min_bytes')
    problems = _setting_problems(settings, mode, min_bytes, max_bytes, size_floor)
    first_calibration = mode == 'calibrated' and calibrate and baseline is None
    return {
        'problems': problems,
        'mode': 'explicit' if first_calibration else mode,
        'min_busbw_gbs': 0 if first_calibration else min_busbw,
        'node_rates': dict((host, node_fabric_rate(ib)) for host, ib in (node_ib_facts or {}).items()),
        'port_rates': dict((host, node_port_rate(ib)) for host, ib in (node_ib_facts or {}).items()),
        # the large sizes, where a healthy fabric is at full speed: the top quarter of the sweep unless told otherwise
        'min_size_bytes': max_bytes // 4 if size_floor is None else size_floor,
    }


def _rows(bench, what):
    """The bench's results with numeric size_bytes and busbw_gbs, checked."""
    results = bench.get('results')
    if not isinstance(results, list):
        raise ValueError('%s has no results list' % what)
    rows = []
    for index, row in enumerate(results):
        if not isinstance(row, dict) or 'size_bytes' not in row or 'busbw_gbs' not in row:
            raise ValueError('%s: result %d lacks size_bytes or busbw_gbs: %r' % (what, index, row))
        size = _whole(row['size_bytes'], '%s: size_bytes of result %d' % (what, index))
        busbw = float(_number(row['busbw_gbs'], '%s: busbw_gbs of result %d' % (what, index)))
        rows.append(dict(row, size_bytes=size, busbw_gbs=busbw))
    return rows


def threshold_at(threshold, size_bytes):
    """The threshold in GB/s for one message size, or None when the calibrated baseline lacks that size."""
    if threshold.get('per_size_gbs') is not None:
        value = threshold['per_size_gbs'].get(str(size_bytes))
        return None if value is None else float(value)
    return float(threshold['min_busbw_gbs'])


def _check_threshold(threshold):
    if not isinstance(threshold, dict) or threshold.get('mode') not in THRESHOLD_MODES:
        raise ValueError('threshold must be the result of allreduce_threshold, got %r' % (threshold,))
    if threshold.get('per_size_gbs') is None and threshold.get('min_busbw_gbs') is None:
        raise ValueError('threshold has neither min_busbw_gbs nor per_size_gbs: %r' % (threshold,))


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
        return _rows(bench, 'bench JSON')
    return _rows(dict(bench, results=engine_rows(bench, engine)), 'bench JSON')


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
    ``run_error`` says how the job that wrote the JSON failed (``validate_collect.mpirun_error``: a non-zero exit),
    None when it exited 0. A failed job fails the verdict whatever its results; the reason gives the failure, then
    what the results say.
    """
    if not isinstance(bench, dict):
        raise ValueError('bench must be the JSON of files/bench/allreduce.py, got %s' % type(bench).__name__)
    if run_error is not None and not isinstance(run_error, str):
        raise ValueError('run_error must be the text of how the job failed, or null, got %r' % (run_error,))
    _check_threshold(threshold)
    rails_judged = threshold.get('applies_to') == 'rails'
    if rails_judged:
        rail_threshold = threshold
    elif rail_threshold is not None:
        _check_threshold(rail_threshold)
    min_size = _whole(min_size_bytes, 'min_size_bytes (validate_threshold_min_bytes)')
    if min_size < 0:
        raise ValueError('min_size_bytes (validate_threshold_min_bytes) must not be negative, got %r' % (min_size_bytes,))
    if 'correct' not in bench:
        raise ValueError('bench JSON has no "correct" field: not a files/bench/allreduce.py result?')
    rows = _judged_rows(bench, engine)
    if not rows:
        raise ValueError('bench JSON has no results: the sweep measured nothing')
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


def _version_tuple(text, parts):
    match = re.match(r'\s*(\d+)' + r'\.(\d+)' * (parts - 1), text or '')
    return tuple(int(group) for group in match.groups()) if match else None


def _check_gpus(facts, expect):
    topology = facts.get('gpu_topology')
    if not isinstance(topology, dict):
        return ['GPU topology facts missing (gpu_topology_facts did not run or failed)']
    seen = topology.get('gpu_count') or 0
    wanted = expect.get('gpu_count')
    if wanted is None:
        return [] if seen >= 1 else ['GPU count: expected at least 1, seen %d' % seen]
    wanted = _whole(wanted, 'expected GPU count')
    return [] if seen == wanted else ['GPU count: expected %d, seen %d' % (wanted, seen)]


def _check_slots(facts, expect):
    """One rank per GPU: a hostfile with other slots than GPUs starts too few ranks or puts two on one GPU."""
    slots = expect.get('slots')
    topology = facts.get('gpu_topology')
    if slots is None or not isinstance(topology, dict) or topology.get('gpu_count') is None:
        return []
    slots = _whole(slots, 'hostfile slots')
    seen = topology['gpu_count']
    if slots == seen:
        return []
    return ['hostfile slots: %d, but the node has %d GPUs (one rank per GPU: set mpi_hostfile_slots to %d or leave it '
            'unset)' % (slots, seen, seen)]


def _rate_text(rate):
    return '%g' % rate


def _check_port(name, number, port, expect, source):
    label = '%s port %s' % (name, number)
    problems = []
    if port.get('state') != 'Active':
        problems.append('%s: state %s, expected Active' % (label, port.get('state') or 'unknown'))
    wanted_rate = expect.get('port_rate_gbps')
    if wanted_rate is not None and port.get('state') == 'Active':
        wanted_rate = float(_number(wanted_rate, 'expected port rate'))
        rate = port.get('rate_gbps')
        if rate is None:
            problems.append('%s: rate unknown, expected %s' % (label, _rate_text(wanted_rate)))
        elif float(rate) != wanted_rate:
            problems.append('%s: rate %s Gb/s, expected %s' % (label, _rate_text(float(rate)), _rate_text(wanted_rate)))
    wanted_layer = expect.get('link_layer')
    if wanted_layer and port.get('link_layer') != wanted_layer:
        problems.append('%s: link layer %s, expected %s' % (label, port.get('link_layer') or 'unknown', wanted_layer))
    if port.get('link_layer') == 'Ethernet' and port.get('roce_v2_gid_index') is None:
        if source == 'ibstat':
            problems.append('%s: RoCE v2 GID unknown (ib facts from ibstat, which shows no GIDs; sysfs is needed)' % label)
        else:
            problems.append('%s: no RoCE v2 GID (no IPv4 address on %s?)' % (label, port.get('netdev') or 'its netdev'))
    return problems


def _check_rdma(facts, expect):
    ib = facts.get('ib')
    if not isinstance(ib, dict):
        return ['ib facts missing (ib_facts did not run)']
    devices = ib.get('devices') or {}
    if not devices:
        return ['RDMA: no RDMA device (ib facts list no CA)']
    problems = []
    for name in sorted(devices):
        ports = devices[name].get('ports') or {}
        if not ports:
            problems.append('%s: no port' % name)
        for number in sorted(ports, key=lambda key: int(key) if str(key).isdigit() else 0):
            problems.extend(_check_port(name, number, ports[number], expect, ib.get('source')))
    return problems


def _check_interfaces(facts, expect):
    wanted = expect.get('interfaces') or []
    if not wanted:
        return []
    interfaces = facts.get('interfaces')
    if not isinstance(interfaces, dict):
        return ['interface facts missing']
    # one MTU for every interface, or one per interface name (the cluster model's)
    mtus = expect.get('mtu')
    if not isinstance(mtus, dict):
        mtus = dict.fromkeys(wanted, mtus)
    problems = []
    for name in wanted:
        mtu = mtus.get(name)
        mtu = None if mtu is None else _whole(mtu, 'expected MTU of %s' % name)
        seen = interfaces.get(name) or {}
        if seen.get('mtu') is None and seen.get('operstate') is None:
            problems.append('%s: not present' % name)
            continue
        state = seen.get('operstate')
        if state is not None and str(state).lower() not in _UP_STATES:
            problems.append('%s: state %s, expected up' % (name, state))
        if mtu is not None and seen.get('mtu') != mtu:
            problems.append('%s: MTU %s, expected %d' % (name, seen.get('mtu'), mtu))
    return problems


def _check_ucx(ucx):
    transports = list(ucx.get('transports') or [])
    if not ucx.get('version') and not transports:
        return ['UCX: not found (no ucx_info output), expected UCX with cuda transports (%s)'
                % ', '.join(UCX_CUDA_TRANSPORTS)]
    missing = [name for name in UCX_CUDA_TRANSPORTS if name not in transports]
    if missing:
        return ['UCX: no cuda transports (%s) in [%s]' % (', '.join(missing), ', '.join(transports))]
    return []


def _check_mpi(facts):
    mpi = facts.get('mpi')
    if not isinstance(mpi, dict):
        return ['mpi facts missing (mpi_facts did not run)']
    problems = []
    if mpi.get('cuda_aware') is False:
        problems.append('MPI: not CUDA-aware (mpi_built_with_cuda_support false)')
    elif mpi.get('cuda_aware') is None:
        problems.append('MPI: CUDA support unknown (no mpi_built_with_cuda_support in ompi_info), expected CUDA-aware')
    return problems + _check_ucx(mpi.get('ucx') or {})


def _check_gpudirect(facts):
    modules = facts.get('modules') or []
    if any(name in modules for name in PEERMEM_MODULES):
        return []
    kernel = facts.get('kernel')
    kernel_version = _version_tuple(kernel, 2)
    nvidia_open = facts.get('nvidia_open')
    if nvidia_open is True and kernel_version is not None and kernel_version >= DMABUF_MIN_KERNEL:
        ucx = (facts.get('mpi') or {}).get('ucx') or {}
        ucx_version = _version_tuple(ucx.get('version'), 2)
        if ucx_version is not None and ucx_version < DMABUF_MIN_UCX:
            return ['GPUDirect RDMA: DMA-BUF needs UCX ≥ %d.%d, seen UCX %s (or load nvidia_peermem)'
                    % (DMABUF_MIN_UCX + (ucx.get('version'),))]
        return []
    flavour = {True: 'open kernel modules', False: 'proprietary kernel modules'}.get(nvidia_open, 'NVIDIA module flavour unknown')
    return ['GPUDirect RDMA: neither nvidia_peermem loaded nor DMA-BUF (open kernel modules and kernel ≥ %d.%d); '
            'seen %s, kernel %s' % (DMABUF_MIN_KERNEL + (flavour, kernel or 'unknown'))]


def _check_mpi_install(facts, expect):
    """The node's MPI tools were found (the mpi role's local fact) and are where the launcher's are."""
    tools = facts.get('mpi_tools')
    if tools is None:
        return []
    if not isinstance(tools, dict):
        raise ValueError('preflight: mpi_tools must be the mpi_launch_tools result, got %s' % type(tools).__name__)
    return list(tools.get('problems') or []) + launch_tools_differ(tools, expect.get('launcher_mpi_tools'),
                                                                   expect.get('launcher'))


def preflight_problems(facts, expect):
    """What a node lacks for the validation, one line per problem naming the device, expected and seen."""
    if not isinstance(facts, dict):
        raise ValueError('preflight facts must be a dict, got %s' % type(facts).__name__)
    if not isinstance(expect, dict):
        raise ValueError('preflight expectations must be a dict, got %s' % type(expect).__name__)
    device = expect.get('device')
    if device not in ('cpu', 'cuda'):
        raise ValueError('preflight: expected device must be cpu or cuda, got %r' % (device,))
    rdma = expect.get('rdma', False)
    if not isinstance(rdma, bool):
        raise ValueError('preflight: rdma must be true or false, got %r' % (rdma,))
    problems = []
    if device == 'cuda':
        problems.extend(_check_gpus(facts, expect))
        problems.extend(_check_slots(facts, expect))
    if rdma:
        problems.extend(_check_rdma(facts, expect))
    problems.extend(_check_interfaces(facts, expect))
    install_problems = _check_mpi_install(facts, expect)
    problems.extend(install_problems)
    if device == 'cuda' and not install_problems:
        problems.extend(_check_mpi(facts))
        if rdma:
            problems.extend(_check_gpudirect(facts))
    return problems
