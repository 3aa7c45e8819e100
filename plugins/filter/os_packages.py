# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Filters of the installed OS packages: os_packages_query (the command that lists them) and os_packages_missing (what
of a list the host lacks), both on module_utils/os_packages.py. Each is documented in its own file beside this one."""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.os_packages import missing, query_argv
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter


class FilterModule:
    """hpcfabric.cluster OS package filters."""

    def filters(self):
        return {'os_packages_query': as_filter('os_packages_query', query_argv),
                'os_packages_missing': as_filter('os_packages_missing', missing)}
