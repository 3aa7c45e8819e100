# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""What a terminal copy, a web page or a mail does to command output, undone before a parser reads it.

Every parser that takes saved command text (the facts modules' ``output`` parameters, the benchmark filters,
the saved QoS reports) calls :func:`clean` first and reports the lines it skipped with :func:`skipped_lines`,
so a paste reads the same as the command's own output and every parser words its warnings alike.
"""

from __future__ import annotations

import re

# Terminal escapes in the three shapes a paste carries them:
# - the real bytes: CSI sequences (ESC [ ... final byte, e.g. nvidia-smi's underline ESC[4m ... ESC[0m)
#   and character-set selections (ESC ( B, which `tput sgr0` prints);
# - caret notation, as `cat -v`, `less` and many terminal copies render ESC: ^[[4m ... ^[[0m;
# - the ESC byte lost on the way (web pages drop control characters): a bare [4m ... [0m. Only numbered SGR
#   codes are taken in this shape, so brackets that belong to the text ([mlx5_0], [0x1b]) stay.
_ESCAPES = re.compile(
    r'(?:\x1b|\^\[)(?:\[[0-?]*[ -/]*[@-~]|[()][0-9A-Za-z])'
    r'|\[\d+(?:;\d+)*m'
)

# The most unreadable lines named one by one; the rest are counted.
MAX_LINE_WARNINGS = 10


def clean(text):
    """Return ``text`` without terminal escapes in any of the shapes above (None reads as empty text)."""
    return _ESCAPES.sub('', text or '')


def skipped_lines(command, numbered):
    """Warnings naming the skipped lines: ``numbered`` is a list of (line number, line) pairs.

    The first :data:`MAX_LINE_WARNINGS` lines are quoted, the rest counted, so a paste full of noise yields a
    readable list rather than thousands of warnings.
    """
    warnings = ['%s: ignored unreadable line %d: %r' % (command, lineno, line.strip())
                for lineno, line in numbered[:MAX_LINE_WARNINGS]]
    hidden = len(numbered) - MAX_LINE_WARNINGS
    if hidden > 0:
        warnings.append('%s: %d more unreadable lines ignored' % (command, hidden))
    return warnings
