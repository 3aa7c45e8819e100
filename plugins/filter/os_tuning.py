# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Filters of the os_base role: sysctl_drift, systemd_limit_drift.

Each filter is documented in its own file beside this one, as ansible-doc looks documentation up by filter name. The
logic is in module_utils/os_tuning.py.
"""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils import os_tuning
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter


class FilterModule:
    """The os_base role's filters."""

    def filters(self):
        return {
            'sysctl_drift': as_filter('sysctl_drift', os_tuning.sysctl_drift),
            'systemd_limit_drift': as_filter('systemd_limit_drift', os_tuning.systemd_limit_drift),
        }
