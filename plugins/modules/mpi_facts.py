#!/usr/bin/python
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
---
module: mpi_facts
short_description: Gather Open MPI and UCX facts, including CUDA awareness
version_added: 0.1.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - Runs C(ompi_info --parsable --all), C(ucx_info -v) and C(ucx_info -d) and sets C(ansible_facts.mpi).
  - O(ompi_info_output), O(ucx_info_output) and O(ucx_devices_output) take saved command text instead
    (support bundles, offline analysis). When any of them is given the module runs no command and
    parses only the texts it was given; the facts of the others stay null.
  - C(cuda_aware) comes only from the C(mpi_built_with_cuda_support) parameter (Open MPI 5 registers it as
    C(opal_built_with_cuda_support) with the C(mpi_) name as its synonym; both are read). The "MPI extensions"
    list names C(cuda) on builds without CUDA support as well, so it is never used.
  - A missing C(ompi_info) fails the module. A missing C(ucx_info) is a warning, because an MPI
    without UCX is legitimate; the UCX facts are then null and the transport list empty.
  - Saved text may be pasted from a terminal or a web page; terminal escapes (C(ESC[4m), the caret text
    C(^[[4m), a bare C([4m)) are removed before parsing.
  - Output that is only partly readable (for example without C(--all), or with UCX's own C(UCX  ERROR) log lines
    among the command's lines) yields the facts that are there and a warning naming what was skipped.
options:
  ompi_info_output:
    description:
      - >-
        Saved output of C(ompi_info --parsable --all) to parse instead of running the command, or a C(grep) of it
        (C(mca:mpi:base:param:mpi_built_with_cuda_support:value:...) or Open MPI 5's
        C(mca:opal:base:param:opal_built_with_cuda_support:value:...)).
      - >-
        The human-readable C(ompi_info --all | grep -i cuda) form is read too
        (C(MCA mpi base: parameter "mpi_built_with_cuda_support" (current value: "true", ...)));
        C(ompi_info | grep -i cuda) without C(--all) shows only the "MPI extensions" list, which leaves
        C(cuda_aware) null with a warning.
    type: str
  ucx_info_output:
    description:
      - Saved output of C(ucx_info -v) to parse instead of running the command.
      - Lines that do not start with C(#), such as UCX's C(UCX  ERROR) log lines, are skipped with a warning.
    type: str
  ucx_devices_output:
    description:
      - Saved output of C(ucx_info -d) (or its C(grep Transport) lines) to parse instead of running the command.
    type: str
  ompi_info_path:
    description:
      - Path of the C(ompi_info) executable; by default it is looked up on E(PATH).
      - Use it for an MPI outside E(PATH), such as an HPC-X tarball or a source build.
    type: path
  ucx_info_path:
    description:
      - Path of the C(ucx_info) executable; by default it is looked up on E(PATH).
    type: path
notes:
  - Debian and Ubuntu Open MPI and UCX packages are not CUDA-aware; expect C(cuda_aware=false) there.
  - O(ucx_info_output) and O(ucx_devices_output) alone are enough to check a UCX build without Open MPI.
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: The module only reads; it runs the same read-only commands in check mode.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
  facts:
    description: Action returns an C(ansible_facts) dictionary that will update existing host facts.
    support: full
seealso:
  - name: Open MPI CUDA support
    description: How to verify that Open MPI was built with CUDA support.
    link: https://docs.open-mpi.org/en/v5.0.x/tuning-apps/networking/cuda.html
'''

EXAMPLES = r'''
- name: Gather MPI facts on the node
  hpcfabric.cluster.mpi_facts:

- name: Require a CUDA-aware MPI whose UCX has the CUDA transports
  ansible.builtin.assert:
    that:
      - ansible_facts['mpi']['cuda_aware'] is true
      - "'cuda_copy' in ansible_facts['mpi']['ucx']['transports']"
      - "'cuda_ipc' in ansible_facts['mpi']['ucx']['transports']"
    fail_msg: "MPI {{ ansible_facts['mpi']['version'] }} is not CUDA-aware or UCX lacks CUDA transports"

- name: Use the Open MPI of an HPC-X install
  hpcfabric.cluster.mpi_facts:
    ompi_info_path: /opt/hpcx/ompi/bin/ompi_info
    ucx_info_path: /opt/hpcx/ucx/bin/ucx_info

- name: Analyse outputs saved in a support bundle, on the controller
  hpcfabric.cluster.mpi_facts:
    ompi_info_output: "{{ lookup('ansible.builtin.file', 'bundle/node01/ompi_info.txt') }}"
    ucx_info_output: "{{ lookup('ansible.builtin.file', 'bundle/node01/ucx_info-v.txt') }}"
    ucx_devices_output: "{{ lookup('ansible.builtin.file', 'bundle/node01/ucx_info-d.txt') }}"
  delegate_to: localhost
'''

RETURN = r'''
ansible_facts:
  description: Facts added to C(ansible_facts).
  returned: always
  type: dict
  contains:
    mpi:
      description: The MPI library and its UCX.
      returned: always
      type: dict
      contains:
        implementation:
          description: MPI implementation; null when no C(ompi_info) output was parsed.
          returned: always
          type: str
          sample: Open MPI
        version:
          description: Full version from C(ompi:version:full); null when absent.
          returned: always
          type: str
          sample: 4.1.4
        cuda_aware:
          description:
            - Value of C(mpi_built_with_cuda_support).
            - Null when that line is absent (for example output without C(--all)) or unreadable.
          returned: always
          type: bool
          sample: false
        coll_components:
          description:
            - The collective (coll) components the C(ompi_info) output lists, sorted; C(ucc) is the one that reduces
              device buffers on the GPU (HPC-X). Null when the output lists none.
          returned: always
          type: list
          elements: str
          sample: [adapt, basic, han, inter, libnbc, monitoring, self, sm, sync, tuned]
        ucx:
          description: UCX build and transports.
          returned: always
          type: dict
          contains:
            version:
              description: UCX library version from C(ucx_info -v); null without UCX output.
              returned: always
              type: str
              sample: 1.13.1
            configured_with_cuda:
              description:
                - True when UCX was configured with C(--with-cuda[=<path>]) (or the build config has C(HAVE_CUDA)),
                  false for C(--without-cuda) or a configure line without CUDA, null without a configure line.
              returned: always
              type: bool
              sample: false
            transports:
              description: Sorted unique transport names from C(ucx_info -d); empty without UCX output.
              returned: always
              type: list
              elements: str
              sample: [cma, posix, self, sysv, tcp]
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpcfabric.cluster.plugins.module_utils.mpi_info import (
    MpiInfoParseError,
    mpi_facts,
)

_OUTPUT_PARAMS = ('ompi_info_output', 'ucx_info_output', 'ucx_devices_output')


def _find(module, name, path_param):
    """Return the executable's path, or None when it is not on PATH; fail for a bad explicit path."""
    path = module.params[path_param]
    if not path:
        return module.get_bin_path(name)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        module.fail_json(msg='%s not found or not executable at %s=%s' % (name, path_param, path))
    return path


def _run(module, argv):
    """Return stdout, or None with a warning when the command failed."""
    rc, out, err = module.run_command(argv, environ_update={'LANG': 'C', 'LC_ALL': 'C'})
    if rc != 0:
        module.warn('%s exited with %d: %s' % (' '.join(argv), rc, (err or out).strip()))
        return None
    return out


def _collect(module):
    """Run the commands; return (ompi_text, ucx_version_text, ucx_devices_text)."""
    ompi_info = _find(module, 'ompi_info', 'ompi_info_path')
    if not ompi_info:
        module.fail_json(msg='ompi_info not found on PATH: install Open MPI (Debian: openmpi-bin) '
                             'or set ompi_info_path')
    rc, ompi_text, err = module.run_command([ompi_info, '--parsable', '--all'],
                                            environ_update={'LANG': 'C', 'LC_ALL': 'C'})
    if rc != 0:
        module.fail_json(msg='ompi_info --parsable --all failed (rc=%d): %s' % (rc, (err or ompi_text).strip()),
                         rc=rc, stdout=ompi_text, stderr=err)
    ucx_info = _find(module, 'ucx_info', 'ucx_info_path')
    if not ucx_info:
        module.warn('ucx_info not found on PATH: UCX facts are null (an MPI without UCX uses other transports)')
        return ompi_text, None, None
    return ompi_text, _run(module, [ucx_info, '-v']), _run(module, [ucx_info, '-d'])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            ompi_info_output=dict(type='str'),
            ucx_info_output=dict(type='str'),
            ucx_devices_output=dict(type='str'),
            ompi_info_path=dict(type='path'),
            ucx_info_path=dict(type='path'),
        ),
        supports_check_mode=True,
    )
    if any(module.params[name] is not None for name in _OUTPUT_PARAMS):
        texts = tuple(module.params[name] for name in _OUTPUT_PARAMS)
    else:
        texts = _collect(module)
    try:
        facts, warnings = mpi_facts(*texts)
    except MpiInfoParseError as exc:
        module.fail_json(msg='cannot parse %s output: %s; offending line: %r' % (exc.command, exc.reason, exc.line))
    for warning in warnings:
        module.warn(warning)
    module.exit_json(changed=False, ansible_facts={'mpi': facts})


if __name__ == '__main__':
    main()
