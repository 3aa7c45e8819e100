# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The storage role's read-back of /etc/fstab.

FSTAB is a Debian 12 lab node's /etc/fstab after the storage role, recorded in the cluster scenario: debootstrap's
placeholder line, then the entry ansible.posix.mount appended (fields separated by single blanks, dump and pass 0 0).
"""
from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.storage_mounts import (
    fstab_drift, fstab_entries, mount_plan)

FSTAB = """# UNCONFIGURED FSTAB FOR BASE SYSTEM
storage01:/export/datasets /data/datasets nfs nfsvers=4.2,nconnect=16,hard,noatime,_netdev,nofail 0 0
"""
PLAN = mount_plan([{'src': 'storage01:/export/datasets', 'path': '/data/datasets', 'fstype': 'nfs'}],
                  'nfsvers=4.2,nconnect=16,hard,noatime', 'flock,noatime', 'present', [])['mounts']


def test_the_written_fstab_holds_the_plan():
    assert fstab_drift(PLAN, FSTAB) == []


def test_options_compare_as_a_set():
    reordered = FSTAB.replace('nfsvers=4.2,nconnect=16,hard,noatime,_netdev,nofail', 'nofail,_netdev,noatime,hard,nconnect=16,nfsvers=4.2')
    assert fstab_drift(PLAN, reordered) == []


@pytest.mark.parametrize('edit, drift', [
    (lambda t: t.replace(',nofail', ''),
     '/data/datasets: /etc/fstab has options nfsvers=4.2,nconnect=16,hard,noatime,_netdev, expected '
     'nfsvers=4.2,nconnect=16,hard,noatime,_netdev,nofail'),
    (lambda t: t.replace('storage01:', 'storage02:'),
     '/data/datasets: /etc/fstab has src storage02:/export/datasets, expected storage01:/export/datasets'),
    (lambda t: t.replace(' nfs ', ' nfs4 '), '/data/datasets: /etc/fstab has fstype nfs4, expected nfs'),
    (lambda t: t.replace('storage01:/export/datasets /data', '# storage01:/export/datasets /data'),
     '/data/datasets is not in /etc/fstab'),
    (lambda t: t + t.splitlines()[-1] + '\n', '/data/datasets is in /etc/fstab 2 times'),
], ids=['option-dropped', 'other-source', 'other-type', 'commented-out', 'twice'])
def test_a_hand_edited_fstab_is_named(edit, drift):
    assert drift in fstab_drift(PLAN, edit(FSTAB))


def test_an_absent_mount_must_be_gone():
    absent = [dict(PLAN[0], state='absent')]
    assert fstab_drift(absent, FSTAB) == ['/data/datasets is in /etc/fstab but its state is absent']
    assert fstab_drift(absent, '') == []


def test_escaped_fields_and_trailing_slashes_are_read_as_mount_reads_them():
    entries = fstab_entries('nfs01:/a\\040b /data/my\\040dir/ nfs rw 0 0\nUUID=1 / ext4\n')
    assert entries == {'/data/my dir': [{'src': 'nfs01:/a b', 'fstype': 'nfs', 'opts': 'rw'}],
                       '/': [{'src': 'UUID=1', 'fstype': 'ext4', 'opts': 'defaults'}]}


def test_fstab_must_be_text():
    with pytest.raises(ValueError, match='fstab must be text'):
        fstab_entries(None)
