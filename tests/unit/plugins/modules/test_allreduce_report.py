# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""allreduce_report module: the three files, idempotence, check mode, diff and a missing matplotlib."""

from __future__ import annotations

import json
import os

import struct

from ansible_collections.hpcfabric.cluster.plugins.module_utils.isolation import isolation_step
from ansible_collections.hpcfabric.cluster.plugins.module_utils.node_verdicts import node_verdicts
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.thresholds import allreduce_threshold
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.verdicts import allreduce_verdict
from ansible_collections.hpcfabric.cluster.plugins.modules import allreduce_report

MIB = 1024 * 1024
PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'


def bench(busbw, hosts):
    return {'world_size': 2 * len(hosts), 'device': 'cpu', 'hosts': hosts,
            'mpi': {'library_version': 'Open MPI v4.1.4', 'cuda_aware': False}, 'correct': True,
            'results': [{'size_bytes': MIB << power, 'time_us': 100.0 * (power + 1), 'algbw_gbs': busbw / 2,
                         'busbw_gbs': busbw * (1 + power / 10.0)} for power in range(11)]}


def make_report(threshold):
    threshold = dict(threshold, min_size_bytes=256 * MIB)
    hosts = ['node01', 'node02', 'node03']
    full = bench(0.5, hosts)
    pairs = [{'hosts': pair, 'rail': 0, 'round': index, 'stage': 'ring', 'error': None,
              'bench': bench(0.01 if 'node02' in pair else 2.0, pair)}
             for index, pair in enumerate((['node01', 'node02'], ['node02', 'node03'], ['node03', 'node01']))]
    # the confirmation that names node02: against node01, which passed with node03
    pairs.append({'hosts': ['node01', 'node02'], 'rail': 0, 'round': 3, 'stage': 'confirm', 'error': None,
                  'bench': bench(0.01, ['node01', 'node02'])})
    rails = dict((host, {'0': {'interface': 'fab0', 'net_device': 'fab0'}}) for host in hosts)
    return {
        'generated': '2025-01-02T03:04:05+00:00',
        'cluster': {'hosts': hosts, 'world_size': 6, 'device': 'cpu', 'mpi_library': 'Open MPI v4.1.4'},
        'threshold': threshold,
        'verdict': allreduce_verdict(full, threshold, threshold['min_size_bytes']),
        'runs': [{'name': 'all nodes (6 ranks)', 'hosts': hosts, 'bench': full}]
        + [{'name': 'pair ' + ' + '.join(p['hosts']), 'hosts': p['hosts'], 'bench': p['bench']} for p in pairs],
        'isolation': isolation_step(pairs, hosts, rails, threshold, threshold['min_size_bytes']),
        'preflight': {'node01': [], 'node02': [], 'node03': []},
        'train_smoke': None,
    }


REPORT = make_report(allreduce_threshold('explicit', min_busbw_gbs=1.5))


def _paths(dest):
    return {'json': str(dest / 'report.json'), 'md': str(dest / 'report.md'), 'png': str(dest / 'allreduce.png'),
            'rails': str(dest / 'rails.png')}


def _png_size(data):
    assert data.startswith(PNG_SIGNATURE)
    return struct.unpack('>II', data[16:24])


def test_writes_four_files_then_changes_nothing(run_module, tmp_path):
    dest = tmp_path / 'reports' / 'gpu_nodes'
    result = run_module(allreduce_report, {'dest': str(dest), 'report': REPORT})
    assert result.get('failed') is not True, result
    assert result['changed'] is True
    assert result['paths'] == _paths(dest)
    assert sorted(result['updated']) == sorted(_paths(dest).values())
    # the report as given, with the verdict of every node
    written = dict(REPORT, verdicts=node_verdicts(REPORT))
    assert json.loads((dest / 'report.json').read_text(encoding='utf-8')) == written
    text = (dest / 'report.json').read_text(encoding='utf-8')
    assert text == json.dumps(written, indent=2, sort_keys=True, ensure_ascii=False) + '\n'
    assert result['bad_hosts'] == written['verdicts']['bad_hosts'] == ['node02']
    markdown = (dest / 'report.md').read_text(encoding='utf-8')
    assert markdown.startswith('# Allreduce validation: FAIL\n')
    assert '![bus bandwidth against message size](allreduce.png)' in markdown
    png = (dest / 'allreduce.png').read_bytes()
    assert png.startswith(PNG_SIGNATURE)
    assert b'Software' not in png
    before = dict((name, os.stat(path).st_mtime_ns) for name, path in _paths(dest).items())

    again = run_module(allreduce_report, {'dest': str(dest), 'report': REPORT})
    assert again['changed'] is False
    assert again['updated'] == []
    assert dict((name, os.stat(path).st_mtime_ns) for name, path in _paths(dest).items()) == before


