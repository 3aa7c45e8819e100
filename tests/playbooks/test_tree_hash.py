# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The molecule result cache key (tools/tree_hash.py) changes with every file a scenario reads, and only with those:
a stale key lets a local `make test` report a pass for a tree it never ran."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def key(tmp_path, files, scenario='molecule/cluster'):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    proc = subprocess.run([sys.executable, str(ROOT / 'tools' / 'tree_hash.py'), scenario], cwd=tmp_path,
                          input='\0'.join(files), capture_output=True, text=True, check=True)
    return proc.stdout.strip()


BASE = {'roles/mpi/tasks/main.yml': 'a', 'molecule/cluster/converge.yml': 'b', 'molecule/shared/lab_create.yml': 'c',
        'tests/unit/fixtures/ibstat/one.txt': 'd', 'molecule/isolation/converge.yml': 'e', 'docs/lab.md': 'f',
        'tests/unit/plugins/test_x.py': 'g'}


@pytest.mark.parametrize('path', ['roles/mpi/tasks/main.yml', 'molecule/cluster/converge.yml',
                                  'molecule/shared/lab_create.yml', 'tests/unit/fixtures/ibstat/one.txt'])
def test_a_file_the_scenario_reads_changes_the_key(tmp_path, path):
    before = key(tmp_path / 'before', BASE)
    assert key(tmp_path / 'after', dict(BASE, **{path: 'changed'})) != before


@pytest.mark.parametrize('path', ['molecule/isolation/converge.yml', 'docs/lab.md', 'tests/unit/plugins/test_x.py'])
def test_a_file_the_scenario_does_not_read_leaves_the_key(tmp_path, path):
    before = key(tmp_path / 'before', BASE)
    assert key(tmp_path / 'after', dict(BASE, **{path: 'changed'})) == before
