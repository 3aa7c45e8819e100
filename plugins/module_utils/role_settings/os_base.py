# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The os_base role's input rules: limits, kernel parameters and time servers that can be written as they are."""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.os_tuning import settings_problems


def problems(settings):
    """See ``role_settings``; the messages name the variable (``os_base_nofile``, ``kernel parameter ...``)."""
    sysctl = settings.get('os_base_sysctl') or {}
    extra = settings.get('os_base_sysctl_extra') or {}
    merged = dict(sysctl, **extra) if isinstance(sysctl, dict) and isinstance(extra, dict) else None
    return [('os_base', message) for message in settings_problems(
        settings.get('os_base_memlock'), settings.get('os_base_nofile'), merged, settings.get('os_base_ntp_servers') or [])]
