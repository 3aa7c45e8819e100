# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""allreduce_report module: the three files, idempotence, check mode, diff and a missing matplotlib."""

from __future__ import annotations

import json
import os

from ansible_collections.hpcfabric.cluster.plugins.module_utils.isolation import isolation_step
from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate_checks import (
    allreduce_threshold,
    allreduce_verdict,
)
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
    return {'json': str(dest / 'report.json'), 'md': str(dest / 'report.md'), 'png': str(dest / 'allreduce.png')}


def test_writes_three_files_then_changes_nothing(run_module, tmp_path):
    dest = tmp_path / 'reports' / 'gpu_nodes'
    result = run_module(allreduce_report, {'dest': str(dest), 'report': REPORT})
    assert result.get('failed') is not True, result
    assert result['changed'] is True
    assert result['paths'] == _paths(dest)
    assert sorted(result['updated']) == sorted(_paths(dest).values())
    assert json.loads((dest / 'report.json').read_text(encoding='utf-8')) == REPORT
    text = (dest / 'report.json').read_text(encoding='utf-8')
    assert text == json.dumps(REPORT, indent=2, sort_keys=True, ensure_ascii=False) + '\n'
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
