#!/usr/bin/python
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
---
module: shared_dir_marks
short_description: Mark a directory for this node and run, or count the marks it holds, to prove it is shared
version_added: 0.3.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - The C(hpcfabric.cluster.validate) role's check that C(validate_checkpoint_dir) is one directory shared by every
    node. Every node writes its mark (O(state=present)), then lists the marks of the run (O(state=listed)); nodes on
    one filesystem see the same marks and return the same RV(digest), so the C(hpcfabric.cluster.shared_dir_problems)
    filter groups the nodes exactly by filesystem from one count and one digest per node. O(state=absent) removes
    the node's mark.
  - A mark is the hidden file C(.hpcfabric-shared-<host>.<run>); a run name is made fresh for each check, so a mark an
    interrupted run left behind is never counted.
  - Run it as the user the jobs run as (C(become_user)), so the check also proves that user can write there.
options:
  path:
    description:
      - The directory. O(state=present) creates it, with its parents, when it is missing.
    type: path
    required: true
  run:
    description:
      - The run's name, 8 to 64 lowercase letters and digits.
    type: str
    required: true
  host:
    description:
      - The node's name in its mark (letters, digits and C(._-)); required with O(state=present) and O(state=absent).
    type: str
  state:
    description:
      - V(present) writes the node's mark, V(listed) counts the marks of O(run), V(absent) removes the node's mark.
    type: str
    choices: [present, listed, absent]
    default: present
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: V(present) and V(absent) write nothing and say whether they would; V(listed) reads as in a real run.
  diff_mode:
    support: none
  platform:
    platforms: posix
seealso:
  - plugin: hpcfabric.cluster.shared_dir_problems
    plugin_type: filter
'''

EXAMPLES = r'''
- name: Leave this node's mark
  hpcfabric.cluster.shared_dir_marks:
    path: /lustre/scratch/validate
    run: k3v9x0q2m4fz
    host: "{{ inventory_hostname }}"
  become: true
  become_user: hpcuser

- name: Count the marks this node sees
  hpcfabric.cluster.shared_dir_marks:
    path: /lustre/scratch/validate
    run: k3v9x0q2m4fz
    state: listed
  become: true
  become_user: hpcuser
  register: marks
'''

RETURN = r'''
mark:
  description: Path of the node's mark (O(state=present) and O(state=absent)).
  returned: state is present or absent
  type: str
  sample: /lustre/scratch/validate/.hpcfabric-shared-node01.k3v9x0q2m4fz
count:
  description: How many marks of O(run) the node sees.
  returned: state is listed
  type: int
  sample: 4
digest:
  description: SHA-256 of the sorted names of those marks; equal on every node of one filesystem.
  returned: state is listed
  type: str
  sample: 0c3a0e6b4ab1f0f8a2b1c6e0b3e7d8f9c1a2b3c4d5e6f708192a3b4c5d6e7f80
'''

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.hpcfabric.cluster.plugins.module_utils import shared_dir


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', required=True),
            run=dict(type='str', required=True),
            host=dict(type='str'),
            state=dict(type='str', choices=['present', 'listed', 'absent'], default='present'),
        ),
        required_if=[('state', 'present', ['host']), ('state', 'absent', ['host'])],
        supports_check_mode=True,
    )
    path, run, host, state = (module.params[name] for name in ('path', 'run', 'host', 'state'))
    try:
        if state == 'listed':
            module.exit_json(changed=False, **shared_dir.listing(path, run))
        mark = os.path.join(path, shared_dir.mark_name(host, run))
        if module.check_mode:
            module.exit_json(changed=os.path.exists(mark) != (state == 'present'), mark=mark)
        if state == 'present':
            shared_dir.mark(path, host, run)
            module.exit_json(changed=True, mark=mark)
        module.exit_json(changed=shared_dir.remove(path, host, run), mark=mark)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    except OSError as exc:
        module.fail_json(msg='%s: %s' % (exc.filename or path, exc.strerror or exc))


if __name__ == '__main__':
    main()
