# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The validation's thresholds: its threshold settings checked and resolved (``threshold_inputs``, which the offline
inventory check runs too), the bus bandwidth threshold of the judged engine (explicit, derived from the fabric's link
rates, or calibrated against a baseline run), the one-rail threshold of the isolation's pair runs, and the threshold
at one message size.

Bad input raises :class:`ValueError` with a message meant for the sysadmin; the filter plugins turn it into an
AnsibleFilterError.
"""

from __future__ import annotations

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.engines import engine_names, engine_rows
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.units import (
    format_gbs, fraction, human_size, number, whole,
)

THRESHOLD_MODES = ('explicit', 'derived', 'calibrated')
THRESHOLD_SETTING_MODES = ('auto',) + THRESHOLD_MODES
_FRACTION_SETTINGS = ('validate_derived_fraction', 'validate_calibrated_fraction')


def _baseline_bench(baseline):
    """The bench JSON inside a baseline: a bench JSON itself, a report's run, or a whole report (its first run)."""
    if isinstance(baseline, dict) and isinstance(baseline.get('runs'), list) and baseline['runs']:
        baseline = baseline['runs'][0]
    if isinstance(baseline, dict) and isinstance(baseline.get('bench'), dict):
        baseline = baseline['bench']
    return baseline


def bench_rows(bench, what):
    """The bench's results with numeric size_bytes and busbw_gbs, checked; ``what`` names the bench in errors."""
    results = bench.get('results')
    if not isinstance(results, list):
        raise ValueError('%s has no results list' % what)
    rows = []
    for index, row in enumerate(results):
        if not isinstance(row, dict) or 'size_bytes' not in row or 'busbw_gbs' not in row:
            raise ValueError('%s: result %d lacks size_bytes or busbw_gbs: %r' % (what, index, row))
        size = whole(row['size_bytes'], '%s: size_bytes of result %d' % (what, index))
        busbw = float(number(row['busbw_gbs'], '%s: busbw_gbs of result %d' % (what, index)))
        rows.append(dict(row, size_bytes=size, busbw_gbs=busbw))
    return rows


def _explicit_threshold(min_busbw_gbs):
    if min_busbw_gbs is None:
        raise ValueError('explicit threshold: min_busbw_gbs (validate_allreduce_min_busbw_gbs) is required')
    value = float(number(min_busbw_gbs, 'explicit threshold: min_busbw_gbs'))
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
    share = fraction(derived_fraction, 'derived threshold: derived_fraction (validate_derived_fraction)')
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
        rate = float(number(rate, 'derived threshold: the fabric rate of %s' % host))
        if rate < 0:
            raise ValueError('derived threshold: the fabric rate of %s must not be negative, got %r' % (host, rate))
        rates[host] = rate
    if missing:
        raise ValueError(
            'derived threshold: no Active fabric port rate for %s; derived mode needs ib facts (Active ports) on every '
            'node: fix the ports or use an explicit threshold (validate_allreduce_min_busbw_gbs) otherwise'
            % ', '.join(missing))
    slowest = min(sorted(rates), key=lambda host: rates[host])
    value = share * rates[slowest] / 8
    judged = 'each rail\'s inter-node bus bandwidth ≥ ' if applies_to == 'rails' else ''
    return {
        'mode': 'derived',
        'description': 'derived: %s%s × %s Gb/s of %s, %s = %s GB/s' % (
            judged, '%g' % share, '%g' % rates[slowest], slowest, what, format_gbs(value)),
        'min_busbw_gbs': value,
        'per_size_gbs': None,
        'applies_to': applies_to,
    }


def _calibrated_threshold(calibrated_fraction, baseline, engine=None):
    share = fraction(calibrated_fraction, 'calibrated threshold: calibrated_fraction (validate_calibrated_fraction)')
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
    for row in bench_rows(dict(bench, results=rows), 'the baseline'):
        per_size[str(row['size_bytes'])] = share * row['busbw_gbs']
    sizes = sorted(int(size) for size in per_size)
    return {
        'mode': 'calibrated',
        'description': 'calibrated: %s × the baseline bus bandwidth per size (baseline of %s ranks%s, %s to %s)' % (
            '%g' % share, bench.get('world_size', '?'), ', %s engine' % engine if engine and names else '',
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
    return whole(settings.get(name), name)


def _setting_flag(settings, name):
    # -e on the command line gives strings: true, yes, on, 1 and their opposites are booleans as Ansible reads them
    try:
        return boolean(settings.get(name, False), strict=True)
    except TypeError:
        raise ValueError('%s must be true or false, got %r' % (name, settings.get(name))) from None


def _is_fraction(value):
    try:
        return 0 < float(value) <= 1
    except (TypeError, ValueError):
        return False


def _setting_problems(settings, mode, min_bytes, max_bytes, size_floor):
    problems = []
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
        if value is not None and number(value, name) < 0:
            problems.append('%s=%s is below zero' % (name, value))
        elif value is not None and number(value, name) == 0 and not _setting_flag(settings, 'validate_allow_zero_threshold'):
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


def check_threshold(threshold):
    """ValueError unless ``threshold`` is one of ``allreduce_threshold``'s (or ``pair_threshold``'s)."""
    if not isinstance(threshold, dict) or threshold.get('mode') not in THRESHOLD_MODES:
        raise ValueError('threshold must be the result of allreduce_threshold, got %r' % (threshold,))
    if threshold.get('per_size_gbs') is None and threshold.get('min_busbw_gbs') is None:
        raise ValueError('threshold has neither min_busbw_gbs nor per_size_gbs: %r' % (threshold,))


def pair_threshold(threshold, min_busbw_gbs=None, derived_fraction=None, port_rates_gbps=None):
    """The threshold of the isolation's pair runs, one rank per node on one rail, shaped as ``allreduce_threshold``'s.

    - ``min_busbw_gbs`` (``validate_isolation_min_busbw_gbs``) when set;
    - else, where every node has an Active fabric port (``port_rates_gbps``, each node's slowest), ``derived_fraction``
      of the slowest port: a pair run has one rail, so the all-node threshold derived from a node's sum of rails, or
      calibrated on all of them, would fail every pair of a multi-rail node;
    - else the all-node ``threshold`` as it is (a fabric without RDMA ports, such as the lab's TCP).
    """
    check_threshold(threshold)
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
    """The validation's threshold settings checked and its threshold inputs resolved, in one place.

    ``settings`` holds the role's variables by name (``validate_min_bytes``, ``validate_threshold_mode``, ...), as
    Ansible hands them over (numbers and booleans may be strings); ``node_ib_facts`` maps each node to its
    ``ansible_facts.ib`` (None or ``{}`` where ib_facts did not run); ``baseline`` is the calibration baseline, None
    when there is none.

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
    calibrate = _setting_flag(settings, 'validate_calibrate')
    min_busbw = settings.get('validate_allreduce_min_busbw_gbs')
    mode = settings.get('validate_threshold_mode')
    if mode == 'auto':
        mode = 'explicit' if min_busbw is not None else 'derived'
    max_bytes = _setting_whole(settings, 'validate_max_bytes')
    size_floor = settings.get('validate_threshold_min_bytes')
    size_floor = None if size_floor is None else whole(size_floor, 'validate_threshold_min_bytes')
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


def threshold_at(threshold, size_bytes):
    """The threshold in GB/s for one message size, or None when the calibrated baseline lacks that size."""
    if threshold.get('per_size_gbs') is not None:
        value = threshold['per_size_gbs'].get(str(size_bytes))
        return None if value is None else float(value)
    return float(threshold['min_busbw_gbs'])
