# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The storage role's read-back of findmnt --verify and of the live mounts (fixtures: tests/unit/fixtures/storage)."""
from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.storage_mounts import mount_plan
from ansible_collections.hpcfabric.cluster.plugins.module_utils.storage_readback import (
    findmnt_problems, findmnt_verify, live_problems)

NFS = {'src': 'nfs01.example.com:/export/datasets', 'path': '/data/datasets', 'fstype': 'nfs'}
LUSTRE = {'src': '10.10.5.1@o2ib0:10.10.5.2@o2ib0:/scratch', 'path': '/lustre/scratch', 'fstype': 'lustre'}
CHECKPOINTS = {'src': 'nfs01.example.com:/export/ckpt', 'path': '/data/checkpoints', 'fstype': 'nfs',
               'automount': True}


def plan(*mounts, state='mounted'):
    return mount_plan(list(mounts), 'nfsvers=4.2,nconnect=16,hard,noatime', 'flock,noatime', state,
                      ['lustre-client-utils'], ['o2ib0(ib0)'])['mounts']


@pytest.fixture
def mount_points(fixture_text):
    """The assembled /proc/mounts lines (fixtures/storage/SOURCES.md: not recorded as a whole) as
    ansible.builtin.mount_facts returns them: {mount point: {device, mount, fstype, options}} (its RETURN).
    tests/playbooks/test_storage_fabric_checks.py runs the module itself on them."""
    points = {}
    for line in fixture_text('storage', 'proc_mounts.txt').splitlines():
        device, mount, fstype, options = line.split()[:4]
        points.setdefault(mount, {'device': device, 'mount': mount, 'fstype': fstype, 'options': options})
    return points


def test_a_clean_fstab(fixture_text):
    assert findmnt_verify(fixture_text('storage', 'findmnt_verify_clean.txt')) == {'targets': {}, 'parse_errors': 0}
    assert findmnt_problems(plan(NFS), fixture_text('storage', 'findmnt_verify_clean.txt')) == []


def test_errors_on_the_roles_mount_points_are_problems_warnings_are_not(fixture_text):
    text = fixture_text('storage', 'findmnt_verify_errors.txt')
    verified = findmnt_verify(text)
    assert verified['parse_errors'] == 0
    assert verified['targets']['/lustre/scratch'] == {
        'errors': ['unreachable on boot required target: No such file or directory'],
        'warnings': ['unreachable source: 10.1.1.1@o2ib0:/scratch: No such file or directory',
                     'lustre seems unsupported by the current kernel',
                     'cannot detect on-disk filesystem type (No such file or directory)']}
    # /boot's warnings are another entry's, and /lustre/scratch is not one of these mounts
    assert findmnt_problems(plan(NFS), text) == [
        '/data/datasets: findmnt --verify: unreachable on boot required target: No such file or directory']
    assert findmnt_problems(plan(NFS, state='absent'), text) == []


def test_a_line_findmnt_cannot_parse_is_a_problem_whoever_wrote_it(fixture_text):
    assert findmnt_problems(plan(NFS), fixture_text('storage', 'findmnt_verify_parse_error.txt')) == [
        'findmnt --verify: /etc/fstab has 1 line(s) it cannot parse']


def test_output_that_is_not_findmnt_verify_is_named():
    assert findmnt_problems(plan(NFS), 'findmnt: unrecognized option --verify\n') == [
        'findmnt --verify: neither its counts ("N parse errors, N errors, N warnings") nor "Success, no errors or '
        'warnings detected": findmnt: unrecognized option --verify']


def test_the_assembled_mounts_hold_the_plan(mount_points):
    # nfs asked, nfs4 live; nfsvers=4.2 shown as vers=4.2; o2ib0 NIDs shown as o2ib; the automount still armed
    assert live_problems(plan(NFS, LUSTRE, CHECKPOINTS), mount_points) == []


@pytest.mark.parametrize('mount, expected', [
    (dict(NFS, path='/data/other'), ['/data/other is not mounted']),
    (dict(NFS, src='nfs02.example.com:/export/datasets'),
     ['/data/datasets is mounted from nfs01.example.com:/export/datasets, expected nfs02.example.com:/export/datasets']),
    (dict(NFS, opts='nfsvers=4.1,nconnect=8,hard'),
     ['/data/datasets: mounted with vers=4.2, expected nfsvers=4.1',
      '/data/datasets: mounted with nconnect=16, expected nconnect=8']),
    (dict(NFS, opts='nfsvers=4,soft,sec=krb5p'),
     ['/data/datasets: mounted without soft', '/data/datasets: mounted with sec=sys, expected sec=krb5p']),
    (dict(LUSTRE, src='10.10.5.1@o2ib0:10.10.5.3@o2ib0:/scratch'),
     ['/lustre/scratch is mounted from 10.10.5.1@o2ib:10.10.5.2@o2ib:/scratch, expected '
      '10.10.5.1@o2ib0:10.10.5.3@o2ib0:/scratch']),
    (dict(LUSTRE, path='/data/datasets'), ['/data/datasets is a nfs4 mount, expected lustre']),
    (dict(CHECKPOINTS, automount=False), ['/data/checkpoints is a autofs mount, expected nfs']),
    (dict(NFS, state='unmounted'),
     ['/data/datasets is mounted (nfs01.example.com:/export/datasets) but its state is unmounted']),
])
def test_each_difference_is_named(mount_points, mount, expected):
    assert live_problems(plan(mount), mount_points) == expected


def test_options_the_kernel_does_not_show_are_left_to_fstab(mount_points):
    mount = dict(NFS, opts='nfsvers=4.2,rsize=65536,actimeo=1,x-systemd.mount-timeout=30')
    assert live_problems(plan(mount), mount_points) == []


def test_present_only_records_fstab_so_nothing_live_is_expected():
    assert live_problems(plan(NFS, state='present'), {}) == []
