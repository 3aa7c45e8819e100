#!/usr/bin/python
# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation of the check_mode_notice action (plugins/action/check_mode_notice.py)."""
from __future__ import annotations

DOCUMENTATION = r'''
module: check_mode_notice
short_description: Say, in check mode only, what a check-mode run cannot show
version_added: 0.2.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - The one way every role of this collection says what C(--check) cannot show - a package from a repository the
    same run would add, a prefix not built yet, a read-back of state that was not applied.
  - In check mode, returns O(msg) prefixed with C(check mode:) and repeats it as a warning, so it also shows in the
    recap. In a real run it is skipped and says nothing.
  - Runs on the controller; it touches no host.
options:
  msg:
    description: What the run cannot show and what a real run would do. Whitespace runs are folded to one space.
    type: str
    required: true
attributes:
  check_mode:
    description: Check mode is the only mode in which it says anything.
    support: full
  diff_mode:
    description: It changes nothing, so it has no diff.
    support: none
  platform:
    description: It runs on the controller and touches no host.
    support: full
    platforms: all
notes:
  - Implemented as an action plugin; this file only documents it.
'''

EXAMPLES = r'''
- name: Say what check mode cannot show
  hpcfabric.cluster.check_mode_notice:
    msg: the CUDA repository is not configured yet, so the driver's packages cannot be read
  when: __repo_new | bool
'''

RETURN = r'''
msg:
  description: The notice, in check mode.
  returned: in check mode
  type: str
  sample: "check mode: /opt/hpcx/hpcx-v2.22 is not installed yet, so there is nothing to verify"
'''
