# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Action of hpcfabric.cluster.check_mode_notice: in check mode, say what the run cannot show; otherwise nothing."""
from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    """See plugins/modules/check_mode_notice.py."""

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(('msg',))
    # runs on the controller, touches no host
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        msg = self._task.args.get('msg')
        if not isinstance(msg, str) or not msg.strip():
            raise AnsibleActionFail('check_mode_notice: msg must be a non-empty string')
        if not self._task.check_mode:
            result.update(skipped=True, skip_reason='not check mode: the run shows this itself')
            return result
        text = 'check mode: ' + ' '.join(msg.split())
        # a warning, so the notice is also in the recap, where an operator reading a long --check run looks
        result.update(changed=False, msg=text, warnings=[text])
        return result
