# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The mpi_source_environment filter: the variables every process of the mpi role's source build runs with."""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.mpi_source import runtime_environment
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter

DOCUMENTATION = r'''
name: mpi_source_environment
short_description: The environment of the mpi role's source build - login shells, its module, jobs
version_added: 0.5.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - C(MPI_HOME) and C(OPAL_PREFIX), the prefix, so that a package unpacked into another prefix than it was built in
    finds its components.
  - C(PMIX_MCA_psec=native) where Open MPI carries its bundled PMIx (O(ompi_extra) names no C(--with-pmix=<dir>)).
    Under C(srun --mpi=pmix) Slurm's PMIx is the server, and one built with munge (Debian's) tells its clients to use
    munge, which a bundled PMIx built without munge's headers lacks - every rank aborts in C(pmix_psec_base_open).
    With the variable set, the ranks authenticate as PMIx does by default, which every server accepts.
positional: _input, ompi_extra
options:
  _input:
    description: The install prefix.
    type: path
    required: true
  ompi_extra:
    description: The build's further Open MPI configure flags (C(mpi_source_ompi_configure_extra)).
    type: list
    elements: str
'''

EXAMPLES = r'''
- name: The environment of a build with the bundled PMIx
  ansible.builtin.debug:
    msg: "{{ '/opt/mpi' | hpcfabric.cluster.mpi_source_environment(['--enable-mpirun-prefix-by-default']) }}"
    # {"MPI_HOME": "/opt/mpi", "OPAL_PREFIX": "/opt/mpi", "PMIX_MCA_psec": "native"}
'''

RETURN = r'''
_value:
  description: Variable name to value.
  type: dict
'''


class FilterModule:
    """hpcfabric.cluster mpi_source_environment filter."""

    def filters(self):
        return {'mpi_source_environment': as_filter('mpi_source_environment', runtime_environment)}
