# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The storage role's mount checks and fstab options, including values that would break /etc/fstab."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.hpcfabric.cluster.plugins.module_utils.storage_mounts import (
    lnet_problems,
    mount_plan,
    mount_problems,
    normalize_mounts,
)

DEFAULTS = yaml.safe_load((Path(__file__).resolve().parents[4] / 'roles' / 'storage' / 'defaults' / 'main.yml')
                          .read_text())
NFS_OPTS = DEFAULTS['storage_nfs_options']
LUSTRE_OPTS = DEFAULTS['storage_lustre_options']
NFS = {'src': 'nfs01.example.com:/export/datasets', 'path': '/data/datasets', 'fstype': 'nfs'}
LUSTRE = {'src': '10.10.5.1@o2ib0:10.10.5.2@o2ib0:/scratch', 'path': '/lustre/scratch', 'fstype': 'lustre'}
PACKAGES = ('lustre-client-utils',)


def problems(*mounts, nfs_options=NFS_OPTS, lustre_options=LUSTRE_OPTS, lustre_packages=PACKAGES):
    return mount_problems(list(mounts), nfs_options, lustre_options, list(lustre_packages))


def test_the_example_inventory_mounts_pass():
    assert problems(NFS, LUSTRE) == []


@pytest.mark.parametrize('src', [
    'storage01:/export/datasets',
    '10.0.0.5:/',
    '[fd00::5]:/export',
    'nfs_01.example.com:/export/a,b',
])
def test_good_nfs_sources(src):
    assert problems(dict(NFS, src=src)) == []
    assert problems(dict(NFS, src=src, fstype='nfs4')) == []


@pytest.mark.parametrize('src', [
    '10.10.5.1@o2ib0:/scratch',
    'mgs1@tcp:/fs_1',
    '10.10.5.1@o2ib0,10.20.5.1@tcp0:10.10.5.2@o2ib0,10.20.5.2@tcp0:/scratch',
])
def test_good_lustre_sources(src):
    assert problems(dict(LUSTRE, src=src)) == []


# the messages of the checks the role had before they moved to Python
@pytest.mark.parametrize('mount, message', [
    (dict(NFS, path='data/datasets'), '[0].path data/datasets is not an absolute mount point'),
    (dict(NFS, path='/'), '[0].path / is not an absolute mount point'),
    (dict(NFS, src='nfs01.example.com'), '[0].src nfs01.example.com is not server:/export'),
    (dict(NFS, src='/export/datasets'), '[0].src /export/datasets is not server:/export'),
    (dict(NFS, src='nfs01:export'), '[0].src nfs01:export is not server:/export'),
    (dict(LUSTRE, src='10.10.5.1:/scratch'), '[0].src 10.10.5.1:/scratch is not nid@net:/fsname'),
    (dict(LUSTRE, src='10.10.5.1@o2ib0:/scratch/sub'), '[0].src 10.10.5.1@o2ib0:/scratch/sub is not nid@net:/fsname'),
    (dict(LUSTRE, src='10.10.5.1@O2IB:/scratch'), '[0].src 10.10.5.1@O2IB:/scratch is not nid@net:/fsname'),
])
def test_bad_forms_keep_their_messages(mount, message):
    assert problems(mount) == [message]


def test_duplicates_name_every_entry_even_written_differently():
    assert problems(NFS, dict(LUSTRE, path='/data/datasets/'), dict(NFS, path='/data/other')) == [
        '[0].path /data/datasets is listed more than once',
        '[1].path /data/datasets/ is listed more than once',
    ]


def test_lustre_needs_client_packages():
    assert problems(NFS, LUSTRE, lustre_packages=[]) == [
        'a Lustre mount is listed but storage_lustre_packages is empty (Lustre clients come from the site repository)']
    assert problems(NFS, lustre_packages=[]) == []


def test_problems_come_in_list_order_with_the_packages_last():
    assert problems(dict(LUSTRE, src='scratch'), dict(NFS, path='rel', src='nfs01'), lustre_packages=[]) == [
        '[0].src scratch is not nid@net:/fsname',
        '[1].path rel is not an absolute mount point',
        '[1].src nfs01 is not server:/export',
        'a Lustre mount is listed but storage_lustre_packages is empty (Lustre clients come from the site repository)',
    ]


