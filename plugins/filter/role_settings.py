# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Filters of the roles' input rules: role_settings_problems, and mpi_layout, the mpi role's tarballs and prefix that
its rules and its vars read.

Each is documented in its own file beside this one, as ansible-doc looks documentation up by filter name. The logic is
in the package module_utils/role_settings/.
"""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils import role_settings
from ansible_collections.hpcfabric.cluster.plugins.module_utils.role_settings import mpi
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter


def _role_settings_problems(settings, role, host):
    return role_settings.role_problems(role, settings, host)


_FILTERS = (as_filter('role_settings_problems', _role_settings_problems),
            as_filter('mpi_layout', mpi.layout))


class FilterModule(object):
    """The roles' input rule filters."""

    def filters(self):
        return dict((function.__name__, function) for function in _FILTERS)
