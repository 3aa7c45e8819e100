# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Filters of the bench_env role: bench_env_plan, bench_env_problems.

Each is documented in its own file beside this one, as ansible-doc looks documentation up by filter name. The logic is
in module_utils/bench_env.py.
"""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils import bench_env
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter

_FILTERS = (as_filter('bench_env_plan', bench_env.plan),
            as_filter('bench_env_problems', bench_env.problems))


class FilterModule(object):
    """The bench_env role's filters."""

    def filters(self):
        return dict((function.__name__, function) for function in _FILTERS)
