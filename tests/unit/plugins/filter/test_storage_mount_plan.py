# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""storage_mount_plan filter: registered, keyword arguments as the role passes them."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpcfabric.cluster.plugins.filter.storage_mount_plan import FilterModule

storage_mount_plan = FilterModule().filters()['storage_mount_plan']


def test_filter_is_registered_under_its_file_name():
    assert list(FilterModule().filters()) == ['storage_mount_plan']


def test_role_arguments():
    plan = storage_mount_plan([{'src': 'nfs01:/export', 'path': '/data', 'fstype': 'nfs', 'automount': True}],
                              nfs_options='hard', lustre_options='flock', state='present', lustre_packages=[])
    assert plan == {'problems': [], 'mounts': [{'src': 'nfs01:/export', 'path': '/data', 'fstype': 'nfs',
                                                'automount': True, 'opts': 'hard,_netdev,nofail,x-systemd.automount',
                                                'state': 'present'}]}


def test_a_missing_argument_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match='^storage_mount_plan: '):
        storage_mount_plan([], nfs_options='hard', lustre_options='flock', state='present')
