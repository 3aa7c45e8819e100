# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The storage role's input rules: LNet network specs, then the mounts and their LNet reach."""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.input_syntax import named_problems
from ansible_collections.hpcfabric.cluster.plugins.module_utils.storage_mounts import mount_plan


def problems(settings):
    """See ``role_settings``. The network specs first: the mount checks read them."""
    found = named_problems({'storage_lnet_networks': settings.get('storage_lnet_networks')}, 'lnet_network')
    if found:
        return found
    plan = mount_plan(settings.get('storage_mounts') or [], settings.get('storage_nfs_options'),
                      settings.get('storage_lustre_options'), settings.get('storage_mount_state'),
                      settings.get('storage_lustre_packages') or [], settings.get('storage_lnet_networks') or [],
                      settings.get('storage_lnet_ping_nids') or [])
    return [('storage_mounts', message) for message in plan['problems']]
