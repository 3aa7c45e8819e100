# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The shared cleaner of pasted command text: terminal escapes in each shape, and the skipped-line warnings."""

from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.pasted_text import MAX_LINE_WARNINGS, clean, skipped_lines


@pytest.mark.parametrize('pasted', [
    '\tGPU0\tCPU Affinity\x1b[0m',            # the bytes nvidia-smi prints
    '\t\x1b[4mGPU0\tCPU Affinity\x1b[0m',
    '\t^[[4mGPU0\tCPU Affinity^[[0m',          # caret notation (cat -v, less, a terminal copy)
    '\t[4mGPU0\tCPU Affinity[0m',              # the ESC byte lost on a web page
    '\t\x1b[01;31m\x1b[KGPU0\tCPU Affinity\x1b[m\x1b[K',  # grep --color=always
    '\t\x1b(B\x1b[mGPU0\tCPU Affinity',       # tput sgr0
])
def test_every_shape_of_escape_is_removed(pasted):
    assert clean(pasted) == '\tGPU0\tCPU Affinity'


@pytest.mark.parametrize('text', [
    '[1795522256.643565] [vm:21641:0]             sys.c:306  UCX  ERROR failed to get boot id',
    'GPU0 [0x1b] mlx5_0 [mlx5_1] [1,0]<stdout>: 8 2 float sum',
    "ibpanic: [7851] main: stat of IB device 'mlx5_1' failed",
])
def test_brackets_that_belong_to_the_text_stay(text):
    assert clean(text) == text


def test_none_reads_as_empty_text():
    assert clean(None) == ''


def test_skipped_lines_are_named_then_counted():
    numbered = [(number, '  junk %d  ' % number) for number in range(1, MAX_LINE_WARNINGS + 4)]
    warnings = skipped_lines('tool -x', numbered)
    assert warnings[0] == "tool -x: ignored unreadable line 1: 'junk 1'"
    assert len(warnings) == MAX_LINE_WARNINGS + 1
    assert warnings[-1] == 'tool -x: 3 more unreadable lines ignored'
    assert skipped_lines('tool -x', []) == []
