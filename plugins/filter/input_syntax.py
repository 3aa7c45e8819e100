# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Filters of the input syntax rules check_inventory.yml runs, for roles used on their own: path_problems,
from_pattern_problems, url_problems.

Each filter is documented in its own file beside this one, as ansible-doc looks documentation up by filter name. The
logic is in module_utils/input_syntax.py.
"""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils import input_syntax
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter


class FilterModule:
    """The input syntax filters."""

    def filters(self):
        return {
            'path_problems': as_filter('path_problems', input_syntax.path_problems),
            'from_pattern_problems': as_filter('from_pattern_problems', input_syntax.from_pattern_problems),
            'url_problems': as_filter('url_problems', input_syntax.url_problems),
        }
