# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Filters of the rdma role: rdma_core_packages, rdma_inactive_ports, rdma_doca_repository.

Each filter is documented in its own file beside this one (rdma_core_packages.yml, ...), as
ansible-doc looks documentation up by filter name. The logic is in module_utils/rdma_stack.py.
"""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils import rdma_stack
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter


class FilterModule:
    """The rdma role's filters."""

    def filters(self):
        return {
            'rdma_core_packages': as_filter('rdma_core_packages', rdma_stack.installed_core_packages),
            'rdma_inactive_ports': as_filter('rdma_inactive_ports', rdma_stack.inactive_ports),
            'rdma_doca_repository': as_filter('rdma_doca_repository', rdma_stack.doca_repository),
        }
