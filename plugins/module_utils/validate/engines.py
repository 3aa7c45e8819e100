# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The engines of ``files/bench/allreduce.py`` as the validation reads them: each engine's rows, the ring's rails and
links, the link-rate bound each engine is measured against, and the summary the report shows side by side.

A bench JSON holds the rows of every engine it ran (``results[].engine``) and each engine's description
(``engines.NAME``). A JSON without engines (one written before them, or ib_write_bw's) is one engine's: its rows are
taken as they are. Bad input raises :class:`ValueError`.
"""

from __future__ import annotations

import re

# report.md lists this many of the ring's slowest links
LINKS_SHOWN = 12


def _results(bench):
    if not isinstance(bench, dict) or not isinstance(bench.get('results'), list):
        raise ValueError('bench must be the JSON of files/bench/allreduce.py, with a results list, got %r' % (bench,))
    return bench['results']


def engine_names(bench):
    """The engines a bench JSON ran, in the order of its rows (``[]`` for one without engines)."""
    names = []
    for row in _results(bench):
        if isinstance(row, dict) and row.get('engine') and row['engine'] not in names:
            names.append(row['engine'])
    return names


def engine_rows(bench, engine):
    """The rows of ``engine``; all rows of a JSON without engines. ValueError when the JSON ran other engines only."""
    rows = _results(bench)
    names = engine_names(bench)
    if not names:
        return list(rows)
    if engine not in names:
        raise ValueError('the benchmark ran %s, not the %s engine' % (', '.join(names), engine))
    return [row for row in rows if isinstance(row, dict) and row.get('engine') == engine]


def engine_bench(bench, engine):
    """``bench`` narrowed to one engine: its rows, its ``engines`` entry and its errors; ``correct`` is that engine's."""
    rows = engine_rows(bench, engine)
    described = (bench.get('engines') or {}).get(engine)
    errors = [error for error in bench.get('errors') or [] if not engine_names(bench)
              or str(error).startswith(engine + ':')]
    narrowed = dict(bench, results=rows, errors=errors, engines={engine: described} if described else {})
    if engine_names(bench) and bench.get('correct') is not None:
        narrowed['correct'] = all(row.get('correct') is not False for row in rows)
    return narrowed


def judged_first(bench, judged):
    """``[(engine, narrowed bench)]``: the judged engine first, then the others in the order they ran; one
    ``(None, bench)`` for a JSON without engines."""
    names = engine_names(bench)
    if not names:
        return [(None, bench)]
    if judged not in names:
        raise ValueError('the benchmark ran %s, not the judged engine %s (validate_engine)' % (', '.join(names), judged))
    return [(name, engine_bench(bench, name)) for name in [judged] + [name for name in names if name != judged]]


def link_rate_bound(engine, described, world_size, node_gbps):
    """The bus bandwidth (GB/s) the slowest node's fabric allows ``engine``, None where no fabric carries the job.

    ``node_gbps`` is the slowest node's Active fabric rate in Gb/s. Per node, an allreduce sends 2(N-1)/N of the
    buffer through its NICs. A flat ring (NCCL's, MPI's) crosses each node boundary once per ring, so its busbw is at
    most the node's rate; the hierarchical ring sends only 2(N-1)/N of the buffer per node for busbw's 2(n-1)/n, so
    its bound is the node's rate x N/(N-1) x (n-1)/n (1.875 x on 2 nodes of 8 ranks, the rate itself as N grows).
    """
    if not node_gbps:
        return None
    described = described or {}
    nodes = described.get('nodes')
    rate = float(node_gbps) / 8
    if engine == 'ring' and described.get('hierarchical') and nodes and nodes > 1 and world_size:
        return rate * nodes / (nodes - 1.0) * (world_size - 1.0) / world_size
    if engine == 'ring' and nodes == 1:
        return None
    return rate


def rail_checks(rows, rail_threshold_at, min_size_bytes):
    """Each rail's inter-node bus bandwidth at the sizes >= ``min_size_bytes``, against ``rail_threshold_at(size)``:
    ``[{size_bytes, rail, local_rank, busbw_gbs, threshold_gbs, passed}]`` (rails that moved nothing are left out)."""
    checked = []
    for row in rows:
        if not isinstance(row, dict) or (row.get('size_bytes') or 0) < min_size_bytes:
            continue
        limit = rail_threshold_at(row['size_bytes'])
        for rail in row.get('rails') or []:
            if rail.get('busbw_gbs') is None or limit is None:
                continue
            checked.append({'size_bytes': row['size_bytes'], 'rail': rail_name(rail), 'local_rank': rail.get('local_rank'),
                            'busbw_gbs': float(rail['busbw_gbs']), 'threshold_gbs': limit,
                            'passed': float(rail['busbw_gbs']) >= limit})
    return checked


def rail_name(entry):
    """A rail's label: its fabric rail index where the launch wrapper named it, else ``local rank N``."""
    if entry.get('rail') is not None:
        return entry['rail']
    return 'local rank %s' % entry.get('local_rank')


def link_suspects(links, limit_gbs):
    """The ends the ring's link probe blames: ``[{host, rail, direction, links}]`` for each node whose every link of
    a rail in one direction (to 2 or more peers) is below ``limit_gbs`` - a node that sends slowly on a rail slows
    both its neighbours, a slow receiver hears both slowly. With 2 nodes each direction has one peer: the slow link
    is named, not an end."""
    if limit_gbs is None:
        return []
    by_end = {}
    for link in links or []:
        rail = rail_name(link)
        for host, direction in ((link.get('src'), 'sends'), (link.get('dst'), 'receives')):
            by_end.setdefault((host, rail, direction), []).append(link)
    suspects = []
    for (host, rail, direction), found in sorted(by_end.items(), key=lambda item: tuple(str(part) for part in item[0])):
        peers = set(link['dst' if direction == 'sends' else 'src'] for link in found)
        if len(peers) >= 2 and all(link.get('gbs') is not None and link['gbs'] < limit_gbs for link in found):
            suspects.append({'host': host, 'rail': rail, 'direction': direction,
                             'links': sorted(found, key=lambda link: link['gbs'])})
    return suspects


def slow_links(links, limit_gbs):
    """The probed links below ``limit_gbs``, slowest first."""
    if limit_gbs is None:
        return []
    return sorted((link for link in links or [] if link.get('gbs') is not None and link['gbs'] < limit_gbs),
                  key=lambda link: link['gbs'])


# what NCCL says it used, in the INFO lines the nccl engine keeps (files/bench/allreduce_nccl.py)
_NCCL_NETWORK = re.compile(r'NCCL INFO Using network (\S+)')
_NCCL_DEVICES = re.compile(r'NCCL INFO NET/IB : Using (.*?)(?:\[RO\])?\s*;\s*OOB')
_NCCL_DEVICE = re.compile(r'([A-Za-z0-9_]+:\d+)/([A-Za-z]+)')
_NCCL_SETTING = re.compile(r'NCCL INFO (NCCL_[A-Z0-9_]+) set (?:by environment )?to (.*?)\.?\s*$')


def nccl_used(lines):
    """What one host's NCCL INFO lines say NCCL used: ``{network, devices: [{device, link_layer}], settings: {NAME:
    value}}`` - the transport (``IB``, ``Socket``, a plugin's ``IBext_v8``), the RDMA ports of ``NET/IB : Using`` and
    the variables NCCL says it read (``NCCL_IB_TC set by environment to 106``); None where a line does not say."""
    used = {'network': None, 'devices': [], 'settings': {}}
    for line in lines or []:
        text = str(line)
        network = _NCCL_NETWORK.search(text)
        if network:
            used['network'] = network.group(1)
        devices = _NCCL_DEVICES.search(text)
        if devices:
            used['devices'] = [{'device': device, 'link_layer': layer} for device, layer in _NCCL_DEVICE.findall(devices.group(1))]
        setting = _NCCL_SETTING.search(text)
        if setting:
            used['settings'][setting.group(1)] = setting.group(2).strip()
    return used


def _hca_names(value):
    """The ports an ``NCCL_IB_HCA`` value selects (its ``=`` exact-match prefix dropped); None for an exclusion list."""
    value = str(value or '').strip()
    if value.startswith('^'):
        return None
    return [name for name in value.lstrip('=').split(',') if name]


def nccl_mismatches(used, environment):
    """Where what NCCL says it used differs from the job environment the rank had (``{NAME: value}``): a variable NCCL
    read with another value, a device outside ``NCCL_IB_HCA``, the socket transport where the job names RDMA ports."""
    found = []
    environment = environment or {}
    for name, value in sorted((used.get('settings') or {}).items()):
        if name in environment and str(environment[name]).strip() != value:
            found.append('NCCL read %s=%s, the job environment has %s' % (name, value, environment[name]))
    wanted = _hca_names(environment.get('NCCL_IB_HCA'))
    if wanted:
        for entry in used.get('devices') or []:
            device = entry['device']
            if device not in wanted and device.split(':')[0] not in wanted:
                found.append('NCCL used %s, which NCCL_IB_HCA=%s leaves out' % (device, environment['NCCL_IB_HCA']))
        if used.get('network') == 'Socket':
            found.append('NCCL used sockets although the job environment names RDMA ports (NCCL_IB_HCA=%s)'
                         % environment['NCCL_IB_HCA'])
    return found


def _largest(rows):
    rows = [row for row in rows if isinstance(row, dict) and row.get('size_bytes')]
    return max(rows, key=lambda row: row['size_bytes']) if rows else None


def engines_summary(runs, node_gbps=None):
    """One entry per engine of the all-node job (the report's runs that name an ``engine``, judged first):
    ``{engine, judged, algorithm, size_bytes, busbw_gbs, bound_gbs, ratio, component, note, correct, rails, links,
    version, debug}`` at the largest size; ``rails`` and ``links`` are the ring's, ``version`` and ``debug`` (each
    host's kept NCCL INFO lines) NCCL's."""
    summary = []
    for run in runs or []:
        if not isinstance(run, dict) or not run.get('engine'):
            continue
        name, bench = run['engine'], run.get('bench') or {}
        described = (bench.get('engines') or {}).get(name) or {}
        largest = _largest(bench.get('results') or [])
        bound = link_rate_bound(name, described, bench.get('world_size'), node_gbps)
        busbw = largest.get('busbw_gbs') if largest else None
        summary.append({
            'engine': name, 'judged': bool(run.get('judged')), 'algorithm': described.get('algorithm'),
            'size_bytes': largest.get('size_bytes') if largest else None, 'busbw_gbs': busbw,
            'bound_gbs': bound, 'ratio': busbw / bound if busbw is not None and bound else None,
            'component': described.get('component'),
            'note': described.get('note') or '; '.join(described.get('notes') or []) or None,
            'correct': bench.get('correct'),
            'rails': (largest or {}).get('rails') or [], 'links': described.get('links') or [],
            'version': described.get('version'), 'debug': described.get('debug'),
        })
    return summary
