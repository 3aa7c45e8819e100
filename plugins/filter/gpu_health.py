# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Filter of the GPU and link health preflight: gpu_health_findings.

Documented in its own file beside this one, as ansible-doc looks documentation up by filter name. The logic is in
module_utils/gpu_health.py.
"""

from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils import gpu_health
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter

gpu_health_findings = as_filter('gpu_health_findings', gpu_health.health_report)


class FilterModule(object):
    """The GPU and link health filter."""

    def filters(self):
        return {'gpu_health_findings': gpu_health_findings}
