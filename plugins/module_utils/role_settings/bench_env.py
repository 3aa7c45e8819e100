# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The bench_env role's input rules: one source of packages, absolute paths, pip requirements, the index URL."""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.bench_env import settings_problems
from ansible_collections.hpcfabric.cluster.plugins.module_utils.input_syntax import path_settings_problems, url_problem


def problems(settings):
    """See ``role_settings``."""
    found = [('bench_env', message) for message in settings_problems(settings)]
    index_url = settings.get('bench_env_pip_index_url')
    if index_url is not None:
        found += [('bench_env_pip_index_url', problem) for problem in [url_problem(index_url)] if problem]
    return found + path_settings_problems(settings, [('bench_env_dir', True)])