def test_only_the_changed_files_are_rewritten(run_module, tmp_path):
    run_module(allreduce_report, {'dest': str(tmp_path), 'report': REPORT})
    changed = dict(REPORT, generated='2025-02-03T04:05:06+00:00')
    result = run_module(allreduce_report, {'dest': str(tmp_path), 'report': changed})
    assert result['changed'] is True
    assert sorted(result['updated']) == [str(tmp_path / 'report.json'), str(tmp_path / 'report.md')]


def test_calibrated_threshold_is_drawn_per_size(run_module, tmp_path):
    baseline = bench(1.2, ['node01', 'node02', 'node03'])
    report = make_report(allreduce_threshold('calibrated', calibrated_fraction=0.9, baseline=baseline))
    result = run_module(allreduce_report, {'dest': str(tmp_path), 'report': report})
    assert result['changed'] is True
    assert (tmp_path / 'allreduce.png').read_bytes().startswith(PNG_SIGNATURE)
    assert 'calibrated: 0.9 × the baseline' in (tmp_path / 'report.md').read_text(encoding='utf-8')


def test_many_runs_draw(run_module, tmp_path):
    report = dict(REPORT, runs=REPORT['runs'] * 5)
    result = run_module(allreduce_report, {'dest': str(tmp_path), 'report': report})
    assert result.get('failed') is not True, result
    assert (tmp_path / 'allreduce.png').read_bytes().startswith(PNG_SIGNATURE)


def test_check_mode_writes_nothing(run_module, tmp_path):
    dest = tmp_path / 'new'
    result = run_module(allreduce_report, {'dest': str(dest), 'report': REPORT, '_ansible_diff': True},
                        check_mode=True)
    assert result['changed'] is True
    assert sorted(result['updated']) == sorted(_paths(dest).values())
    assert not dest.exists()
    assert [entry['after_header'] for entry in result['diff']] == [str(dest / 'report.json'), str(dest / 'report.md')]
    assert result['diff'][1]['before'] == ''
    assert result['diff'][1]['after'].startswith('# Allreduce validation: FAIL')

    run_module(allreduce_report, {'dest': str(dest), 'report': REPORT})
    changed = dict(REPORT, generated='later')
    result = run_module(allreduce_report, {'dest': str(dest), 'report': changed}, check_mode=True)
    assert result['changed'] is True
    assert json.loads((dest / 'report.json').read_text(encoding='utf-8'))['generated'] == REPORT['generated']


def test_without_png(run_module, tmp_path, monkeypatch):
    monkeypatch.setattr(allreduce_report, 'HAS_MATPLOTLIB', False)
    result = run_module(allreduce_report, {'dest': str(tmp_path), 'report': REPORT, 'png': False})
    assert result.get('failed') is not True, result
    assert result['paths'] == {'json': str(tmp_path / 'report.json'), 'md': str(tmp_path / 'report.md')}
    assert sorted(os.listdir(str(tmp_path))) == ['report.json', 'report.md']
    assert '![' not in (tmp_path / 'report.md').read_text(encoding='utf-8')


def test_missing_matplotlib_fails_clearly(run_module, tmp_path, monkeypatch):
    monkeypatch.setattr(allreduce_report, 'HAS_MATPLOTLIB', False)
    result = run_module(allreduce_report, {'dest': str(tmp_path / 'r'), 'report': REPORT})
    assert result['failed'] is True
    assert 'matplotlib' in result['msg']
    assert 'ansible_playbook_python' in result['msg']
    assert 'png=false' in result['msg']
    assert not (tmp_path / 'r').exists()


def test_dest_must_be_a_directory(run_module, tmp_path):
    target = tmp_path / 'file'
    target.write_text('x', encoding='utf-8')
    result = run_module(allreduce_report, {'dest': str(target), 'report': REPORT})
    assert result['failed'] is True
    assert result['msg'] == 'dest %s exists and is not a directory' % target


