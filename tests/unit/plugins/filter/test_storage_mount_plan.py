# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""storage_mount_plan and storage_fstab_drift filters: registered, arguments as the role passes them."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpcfabric.cluster.plugins.filter.storage_mount_plan import FilterModule

storage_mount_plan = FilterModule().filters()['storage_mount_plan']


def test_filters_are_registered_under_their_doc_names():
    filters = FilterModule().filters()
    assert sorted(filters) == ['lnet_config', 'lnet_problems', 'storage_fstab_drift', 'storage_mount_plan',
                               'storage_readback_problems']
    assert all(filters[name].__name__ == name for name in filters)


def test_fstab_drift_passes_through_and_reports_bad_input_as_a_filter_error():
    drift = FilterModule().filters()['storage_fstab_drift']
    mount = {'src': 'nfs01:/export', 'path': '/data', 'fstype': 'nfs', 'opts': 'hard', 'state': 'present'}
    assert drift([mount], 'nfs01:/export /data nfs hard 0 0\n') == []
    with pytest.raises(AnsibleFilterError, match='^storage_fstab_drift: fstab must be text'):
        drift([mount], None)


def test_role_arguments():
    plan = storage_mount_plan([{'src': 'nfs01:/export', 'path': '/data', 'fstype': 'nfs', 'automount': True}],
                              nfs_options='hard', lustre_options='flock', state='present', lustre_packages=[])
    assert plan == {'problems': [], 'mounts': [{'src': 'nfs01:/export', 'path': '/data', 'fstype': 'nfs',
                                                'automount': True, 'opts': 'hard,_netdev,nofail,x-systemd.automount',
                                                'state': 'present'}]}


def test_a_missing_argument_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match='^storage_mount_plan: '):
        storage_mount_plan([], nfs_options='hard', lustre_options='flock', state='present')