# values that would end up in /etc/fstab and break it: split a field, end the line, start a comment
@pytest.mark.parametrize('key, value', [
    ('path', '/data/my datasets'),
    ('path', '/data/datasets\n/dev/sda1 / ext4 defaults 0 0'),
    ('path', '/data/\tdatasets'),
    ('path', '/data/#datasets'),
    ('path', '/data/\u00a0datasets'),
    ('path', '/data/\x00datasets'),
    ('src', 'nfs01:/export/my datasets'),
    ('src', 'nfs01:/export\n#'),
    ('src', 'nfs01:/export#x'),
    ('src', 'nfs01 :/export'),
    ('src', 'nfs01:/export\r'),
])
def test_values_that_break_fstab_are_refused(key, value):
    found = problems(dict(NFS, **{key: value}))
    assert len(found) == 1
    assert found[0].startswith('[0].%s "' % key)
    assert found[0].endswith('holds whitespace, a control character or #, which /etc/fstab cannot carry')
    # the value is quoted with its control characters escaped, so the message stays one line
    assert '\n' not in found[0] and '\t' not in found[0]


@pytest.mark.parametrize('mount, message', [
    (dict(NFS, opts='rw hard'), '[0].opts "rw hard" holds whitespace'),
    (dict(NFS, opts='hard\n/dev/sda1 /mnt ext4'), '[0].opts "hard\\n/dev/sda1 /mnt ext4" holds whitespace'),
    (dict(NFS, opts='hard,#comment'), '[0].opts "hard,#comment" holds whitespace'),
    (dict(NFS, opts=['hard']), '[0].opts is ["hard"], not a string of comma-separated options'),
])
def test_bad_own_options_are_refused(mount, message):
    found = problems(mount)
    assert len(found) == 1 and found[0].startswith(message), found


def test_bad_default_options_are_named_once_and_only_where_used():
    bad = 'nfsvers=4.2 hard'
    assert problems(NFS, dict(NFS, path='/data/b'), nfs_options=bad) == [
        'storage_nfs_options "nfsvers=4.2 hard" holds whitespace, a control character or #, which /etc/fstab '
        'cannot carry']
    assert problems(dict(NFS, opts='hard'), LUSTRE, nfs_options=bad) == []
    assert problems(LUSTRE, lustre_options='flock #') == [
        'storage_lustre_options "flock #" holds whitespace, a control character or #, which /etc/fstab cannot carry']


@pytest.mark.parametrize('mounts, expected', [
    ([{'path': '/data', 'fstype': 'nfs'}], ['[0].src is missing, not a non-empty string']),
    ([dict(NFS, path='')], ['[0].path is "", not a non-empty string']),
    ([dict(NFS, src=42)], ['[0].src is 42, not a non-empty string']),
    ([dict(NFS, fstype='ext4')], ['[0].fstype "ext4" is not one of nfs, nfs4, lustre']),
    ([dict(NFS, path='/data/../etc')], ['[0].path /data/../etc has a . or .. component']),
    ([dict(NFS, path='/data/./x')], ['[0].path /data/./x has a . or .. component']),
    ([dict(NFS, path='/..')], ['[0].path /.. is not an absolute mount point']),
    (['nfs01:/export /data nfs'], ['[0] is "nfs01:/export /data nfs", not a mapping with src, path and fstype']),
])
def test_odd_entries_are_problems_not_errors(mounts, expected):
    assert mount_problems(mounts, NFS_OPTS, LUSTRE_OPTS, PACKAGES) == expected


def test_a_mapping_instead_of_a_list():
    assert mount_problems(NFS, NFS_OPTS, LUSTRE_OPTS, PACKAGES) == ['storage_mounts is dict, not a list of mounts']


def test_options_default_per_filesystem_and_always_wait_for_the_network():
    mounts = normalize_mounts([NFS, LUSTRE], NFS_OPTS, LUSTRE_OPTS, 'mounted')
    assert mounts == [
        dict(NFS, opts='nfsvers=4.2,nconnect=16,hard,noatime,_netdev,nofail', state='mounted'),
        dict(LUSTRE, opts='flock,noatime,_netdev,nofail', state='mounted'),
    ]


