# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Filters of the input syntax: tcl_quote, which quotes a value for a modulefile, and authorized_key_options, which
builds a key's from= option. The rules themselves reach the roles through role_settings_problems.

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
            'tcl_quote': as_filter('tcl_quote', input_syntax.tcl_quote),
            'authorized_key_options': as_filter('authorized_key_options', input_syntax.authorized_key_options),
        }
