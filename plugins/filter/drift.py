# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Filters of the version drift check: version_drift, drift_fact_versions.

Each is documented in its own file beside this one, as ansible-doc looks documentation up by filter name. The logic is
in module_utils/drift.py.
"""

from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils import drift
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter

version_drift = as_filter('version_drift', drift.drift_report)
drift_fact_versions = as_filter('drift_fact_versions', drift.with_fact_versions)


class FilterModule(object):
    """The version drift filters."""

    def filters(self):
        return {'version_drift': version_drift, 'drift_fact_versions': drift_fact_versions}
