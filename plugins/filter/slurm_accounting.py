# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Filters of the slurm role's accounting (slurmdbd and its MariaDB database): slurmdbd_conf, slurm_accounting_sql.

Each is documented in its own file beside this one, as ansible-doc looks documentation up by filter name. The logic is
in module_utils/slurm_conf.py. Both take the database password as an argument: the tasks that call them are no_log.
"""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils import slurm_conf
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter

_FILTERS = (as_filter('slurmdbd_conf', slurm_conf.render_slurmdbd_conf),
            as_filter('slurm_accounting_sql', slurm_conf.accounting_sql))


class FilterModule(object):
    """The slurm role's accounting filters."""

    def filters(self):
        return dict((function.__name__, function) for function in _FILTERS)
