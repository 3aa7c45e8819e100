# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The path and from= pattern rules of input_syntax (the names, MACs and interface rules run through the hostile
inventory table, tests/unit/plugins/filter/test_hostile_inventory.py)."""
from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.input_syntax import from_pattern_problem, path_problem


@pytest.mark.parametrize('path', ['/var/tmp/hpcfabric-validate', '/opt/hpcx-v2.21', '/data/ckpt@run_1',
                                  '/usr/local/lib/hpcfabric', '/etc/mpi'])
def test_owned_directories_a_site_would_use_pass(path):
    assert path_problem(path) is None


@pytest.mark.parametrize('path, rule', [
    ('/', 'is a system directory'), ('/tmp', 'is a system directory'), ('/usr/local', 'is a system directory'),
    ('/sys/class/net', 'under /proc, /sys or /dev'), ('/dev/shm', 'is a system directory'),
    ('relative/dir', 'not an absolute normalised path'), ('/opt//hpcx', 'not an absolute normalised path'),
    ('//opt', 'not an absolute normalised path'), ('/opt/hpcx/', 'not an absolute normalised path'),
    ('/data/../etc', 'not an absolute normalised path'), ('/opt/./x', 'not an absolute normalised path'),
    ('/opt/my dir', 'blank, quote, control'), ('/opt/x\nExecStartPost=/bin/sh', 'blank, quote, control'),
    ('/opt/$(id)', 'blank, quote, control'), ('/opt/`id`', 'blank, quote, control'), ('/opt/a;b', 'blank, quote'),
    ('/opt/"x"', 'blank, quote'), ("/opt/x'", 'blank, quote'), ('/opt/*', 'blank, quote'), ('/opt/x#y', 'blank, quote'),
    ('/opt/[exec id]', 'blank, quote'), ('/opt/\u00a0x', 'blank, quote'), ('', 'must be a non-empty string'),
    (None, 'must be a non-empty string'), (7, 'must be a non-empty string'),
])
def test_owned_directories_that_would_hurt_are_refused_with_the_rule(path, rule):
    assert rule in path_problem(path)


def test_a_file_the_role_writes_may_sit_in_a_system_directory_but_keeps_the_syntax():
    assert path_problem('/etc/hpcfabric.json', owned=False) is None
    assert path_problem('/tmp', owned=False) is None
    assert 'blank, quote' in path_problem('/etc/mpi/host file', owned=False)


def test_a_private_directory_stays_out_of_world_writable_trees():
    assert path_problem('/root/.ansible/hpcfabric/ssh_trust/gpu_nodes', private=True) is None
    for shared in ('/tmp/keys', '/var/tmp/k'):
        assert 'every user can write to' in (path_problem(shared, private=True) or '')


@pytest.mark.parametrize('pattern', ['10.100.0.0/16', '10.0.0.5', 'fd00::/64', 'login01.example.org', 'b300-01'])
def test_from_patterns_that_name_sources_pass(pattern):
    assert from_pattern_problem(pattern) is None


@pytest.mark.parametrize('pattern', ['*', '10.0.0.*', '!10.0.0.1', '10.0.0.1,*', '10.0.0.0/8",command="sh', 'a b', '',
                                     None])
def test_from_patterns_that_widen_or_break_the_list_are_refused(pattern):
    assert from_pattern_problem(pattern)
