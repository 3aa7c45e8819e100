# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The path and from= pattern rules of input_syntax (the names, MACs and interface rules run through the hostile
inventory table, tests/unit/plugins/filter/test_hostile_inventory.py)."""
from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.input_syntax import (
    from_pattern_problem, from_pattern_problems, path_problem, path_problems)


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


def test_path_problems_name_each_variable_in_order():
    assert path_problems({'validate_work_dir': '/var/tmp/v', 'validate_bench_dir': '/', 'validate_report_dir': 'rel'}) == [
        "validate_bench_dir '/' is a system directory or under /proc, /sys or /dev, which the role would take over",
        "validate_report_dir 'rel' is not an absolute normalised path (no //, ., .. or trailing /)"]
    assert path_problems({'ssh_trust_key_dir': '/tmp/k'}, private=True) == [
        "ssh_trust_key_dir '/tmp/k' is under a directory every user can write to, which no secret belongs in"]
    with pytest.raises(ValueError, match='paths must be a mapping'):
        path_problems(['/tmp'])


def test_from_pattern_problems_name_each_entry_by_index():
    assert [p.split(' ')[0] for p in from_pattern_problems(['10.0.0.0/8', '*', 'login01', '!x'])] == ['[1]', '[3]']
    with pytest.raises(ValueError, match='must be a list'):
        from_pattern_problems('10.0.0.0/8')