def test_own_options_nofail_automount_and_state():
    mounts = normalize_mounts([
        dict(NFS, opts='ro,hard,_netdev,,hard', nofail=False, automount=True, state='present'),
        dict(NFS, fstype='nfs4', opts='', state=None),
        dict(NFS, opts=None, nofail=True, automount=False),
    ], NFS_OPTS, LUSTRE_OPTS, 'mounted')
    assert [(m['opts'], m['state']) for m in mounts] == [
        ('ro,hard,_netdev,x-systemd.automount', 'present'),
        ('_netdev,nofail', 'mounted'),
        ('nfsvers=4.2,nconnect=16,hard,noatime,_netdev,nofail', 'mounted'),
    ]
    # keys the role does not change are kept
    assert mounts[0]['nofail'] is False and mounts[0]['automount'] is True


def test_plan_has_mounts_only_without_problems():
    assert mount_plan([NFS], NFS_OPTS, LUSTRE_OPTS, 'present', []) == {
        'problems': [],
        'mounts': [dict(NFS, opts='nfsvers=4.2,nconnect=16,hard,noatime,_netdev,nofail', state='present')]}
    assert mount_plan([NFS, dict(NFS, path='rel')], NFS_OPTS, LUSTRE_OPTS, 'present', []) == {
        'problems': ['[1].path rel is not an absolute mount point'], 'mounts': []}


def test_input_is_not_changed():
    mount = dict(NFS)
    normalize_mounts([mount], NFS_OPTS, LUSTRE_OPTS, 'mounted')
    assert mount == NFS


def test_lustre_needs_an_lnet_network_its_mgs_is_on():
    assert lnet_problems([NFS, LUSTRE], ['o2ib0(ib0)'], []) == []
    # o2ib and o2ib0 are one network
    assert lnet_problems([LUSTRE], ['o2ib(ib0)'], ['10.10.5.1@o2ib']) == []
    assert lnet_problems([NFS, LUSTRE], [], []) == [
        '[1] is a Lustre mount but storage_lnet_networks is empty (the client needs the LNet network its servers are '
        'on, e.g. o2ib0(ib0))']
    assert lnet_problems([LUSTRE], ['tcp0(eth0)', 'o2ib1(ib1)'], []) == [
        '[0].src 10.10.5.1@o2ib0:10.10.5.2@o2ib0:/scratch: its MGS is on o2ib, which storage_lnet_networks does not '
        'configure (o2ib1, tcp)']


def test_ping_nids_are_nids_on_a_configured_network():
    assert lnet_problems([], ['o2ib0(ib0)'], ['10.10.5.1@o2ib0', '10.10.5.9', '10.0.0.1@tcp', '1@o2ib;reboot']) == [
        'storage_lnet_ping_nids[1] "10.10.5.9" is not a NID such as 10.0.0.1@o2ib0',
        'storage_lnet_ping_nids[2] 10.0.0.1@tcp is on tcp, which storage_lnet_networks does not configure',
        'storage_lnet_ping_nids[3] "1@o2ib;reboot" is not a NID such as 10.0.0.1@o2ib0']


def test_the_plan_carries_the_lnet_problems():
    result = mount_plan([LUSTRE], NFS_OPTS, LUSTRE_OPTS, 'mounted', list(PACKAGES), [], [])
    assert result == {'problems': [
        '[0] is a Lustre mount but storage_lnet_networks is empty (the client needs the LNet network its servers '
        'are on, e.g. o2ib0(ib0))'], 'mounts': []}


@pytest.mark.parametrize('path', ['/etc', '/etc/', '//etc', '/usr', '//usr/local/', '/opt', '/var/lib', '/var/log/',
                                  '/boot', '/root', '/tmp', '/etc/ssh', '/etc/profile.d', '/proc/fs/nfsd', '/sys/x',
                                  '/dev/shm'])
def test_a_mount_over_a_system_directory_is_refused_however_written(path):
    assert problems(dict(NFS, path=path)) == [
        "[0].path %r is a system directory or under /proc, /sys or /dev: a mount over it would hide what the system "
        "keeps there" % path]


@pytest.mark.parametrize('path', ['/home', '/home/', '/srv', '/mnt', '/mnt/data', '/media/share', '/scratch',
                                  '/lustre/scratch', '/opt/apps', '/etc/hpcfabric-share'])
def test_homes_shares_and_data_under_system_directories_mount(path):
    """An HPC site mounts its users' homes on /home over NFS; a mount under /opt does not hide the roles' installs."""
    assert problems(dict(NFS, path=path)) == []
