# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""shared_dir_marks module: mark, count and remove on a real directory, check mode, and what it refuses."""

from __future__ import annotations

import os

from ansible_collections.hpcfabric.cluster.plugins.modules import shared_dir_marks

RUN = 'k3v9x0q2m4fzab12'


def test_marks_from_two_nodes_are_counted_then_removed(run_module, tmp_path):
    directory = str(tmp_path / 'scratch' / 'validate')
    first = run_module(shared_dir_marks, {'path': directory, 'run': RUN, 'host': 'node01'})
    assert first['changed'] is True and os.path.isfile(first['mark'])
    run_module(shared_dir_marks, {'path': directory, 'run': RUN, 'host': 'node02'})
    listed = run_module(shared_dir_marks, {'path': directory, 'run': RUN, 'state': 'listed'})
    assert (listed['changed'], listed['count'], len(listed['digest'])) == (False, 2, 64)
    gone = run_module(shared_dir_marks, {'path': directory, 'run': RUN, 'host': 'node01', 'state': 'absent'})
    assert gone['changed'] is True and not os.path.exists(first['mark'])
    again = run_module(shared_dir_marks, {'path': directory, 'run': RUN, 'host': 'node01', 'state': 'absent'})
    assert again['changed'] is False
    assert run_module(shared_dir_marks, {'path': directory, 'run': RUN, 'state': 'listed'})['count'] == 1


def test_check_mode_writes_nothing_and_says_what_it_would_do(run_module, tmp_path):
    directory = str(tmp_path / 'validate')
    result = run_module(shared_dir_marks, {'path': directory, 'run': RUN, 'host': 'node01'}, check_mode=True)
    assert result['changed'] is True and not os.path.exists(directory)
    absent = run_module(shared_dir_marks, {'path': directory, 'run': RUN, 'host': 'node01', 'state': 'absent'},
                        check_mode=True)
    assert absent['changed'] is False


def test_an_unwritable_directory_fails_naming_the_path(run_module, tmp_path):
    blocker = tmp_path / 'file'
    blocker.write_text('')
    result = run_module(shared_dir_marks, {'path': str(blocker / 'validate'), 'run': RUN, 'host': 'node01'})
    assert result['failed'] is True
    assert result['msg'].startswith(str(blocker))


def test_a_bad_run_name_or_missing_directory_fails(run_module, tmp_path):
    bad = run_module(shared_dir_marks, {'path': str(tmp_path), 'run': '../x', 'host': 'node01'})
    assert bad['failed'] is True and bad['msg'].startswith('run must be')
    missing = run_module(shared_dir_marks, {'path': str(tmp_path / 'nowhere'), 'run': RUN, 'state': 'listed'})
    assert missing['failed'] is True and missing['msg'].startswith(str(tmp_path / 'nowhere'))
