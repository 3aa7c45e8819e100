# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""nvidia_driver filters: registered names, keyword arguments as the role passes them, errors as AnsibleFilterError."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpcfabric.cluster.plugins.filter.nvidia_driver import FilterModule

FILTERS = FilterModule().filters()


def test_filters_are_registered():
    assert sorted(FILTERS) == ['nvidia_driver_gpudirect', 'nvidia_driver_installed', 'nvidia_driver_loaded_version',
                               'nvidia_driver_module_changes', 'nvidia_driver_plan', 'nvidia_driver_resolve']


def test_plan_takes_the_role_variables_as_keywords():
    plan = FILTERS['nvidia_driver_plan']('ubuntu', source='cuda_repo', branch='575', version=None, open_modules=True,
                                         kernel='6.8.0-45-generic', flavour=None, persistenced=True,
                                         fabricmanager='auto', nvswitch_count=0, dcgm_package=None,
                                         cuda_versions=['12.8'], cuda_first='12.5', cuda_offered=None, extra=[],
                                         repo_dir='ubuntu2404', architecture='x86_64', repo_url=None,
                                         keyring_url=None, key_file='cuda-keyring_1.1-1_all.deb')
    assert plan['pinned_packages'] == ['libnvidia-compute-575', 'nvidia-utils-575', 'nvidia-dkms-575-open',
                                       'nvidia-compute-utils-575']


def test_resolve_takes_the_query_lines_as_input():
    result = FILTERS['nvidia_driver_resolve'](['nvidia-driver-cuda | 580.65.06-1 | http://mirror/ Packages'],
                                              ['nvidia-driver-cuda'], 'nvidia-driver-cuda', '580',
                                              version=None, installed={}, pkg_manager='apt')
    assert result['install_specs'] == ['nvidia-driver-cuda=580.65.06-1']


def test_gpudirect_takes_the_kernel_as_input_and_the_role_variables_as_keywords():
    assert FILTERS['nvidia_driver_gpudirect']('6.8.0-45-generic', open_modules=True, ofed=False, wanted='auto') == {
        'dmabuf_capable': True, 'mode': 'dmabuf'}
    with pytest.raises(AnsibleFilterError, match="^nvidia_driver_gpudirect: nvidia_driver_gpudirect must be one of"):
        FILTERS['nvidia_driver_gpudirect']('6.8.0-45-generic', open_modules=True, ofed=False, wanted='rdma')


def test_bad_input_is_a_filter_error_named_after_the_filter():
    with pytest.raises(AnsibleFilterError, match="^nvidia_driver_plan: package scheme '' is none of"):
        FILTERS['nvidia_driver_plan']('', source='cuda_repo', branch='580')
    with pytest.raises(AnsibleFilterError, match="^nvidia_driver_plan: branch 'r580' is not a driver branch"):
        FILTERS['nvidia_driver_plan']('debian', source='cuda_repo', branch='r580')
