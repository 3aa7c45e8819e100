# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""hpcfabric.cluster.check_mode_notice: the notice in check mode, nothing in a real run."""
from __future__ import annotations

TASKS = """    - name: Say what check mode cannot show
      hpcfabric.cluster.check_mode_notice:
        msg: >-
          the repository is not there yet,
          so nothing can be read
"""


def test_check_mode_says_the_notice(os_play):
    run = os_play(TASKS, {'node': ('debian12', {})}, check=True)
    assert run.rc == 0, run.failed
    assert run.said[-1] == 'check mode: the repository is not there yet, so nothing can be read'


def test_a_real_run_says_nothing(os_play):
    run = os_play(TASKS, {'node': ('debian12', {})})
    assert run.rc == 0, run.failed
    assert not any('check mode' in msg for msg in run.said)


def test_an_empty_notice_is_refused(os_play):
    run = os_play(TASKS.replace('>-\n          the repository is not there yet,\n          so nothing can be read', "''"),
                  {'node': ('debian12', {})}, check=True)
    assert run.rc != 0
    assert run.failed == ['check_mode_notice: msg must be a non-empty string']
