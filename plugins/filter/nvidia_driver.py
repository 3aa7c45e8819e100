# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Filters of the nvidia_driver role: nvidia_driver_plan, nvidia_driver_resolve, nvidia_driver_installed,
nvidia_driver_module_changes, nvidia_driver_loaded_version, nvidia_driver_gpudirect.

Each filter is documented in its own file beside this one (nvidia_driver_plan.yml, ...), as ansible-doc looks
documentation up by filter name. The logic is in module_utils/nvidia_driver.py.
"""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils import node_versions, nvidia_driver
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter


class FilterModule:
    """The nvidia_driver role's filters."""

    def filters(self):
        return {
            'nvidia_driver_plan': as_filter('nvidia_driver_plan', nvidia_driver.driver_plan),
            'nvidia_driver_resolve': as_filter('nvidia_driver_resolve', nvidia_driver.resolve_driver),
            'nvidia_driver_installed': as_filter('nvidia_driver_installed', nvidia_driver.installed_versions),
            'nvidia_driver_module_changes': as_filter('nvidia_driver_module_changes', nvidia_driver.module_changes),
            'nvidia_driver_loaded_version': as_filter('nvidia_driver_loaded_version', node_versions.loaded_nvidia_driver),
            'nvidia_driver_gpudirect': as_filter('nvidia_driver_gpudirect', nvidia_driver.gpudirect),
        }
