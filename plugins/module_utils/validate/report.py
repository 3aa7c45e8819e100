# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The validation's report: its runs (the all-node job's engines, the judged one first, then the isolation's pair
runs) and report.md, the Markdown a sysadmin reads, both pure functions; the plots are ``plot.py``'s.

The report dict is documented in the ``allreduce_report`` module's ``report`` option.
"""

from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.node_verdicts import PASS, RANK, node_verdicts
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.engines import (
    LINKS_SHOWN, engine_names, engines_summary, judged_first, link_suspects, nccl_mismatches, nccl_used, rail_name,
    slow_links,
)
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.units import format_gbs, human_size
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.verdicts import allreduce_verdict, suspect_text

# a run over a thousand nodes would otherwise print a thousand names in a heading line
HOSTS_SHOWN = 16
# every port of a large cluster moves a dozen counters in every job; report.json keeps them all
COUNTER_ROWS_SHOWN = 400
# a whole rack one release behind is a drift row per node and component; report.json keeps them all
DRIFT_ROWS_SHOWN = 400
# a thousand PASS rows bury the few that matter: past this many hosts the table keeps the others
NODE_ROWS_SHOWN = 400
# where a drift finding's expected version comes from (module_utils/drift.py)
_DRIFT_BASIS = {'golden': 'validate_golden', 'majority': 'most hosts', 'tie': 'no majority: the newest'}


def _cell(value):
    text = '-' if value is None else str(value)
    return text.replace('\\', '\\\\').replace('|', '\\|').replace('\r', ' ').replace('\n', ' ').strip() or '-'


def _table(header, rows):
    lines = ['| ' + ' | '.join(header) + ' |', '|' + '|'.join('---' for dummy in header) + '|']
    lines.extend('| ' + ' | '.join(_cell(value) for value in row) + ' |' for row in rows)
    return lines


def _hosts_text(hosts):
    hosts = [str(host) for host in hosts or []]
    if len(hosts) <= HOSTS_SHOWN:
        return ', '.join(hosts) or '-'
    return '%s, ... %s (%d hosts)' % (', '.join(hosts[:HOSTS_SHOWN - 1]), hosts[-1], len(hosts))


def _first_line(text):
    # MPI_Get_library_version text runs over several lines (and may end in a NUL)
    lines = [line.strip() for line in str(text or '').replace('\x00', '').splitlines() if line.strip()]
    return lines[0] if lines else None


def _verdict_word(passed):
    return 'PASS' if passed else 'FAIL'


def _number_cell(value, digits=None):
    if value is None:
        return None
    if digits is not None:
        return '%.*f' % (digits, value)
    return format_gbs(value)


def _verdict_checks(verdict):
    """The checks ``allreduce_verdict`` made, ``(by size, by (size, rail))``: the report shows their pass or fail and
    threshold rather than comparing again."""
    sizes, rails = {}, {}
    for check in (verdict or {}).get('checked') or []:
        if 'rail' in check:
            rails[(check['size_bytes'], check['rail'])] = check
        else:
            sizes[check['size_bytes']] = check
    return sizes, rails


def _ok_cell(check, correct=None):
    """A row's ``ok``: the verdict's pass or fail of its check, ``-`` where the verdict checked none."""
    if correct is False:
        return '**wrong result**'
    if check is None:
        return '-'
    return 'yes' if check['passed'] else '**no**'


def _exit_text(rc, tool='mpirun'):
    # a run recorded before exit statuses were kept has none
    if rc is None:
        return ''
    return '; %s exit status: %s' % (tool, rc if rc == 0 else '**%s**' % rc)


def _rails_table(rows, min_size, rail_checks):
    """The ring's rails at the checked sizes: each rail's inter-node bus bandwidth, with the verdict's check of it
    against the one-rail threshold (``rail_checks``, by size and rail) where it made one."""
    table = []
    for row in rows:
        if (row.get('size_bytes') or 0) < min_size:
            continue
        for rail in row.get('rails') or []:
            check = rail_checks.get((row['size_bytes'], rail_name(rail)))
            table.append([human_size(row['size_bytes']), rail_name(rail), _number_cell(rail.get('inter_us'), 1),
                          _number_cell(rail.get('busbw_gbs')), _number_cell(check and check['threshold_gbs']),
                          _ok_cell(check)])
    if not table:
        return []
    return ['', 'Rails (each local rank\'s ring across the nodes, the inter-node phase):', ''] + _table(
        ['size', 'rail', 'inter-node (µs)', 'busbw (GB/s)', 'rail threshold (GB/s)', 'ok'], table)


def _run_section(run, verdict, min_size=0):
    """A run's table, its ``ok`` cells the checks of its ``verdict`` (``allreduce_verdict``'s); ``verdict`` None for
    an engine that is reported beside the judged one. ``min_size`` is the smallest size whose rails are shown."""
    bench = run.get('bench') or {}
    lines = ['### %s' % (run.get('name') or 'run'), '']
    if bench.get('tool') == 'ib_write_bw':
        lines.append('Hosts: %s; ib_write_bw, buffers in %s memory; results not checked%s' % (
            _hosts_text(run.get('hosts') or bench.get('hosts')), 'GPU' if bench.get('device') == 'cuda' else 'host',
            _exit_text(run.get('mpirun_rc'), 'ib_write_bw')))
    else:
        correct = {True: 'yes', False: '**no**'}.get(bench.get('correct'), 'unknown')
        lines.append('Hosts: %s; %s ranks; results correct: %s%s%s' % (
            _hosts_text(run.get('hosts') or bench.get('hosts')), bench.get('world_size', '?'), correct,
            _exit_text(run.get('mpirun_rc')), '; reported, not judged' if run.get('judged') is False else ''))
    errors = bench.get('errors') or []
    if errors:
        lines.extend(['', 'Errors:', ''] + ['- %s' % _cell(error) for error in errors])
    lines.append('')
    sizes, rails = _verdict_checks(verdict)
    rows = []
    for row in bench.get('results') or []:
        size = row.get('size_bytes')
        check = sizes.get(size)
        rows.append([human_size(size) if size is not None else None, _number_cell(row.get('time_us'), 1),
                     _number_cell(row.get('algbw_gbs')), _number_cell(row.get('busbw_gbs')),
                     _number_cell(check and check['threshold_gbs']), _ok_cell(check, row.get('correct'))])
    header = ['size', 'time (µs)', 'algbw (GB/s)', 'busbw (GB/s)', 'threshold (GB/s)', 'ok']
    lines += _table(header, rows)
    if verdict is not None:
        lines += _rails_table(bench.get('results') or [], min_size, rails)
    return lines + ['']


def _job_environment_lines(environment):
    """What the ranks of the first node ran with (UCX, NCCL, the wrapper's binding), as the bench read it."""
    if not environment:
        return []
    lines = ['The job environment the ranks on %s ran with (the users\' job environment and the wrapper\'s binding):'
             % environment.get('host'), '']
    lines += _table(['local rank', 'variables'], [
        [rank.get('local_rank'), ' '.join('%s=%s' % item for item in sorted((rank.get('variables') or {}).items())) or None]
        for rank in environment.get('ranks') or []])
    differs = _hosts_text(environment.get('differs_on')) if environment.get('differs_on') else 'none'
    lines += ['', 'Other nodes whose ranks ran with other values (the binding aside): %s.' % differs, '']
    return lines


def _nccl_lines(item, environment):
    """What NCCL said it used on each host, against the job environment of the first node's first rank."""
    debug = item.get('debug')
    if item['engine'] != 'nccl' or not isinstance(debug, dict):
        return []
    ranks = (environment or {}).get('ranks') or [{}]
    wanted = ranks[0].get('variables') or {}
    lines = ['### NCCL', '']
    if not debug:
        return lines + ['NCCL %s left no INFO lines to read (the job set NCCL_DEBUG itself?).' % (item.get('version') or ''), '']
    hosts = sorted(debug)
    used = nccl_used(debug[hosts[0]])
    lines.append('What NCCL %s said it used on %s: network %s; devices %s; variables it read: %s.' % (
        item.get('version') or '?', hosts[0], used['network'] or 'not said',
        ', '.join('%s (%s)' % (entry['device'], entry['link_layer']) for entry in used['devices']) or 'none named',
        ', '.join('%s=%s' % pair for pair in sorted(used['settings'].items())) or 'none'))
    found = ['%s: %s' % (host, problem) for host in hosts for problem in nccl_mismatches(nccl_used(debug[host]), wanted)]
    lines += [''] + (['Against the job environment of %s:' % (environment or {}).get('host'), '']
                     + ['- **%s**' % _cell(problem) for problem in found] if found else
                     ['Against the job environment of %s: no difference.' % (environment or {}).get('host')]) + ['']
    return lines


def _engines_section(report):
    """The all-node job's engines side by side, against what the slowest node's fabric allows them."""
    rates = report.get('link_rates') or {}
    summary = engines_summary(report.get('runs'), rates.get('node_gbps'))
    if not summary:
        return []
    lines = ['## Engines', '']
    if rates.get('node_gbps'):
        lines += ['Link-rate bound: what the slowest node\'s Active fabric ports (%s Gb/s) allow each engine\'s bus '
                  'bandwidth (docs/validate.md, "Engines").' % format_gbs(rates['node_gbps']), '']
    else:
        lines += ['No link-rate bound: no node has Active RDMA ports with a known rate.', '']
    rows = [[item['engine'], 'judged' if item['judged'] else 'reported', human_size(item['size_bytes'])
             if item['size_bytes'] else None, _number_cell(item['busbw_gbs']), _number_cell(item['bound_gbs']),
             '-' if item['ratio'] is None else '%.2f' % item['ratio'],
             {True: 'yes', False: '**no**'}.get(item['correct'], '-'),
             '; '.join(part for part in (item['algorithm'], 'MPI_Allreduce served by coll/%s' % item['component']
                                         if item['component'] else None, item['note']) if part)]
            for item in summary]
    lines += _table(['engine', 'verdict', 'largest size', 'busbw (GB/s)', 'link-rate bound (GB/s)', 'ratio', 'correct',
                     'how'], rows) + ['']
    environment = ((report.get('runs') or [{}])[0].get('bench') or {}).get('job_environment')
    lines += _job_environment_lines(environment)
    for item in summary:
        lines += _nccl_lines(item, environment)
    # a calibrated one-rail threshold has a value per size: links are then shown slowest first, none called slow
    rail_limit = (report.get('rail_threshold') or {}).get('min_busbw_gbs')
    for item in summary:
        if not item['links']:
            continue
        lines += ['### Ring links', '',
                  'Every rail ring\'s links, each timed on its own with all rails at once (%s each way).'
                  % human_size(item['links'][0].get('bytes') or 0), '']
        suspects = link_suspects(item['links'], rail_limit)
        lines += ['- **%s**: %s' % suspect_text(found) for found in suspects]
        lines += [''] if suspects else []
        slow = slow_links(item['links'], rail_limit)
        shown = slow if slow else sorted(item['links'], key=lambda link: link.get('gbs') or 0)
        title = ('below the rail threshold (%s GB/s)' % format_gbs(rail_limit) if slow else 'the slowest, none below '
                 'the rail threshold' if rail_limit is not None else 'the slowest')
        lines += ['Links %s:' % title, ''] + _table(['rail', 'from', 'to', 'GB/s'], [
            [rail_name(link), link.get('src'), link.get('dst'), _number_cell(link.get('gbs'))]
            for link in shown[:LINKS_SHOWN]]) + ['']
        if len(shown) > LINKS_SHOWN:
            lines += ['... and %d more in report.json.' % (len(shown) - LINKS_SHOWN), '']
    return lines


def _isolation_section(isolation):
    stages = isolation.get('stages') or {}
    lines = ['## Isolation', '', isolation.get('summary') or '', '',
             'Rounds: %s (%s); runs: %d.' % (isolation.get('rounds', '-'), ', '.join(
                 '%s %s' % (stage, stages[stage]) for stage in ('ring', 'confirm', 'repeat') if stage in stages) or '-',
                 len(isolation.get('runs') or [])), '']
    if (isolation.get('threshold') or {}).get('description'):
        lines += ['Each pair run (one rank per node, one rail) is judged against %s.' % isolation['threshold']['description'],
                  '']
    findings = isolation.get('findings') or []
    if findings:
        rows = [[item.get('kind'), item.get('host'), item.get('rail'), item.get('interface'), item.get('action'),
                 '; '.join(item.get('evidence') or [])] for item in findings]
        lines += ['### Findings', ''] + _table(['kind', 'host', 'rail', 'interface', 'action', 'evidence'], rows) + ['']
    else:
        lines += ['No finding: no node, link or rail to blame.', '']
    ratios = dict((host, ratio) for host, ratio in sorted((isolation.get('pass_ratios') or {}).items())
                  if ratio.get('all') is not None and ratio['all'] < 1)
    if ratios:
        rows = [[host, ratio['all'], ', '.join('%s: %s' % (rail, '-' if value is None else value)
                                               for rail, value in sorted(ratio.get('rails', {}).items()))]
                for host, ratio in ratios.items()]
        lines += ['### Pass ratios below 1', ''] + _table(['host', 'all runs', 'per rail'], rows) + ['']
    rows = [[run.get('round'), run.get('stage'), run.get('rail'), ' + '.join(run.get('hosts') or []),
             _number_cell(run.get('busbw_gbs')), _verdict_word(run.get('passed')), run.get('reason')]
            for run in isolation.get('runs') or []]
    lines += ['### Runs', ''] + _table(['round', 'stage', 'rail', 'pair', 'lowest busbw (GB/s)', 'result', 'reason'],
                                       rows) + ['']
    return lines


def _preflight_section(preflight):
    failing = dict((host, problems) for host, problems in sorted(preflight.items()) if problems)
    lines = ['## Preflight', '']
    if not failing:
        return lines + ['No problem on any of the %d hosts.' % len(preflight), '']
    for host, problems in failing.items():
        lines.append('- **%s**' % _cell(host))
        lines.extend('  - %s' % _cell(problem) for problem in problems)
    return lines + ['']


def _drift_section(drift):
    lines = ['## Version drift', '']
    if not drift:
        return lines + ['No drift: every host runs the same versions.', '']
    hosts = sorted(set(str(finding.get('host')) for finding in drift))
    lines += ['%d findings on %d hosts: %s.' % (len(drift), len(hosts), _hosts_text(hosts)), '']
    rows = [[finding.get('host'), finding.get('component'), finding.get('seen') or '(none)',
             finding.get('expected') or '(none)', _DRIFT_BASIS.get(finding.get('basis'), finding.get('basis'))]
            for finding in drift[:DRIFT_ROWS_SHOWN]]
    lines += _table(['host', 'component', 'seen', 'expected', 'expected from'], rows) + ['']
    if len(drift) > DRIFT_ROWS_SHOWN:
        lines += ['... and %d more findings in report.json.' % (len(drift) - DRIFT_ROWS_SHOWN), '']
    return lines


def _nodes_section(verdicts, plot, rails_plot, isolation):
    nodes = verdicts['nodes']
    counts = dict((word, sum(1 for node in nodes if node['verdict'] == word)) for word in RANK)
    lines = ['## Nodes', '', '%s of %d hosts.' % (', '.join('%d %s' % (counts[word], word) for word in sorted(
        RANK, key=RANK.get, reverse=True) if counts[word]) or 'none', len(nodes))]
    if verdicts['bad_hosts']:
        lines[-1] += ' FAIL, in the bad hosts file (for --limit or a drain): %s.' % _hosts_text(verdicts['bad_hosts'])
    lines.append('')
    shown = nodes if len(nodes) <= NODE_ROWS_SHOWN else [node for node in nodes if node['verdict'] != PASS]
    rows = []
    for node in shown[:NODE_ROWS_SHOWN]:
        reasons = node['reasons']
        actions = [item['action'] for item in reasons if item.get('action')]
        rows.append([node['host'], '**%s**' % node['verdict'] if node['verdict'] != PASS else PASS,
                     '<br>'.join(_cell('%s %s: %s' % (item['verdict'], item['source'], item['reason']))
                                 for item in reasons) or None,
                     '<br>'.join(_cell(action) for action in dict.fromkeys(actions)) or None])
    if rows:
        lines += _table(['host', 'verdict', 'reasons', 'actions'], rows) + ['']
    if len(nodes) > len(rows):
        lines += ['... and %d more hosts (%d of them PASS) in report.json `verdicts`.' % (
            len(nodes) - len(rows), counts[PASS]), '']
    if verdicts['cluster']:
        lines += ['Not one node\'s:', ''] + ['- **%s** %s: %s - %s' % (
            item['verdict'], item['source'], _cell(item['reason']), _cell(item['action'])) for item in verdicts['cluster']]
        lines.append('')
    if verdicts['not_checked']:
        lines += ['Not checked: %s; a PASS covers only what was checked.' % ', '.join(verdicts['not_checked']), '']
    if verdicts.get('not_read'):
        lines += ['Not read, so not covered by a PASS there: %s.' % '; '.join(
            _cell('%s %s (%s)' % (item.get('host'), item.get('source'), item.get('why'))) for item in verdicts['not_read']),
            '']
    if rails_plot:
        lines += ['![best pair bus bandwidth per node and rail against the threshold](%s)' % rails_plot, '']
    elif plot:
        lines += ['No rail heatmap: %s.' % ('the isolation did not run' if not isolation else 'no pair ran'), '']
    return lines


def _train_section(train):
    passed = train.get('passed')
    title = '## Smoke training'
    if passed is not None:
        title += ': %s' % _verdict_word(passed)
    lines = [title, '']
    exits = train.get('mpirun_rc')
    if isinstance(exits, dict):
        lines += ['mpirun exit status: %s' % ', '.join(
            '%s %s' % (name, '-' if rc is None else (rc if rc == 0 else '**%s**' % rc)) for name, rc in exits.items()), '']
    for name in sorted(train):
        part = train[name]
        if isinstance(part, dict) and name != 'mpirun_rc':
            rows = [[key, part[key]] for key in sorted(part) if not isinstance(part[key], (dict, list))]
            lines += ['### %s' % name, ''] + _table(['field', 'value'], rows) + ['']
    errors = [error for error in train.get('errors') or [] if error]
    if errors:
        lines += ['Errors:', ''] + ['- %s' % _cell(error) for error in errors] + ['']
    return lines


def _counters_section(counters):
    lines = ['## Port counters', '', counters.get('summary') or '', '']
    findings = counters.get('findings') or []
    if findings:
        lines += ['- **%s**: %s' % (finding.get('severity'), _cell(finding.get('message'))) for finding in findings]
        lines.append('')
    rows = []
    for job in counters.get('jobs') or []:
        for host, read in sorted((job.get('hosts') or {}).items()):
            for port, values in sorted((read.get('ports') or {}).items()):
                seconds = read.get('seconds')
                for counter, delta in sorted((values.get('deltas') or {}).items()):
                    rows.append([job.get('name'), host, port, values.get('rdma_port'), counter, delta,
                                 _number_cell(delta / seconds, 1) if seconds else None])
    if not rows:
        return lines + ['No counter moved.', '']
    header = ['job', 'host', 'port', 'RDMA port', 'counter', 'delta', 'per second']
    lines += _table(header, rows[:COUNTER_ROWS_SHOWN]) + ['']
    if len(rows) > COUNTER_ROWS_SHOWN:
        lines += ['... and %d more non-zero deltas in report.json.' % (len(rows) - COUNTER_ROWS_SHOWN), '']
    return lines


def _pair_verdict(run, threshold, min_size):
    """An isolation pair run's verdict, as the isolation took it: its checks are the rows' ``ok``."""
    try:
        return allreduce_verdict(run.get('bench') or {}, threshold, min_size)
    except ValueError as exc:
        raise ValueError('report.runs: %s: %s' % (run.get('name') or 'run', exc)) from exc


def render_markdown(report, plot=None, rails_plot=None):
    """Return report.md for the report dict; ``plot`` and ``rails_plot`` are the file names of the bandwidth plot and
    the rail heatmap to embed, where they are drawn."""
    if not isinstance(report, dict):
        raise ValueError('report must be a dict, got %s' % type(report).__name__)
    verdict = report.get('verdict')
    threshold = report.get('threshold')
    if not isinstance(verdict, dict) or 'passed' not in verdict:
        raise ValueError('report.verdict must be the result of allreduce_verdict, got %r' % (verdict,))
    if not isinstance(threshold, dict) or 'mode' not in threshold:
        raise ValueError('report.threshold must be the result of allreduce_threshold, got %r' % (threshold,))
    runs = report.get('runs') or []
    if not isinstance(runs, list):
        raise ValueError('report.runs must be a list, got %s' % type(runs).__name__)
    if report.get('drift') is not None and not isinstance(report['drift'], list):
        raise ValueError('report.drift must be a list of findings, got %s' % type(report['drift']).__name__)
    cluster = report.get('cluster') or {}
    lines = ['# Allreduce validation: %s' % _verdict_word(verdict['passed']), '']
    if report.get('generated'):
        lines += ['Generated %s.' % report['generated'], '']
    lines += ['**%s**: %s' % (_verdict_word(verdict['passed']), verdict.get('reason') or ''), '']
    lines += ['Threshold: %s; checked at sizes from %s.' % (
        threshold.get('description') or threshold['mode'], human_size(threshold.get('min_size_bytes') or 0)), '']
    if plot:
        lines += ['![bus bandwidth against message size](%s)' % plot, '']
    lines += _nodes_section(node_verdicts(report), plot, rails_plot, report.get('isolation'))
    lines += ['## Cluster', '']
    hosts = cluster.get('hosts') or []
    lines += _table(['item', 'value'], [
        ['hosts', '%s (%d)' % (_hosts_text(hosts), len(hosts))],
        ['world size', cluster.get('world_size')],
        ['device', cluster.get('device')],
        ['MPI library', _first_line(cluster.get('mpi_library'))],
    ]) + ['']
    lines += _engines_section(report)
    if report.get('preflight'):
        lines += _preflight_section(report['preflight'])
    # an empty list is a check that found nothing; null (or no key) is a check that did not run
    if report.get('drift') is not None:
        lines += _drift_section(report['drift'])
    if report.get('isolation'):
        lines += _isolation_section(report['isolation'])
    if report.get('train_smoke'):
        lines += _train_section(report['train_smoke'])
    if report.get('counters'):
        lines += _counters_section(report['counters'])
    # the per-size tables last: with the isolation pairs of a large cluster they are most of the file
    if runs:
        lines += ['## Runs', '']
        # the isolation's pair runs were judged against its pair threshold, at the all-node run's sizes, by the
        # verdict the isolation took (module_utils/isolation.py judge_run)
        pair_threshold = (report.get('isolation') or {}).get('threshold') or threshold
        min_size = threshold.get('min_size_bytes') or 0
        for index, run in enumerate(runs):
            if run.get('judged') is False:
                lines += _run_section(run, None)
            elif index == 0 or run.get('judged'):
                lines += _run_section(run, verdict, min_size)
            else:
                lines += _run_section(run, _pair_verdict(run, pair_threshold, min_size), min_size)
    return '\n'.join(lines).rstrip('\n') + '\n'


def report_runs(bench, pairs=None, mpirun_rc=None, engine=None):
    """The report's runs: the all-node run, one run per engine with the judged ``engine`` first, then every isolation
    run that has results.

    ``bench`` is the all-node bench JSON, ``pairs`` the isolation's runs ``{hosts, rail, stage, bench, error,
    mpirun_rc}`` (None when it did not run), ``mpirun_rc`` the all-node run's exit status, ``engine`` the judged
    engine (``validate_engine``; the bench's only one when None). Each run is ``{name, hosts, bench, mpirun_rc}``; an
    engine's run of the all-node job also has ``engine`` and ``judged``, and its ``bench`` holds that engine alone.
    """
    if not isinstance(bench, dict) or 'world_size' not in bench:
        raise ValueError('bench must be the JSON of files/bench/allreduce.py, got %r' % (bench,))
    names = engine_names(bench)
    if engine is None and len(names) > 1:
        raise ValueError('the benchmark ran %s: name the judged engine' % ', '.join(names))
    runs = []
    for name, narrowed in judged_first(bench, engine if engine is not None else (names or [None])[0]):
        run = {'name': 'all nodes (%d ranks)' % bench['world_size'], 'hosts': bench.get('hosts'), 'bench': narrowed,
               'mpirun_rc': mpirun_rc}
        if name is not None:
            run.update(name='%s, %s engine' % (run['name'], name), engine=name, judged=not runs)
        runs.append(run)
    for pair in pairs or []:
        if not isinstance(pair, dict) or 'hosts' not in pair:
            raise ValueError('isolation pairs must be {hosts, rail, stage, bench, error, mpirun_rc}, got %r' % (pair,))
        if pair.get('bench'):
            name = 'pair ' + ' + '.join(pair['hosts'])
            if pair.get('rail') is not None:
                name += ', rail %s' % pair['rail']
            if pair.get('stage'):
                name += ' (%s)' % pair['stage']
            runs.append({'name': name, 'hosts': pair['hosts'], 'bench': pair['bench'], 'mpirun_rc': pair.get('mpirun_rc')})
    return runs
