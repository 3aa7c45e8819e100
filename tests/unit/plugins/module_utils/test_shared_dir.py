# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The shared directory check on real directories: each node's mark and listing go through module_utils/shared_dir.py
on a temporary directory per filesystem, as the shared_dir_marks module does on a node, then problems judges them."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.hpcfabric.cluster.plugins.module_utils import shared_dir

RUN = 'k3v9x0q2m4fzab12'
DIR = '/lustre/scratch/validate'


def check(root, filesystems, unwritable=()):
    """Every node marks its filesystem's directory, then lists it: ``{host: {mark, listing}}`` shaped as the
    module's registered results. ``filesystems`` maps each host to the name of the filesystem its directory is on."""
    paths = dict((host, os.path.join(str(root), fs, 'validate')) for host, fs in filesystems.items())
    marks = {}
    for host, path in paths.items():
        if host in unwritable:
            marks[host] = {'failed': True, 'msg': '%s: Permission denied' % path}
        else:
            marks[host] = {'changed': True, 'mark': shared_dir.mark(path, host, RUN)}
    return dict((host, {'mark': marks[host],
                        'listing': {'skipped': True} if host in unwritable
                        else dict(shared_dir.listing(paths[host], RUN), changed=False)})
                for host in filesystems)


HOSTS = ['node01', 'node02', 'node03', 'node04']


def test_one_shared_directory_names_no_one(tmp_path):
    checks = check(tmp_path, dict.fromkeys(HOSTS, 'lustre'))
    assert set(listing['listing']['count'] for listing in checks.values()) == {4}
    assert shared_dir.problems(HOSTS, checks, DIR, 'hpcuser') == dict.fromkeys(HOSTS, [])


def test_a_node_without_the_mount_is_named_with_what_it_sees(tmp_path):
    checks = check(tmp_path, dict(dict.fromkeys(HOSTS, 'lustre'), node04='node04-disk'))
    assert shared_dir.problems(HOSTS, checks, DIR, 'hpcuser') == dict(dict.fromkeys(HOSTS[:3], []), node04=[
        'validate_checkpoint_dir /lustre/scratch/validate is not the directory 3 other nodes share (node01, node02, '
        'node03): node04 sees the files of itself only, not theirs; mount the shared filesystem there, or a '
        'checkpoint written on one node is missing where a job resumes'])


def test_the_first_node_without_the_mount_is_named_not_the_others(tmp_path):
    checks = check(tmp_path, dict(dict.fromkeys(HOSTS, 'lustre'), node01='node01-disk'))
    problems = shared_dir.problems(HOSTS, checks, DIR, 'hpcuser')
    assert [host for host in HOSTS if problems[host]] == ['node01']


def test_a_tie_keeps_the_first_nodes_filesystem(tmp_path):
    checks = check(tmp_path, {'node01': 'a', 'node02': 'b', 'node03': 'a', 'node04': 'b'})
    problems = shared_dir.problems(HOSTS, checks, DIR, 'hpcuser')
    assert [host for host in HOSTS if problems[host]] == ['node02', 'node04']
    assert 'node02 sees the files of node02, node04, not theirs' in problems['node02'][0]


def test_local_directories_everywhere_name_every_node(tmp_path):
    checks = check(tmp_path, dict((host, host) for host in HOSTS))
    problems = shared_dir.problems(HOSTS, checks, DIR, 'hpcuser')
    assert all(problems[host] == ['validate_checkpoint_dir /lustre/scratch/validate is not shared: no node sees a '
                                  'file another node wrote there; set it to a directory on the shared filesystem the '
                                  'nodes mount (Lustre, NFS)'] for host in HOSTS)


def test_a_node_that_cannot_write_is_named_with_the_error_and_the_rest_still_judged(tmp_path):
    checks = check(tmp_path, dict.fromkeys(HOSTS, 'lustre'), unwritable={'node02'})
    problems = shared_dir.problems(HOSTS, checks, DIR, 'hpcuser')
    assert problems['node02'] == [
        'validate_checkpoint_dir /lustre/scratch/validate: hpcuser cannot write there (%s/lustre/validate: Permission '
        'denied): create it on the shared filesystem, writable by hpcuser' % tmp_path]
    assert [host for host in HOSTS if problems[host]] == ['node02']


def test_a_listing_that_gave_up_waiting_still_counts_by_its_digest(tmp_path):
    """The lookup retries while a node sees fewer marks than were written; when it gives up, the registered result
    is failed but holds the last listing, which is what places the node."""
    checks = check(tmp_path, dict(dict.fromkeys(HOSTS, 'lustre'), node03='node03-disk'))
    checks['node03']['listing'].update(failed=True, attempts=13)
    problems = shared_dir.problems(HOSTS, checks, DIR, 'hpcuser')
    assert [host for host in HOSTS if problems[host]] == ['node03']


def test_one_node_has_nothing_to_compare(tmp_path):
    assert shared_dir.problems(['node01'], check(tmp_path, {'node01': 'disk'}), DIR, 'hpcuser') == {'node01': []}


def test_marks_of_another_run_and_other_files_are_not_counted(tmp_path):
    path = str(tmp_path)
    shared_dir.mark(path, 'node01', RUN)
    shared_dir.mark(path, 'node02', 'oldrun00oldrun00')
    (tmp_path / 'step-00000010.npz').write_text('')
    assert shared_dir.listing(path, RUN)['count'] == 1
    assert shared_dir.remove(path, 'node01', RUN) is True
    assert shared_dir.remove(path, 'node01', RUN) is False
    assert shared_dir.listing(path, RUN)['count'] == 0


@pytest.mark.parametrize('host, run, message', [
    ('node01/../etc', RUN, '^host must be a host name'),
    ('node01', 'short', '^run must be 8 to 64 lowercase letters and digits'),
    ('node01', 'UPPERCASE123', '^run must be'),
])
def test_mark_names_refuse_what_could_leave_the_directory(host, run, message):
    with pytest.raises(ValueError, match=message):
        shared_dir.mark_name(host, run)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from('abcd'), min_size=2, max_size=9))
def test_the_nodes_named_are_exactly_those_off_the_largest_filesystem(tmp_path_factory, assignment):
    """Any spread of nodes over filesystems: the largest filesystem (the first node's on a tie) is kept, every other
    node is named; when no two nodes share one, all are."""
    hosts = ['n%02d' % index for index in range(len(assignment))]
    filesystems = dict(zip(hosts, assignment))
    problems = shared_dir.problems(hosts, check(tmp_path_factory.mktemp('fs'), filesystems), DIR, 'u')
    sizes = dict((fs, assignment.count(fs)) for fs in assignment)
    biggest = max(sizes.values())
    kept = assignment[0] if sizes[assignment[0]] == biggest else sorted(
        (fs for fs in sizes if sizes[fs] == biggest), key=assignment.index)[0]
    expected = [] if len(sizes) == 1 else (hosts if biggest == 1 else [h for h in hosts if filesystems[h] != kept])
    assert [host for host in hosts if problems[host]] == expected
