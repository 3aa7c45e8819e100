# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The mpi_source_configure filter: the configure flags of the mpi role's source builds."""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.mpi_source import configure_flags
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter

DOCUMENTATION = r'''
name: mpi_source_configure
short_description: The ./configure arguments of the mpi role's UCX and Open MPI source builds
version_added: 0.2.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - One rule for the flags of both builds into one prefix, each flag one argument as the install stamp records them.
  - UCX gets C(--with-cuda=)O(cuda_home) or C(--without-cuda), then O(ucx_extra). Open MPI gets C(--with-ucx=) the
    prefix, C(--with-cuda=)O(cuda_home) and C(--with-cuda-libdir=)O(cuda_libdir) or C(--without-cuda), then
    O(ompi_extra).
  - Open MPI 5 and later also gets C(--with-pmix=internal), C(--with-prrte=internal), C(--with-hwloc=internal) and
    C(--with-libevent=internal), each unless O(ompi_extra) names that package, because its configure takes an external
    PMIx when the node has one and stops when it is older than PRRTE needs (Debian 12's 4.2.2).
positional: _input, ompi_version, cuda, cuda_home, cuda_libdir, ucx_extra, ompi_extra
options:
  _input:
    description: The install prefix of both builds.
    type: path
    required: true
  ompi_version:
    description: The Open MPI version being built, major.minor[.patch].
    type: str
    required: true
  cuda:
    description: Build both with CUDA.
    type: bool
    default: false
  cuda_home:
    description: The CUDA toolkit (its C(include/cuda.h)).
    type: path
    default: /usr/local/cuda
  cuda_libdir:
    description: Where Open MPI links C(libcuda.so) from; null means O(cuda_home)C(/lib64/stubs).
    type: path
  ucx_extra:
    description: More UCX configure flags.
    type: list
    elements: str
  ompi_extra:
    description: More Open MPI configure flags.
    type: list
    elements: str
'''

EXAMPLES = r'''
- name: The flags of a CUDA-aware build against Debian's packaged toolkit
  ansible.builtin.debug:
    msg: "{{ '/opt/mpi' | hpcfabric.cluster.mpi_source_configure('5.0.7', true, '/usr', '/usr/lib/x86_64-linux-gnu') }}"
'''

RETURN = r'''
_value:
  description: C({ucx, ompi}), each a list of configure arguments.
  type: dict
'''


class FilterModule:
    """hpcfabric.cluster mpi_source_configure filter."""

    def filters(self):
        return {'mpi_source_configure': as_filter('mpi_source_configure', configure_flags)}