def test_malformed_report_fails(run_module, tmp_path):
    result = run_module(allreduce_report, {'dest': str(tmp_path), 'report': {'runs': []}})
    assert result['failed'] is True
    assert result['msg'].startswith('cannot render the report: report.verdict must be')
    assert os.listdir(str(tmp_path)) == []


def test_drift_findings_are_in_report_json_and_md(run_module, tmp_path):
    finding = {'host': 'node02', 'component': 'package:rdma-core', 'seen': '44.0-1', 'expected': '44.0-2',
               'basis': 'majority'}
    report = dict(REPORT, drift=[finding])
    result = run_module(allreduce_report, {'dest': str(tmp_path), 'report': report, 'png': False})
    assert result.get('failed') is not True, result
    assert json.loads((tmp_path / 'report.json').read_text(encoding='utf-8'))['drift'] == [finding]
    assert '| node02 | package:rdma-core | 44.0-1 | 44.0-2 | most hosts |' in (tmp_path / 'report.md').read_text(
        encoding='utf-8')


def test_rails_heatmap_is_drawn_the_same_for_the_same_report(run_module, tmp_path):
    first, second = tmp_path / 'a', tmp_path / 'b'
    for dest in (first, second):
        result = run_module(allreduce_report, {'dest': str(dest), 'report': REPORT})
        assert result.get('failed') is not True, result
    png = (first / 'rails.png').read_bytes()
    assert png == (second / 'rails.png').read_bytes()
    assert b'Software' not in png
    # 3 nodes on 1 rail: the smallest figure, 6 x 3 inches at 100 dpi
    assert _png_size(png) == (600, 300)
    markdown = (first / 'report.md').read_text(encoding='utf-8')
    assert '![best pair bus bandwidth per node and rail against the threshold](rails.png)' in markdown
    assert markdown.index('## Nodes') < markdown.index('## Cluster')
    assert '| node02 | **FAIL** | FAIL isolation: node: fails with every partner on every rail |' in markdown


def test_a_large_isolation_draws_a_taller_heatmap_of_its_lowest_nodes(run_module, tmp_path):
    hosts = ['node%03d' % number for number in range(1, 101)]
    threshold = dict(allreduce_threshold('explicit', min_busbw_gbs=1.5), min_size_bytes=256 * MIB)
    runs = [{'round': 0, 'stage': 'ring', 'rail': rail, 'hosts': [hosts[index], hosts[index + 1]],
             'passed': hosts[index] != 'node050', 'busbw_gbs': 0.2 if hosts[index] == 'node050' else 2.0,
             'mpirun_rc': 0, 'reason': ''} for rail in range(2) for index in range(0, 100, 2)]
    report = dict(REPORT, cluster=dict(REPORT['cluster'], hosts=hosts), threshold=threshold,
                  isolation={'rounds': 1, 'runs': runs, 'findings': [], 'pass_ratios': {}})
    result = run_module(allreduce_report, {'dest': str(tmp_path), 'report': report})
    assert result.get('failed') is not True, result
    # 48 rows of 2 rails: 0.4 in a row, 1.8 for the title and the labels
    width, height = _png_size((tmp_path / 'rails.png').read_bytes())
    assert (width, height) == (660, 2100)


def test_no_isolation_no_heatmap_and_an_old_one_is_removed(run_module, tmp_path):
    (tmp_path / 'rails.png').write_bytes(b'old')
    report = dict(REPORT, isolation=None)
    result = run_module(allreduce_report, {'dest': str(tmp_path), 'report': report}, check_mode=True)
    assert str(tmp_path / 'rails.png') in result['updated'] and (tmp_path / 'rails.png').exists()
    result = run_module(allreduce_report, {'dest': str(tmp_path), 'report': report})
    assert 'rails' not in result['paths'] and str(tmp_path / 'rails.png') in result['updated']
    assert not (tmp_path / 'rails.png').exists()
    assert 'No rail heatmap: the isolation did not run.' in (tmp_path / 'report.md').read_text(encoding='utf-8')
    # the all-node run failed and nothing isolated it: no node is proven bad, none is listed
    assert result['bad_hosts'] == []
    assert run_module(allreduce_report, {'dest': str(tmp_path), 'report': report})['changed'] is False


def test_without_png_neither_plot_is_drawn(run_module, tmp_path):
    result = run_module(allreduce_report, {'dest': str(tmp_path), 'report': REPORT, 'png': False})
    assert sorted(os.listdir(str(tmp_path))) == ['report.json', 'report.md']
    assert result['bad_hosts'] == ['node02']
