# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The mpi_hostfile role's input rules: the file it writes. Its slot counts come from the cluster model."""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.input_syntax import path_settings_problems


def problems(settings):
    """See ``role_settings``."""
    return path_settings_problems(settings, [('mpi_hostfile_path', False)])
