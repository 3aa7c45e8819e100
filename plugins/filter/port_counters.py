# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Filters of the fabric port counters: port_counter_report.

Each is documented in its own file beside this one, as ansible-doc looks documentation up by filter name. The logic is
in module_utils/port_counters.py.
"""

from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils import port_counters
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter

port_counter_report = as_filter('port_counter_report', port_counters.counters_report)


class FilterModule(object):
    """The port counter filters."""

    def filters(self):
        return {'port_counter_report': port_counter_report}
