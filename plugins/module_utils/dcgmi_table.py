# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The ``dcgmi diag`` table - the boxes people paste - read into what ``gpu_health.parse_dcgmi_diag`` returns for
``dcgmi diag -j``, and the reader of saved dcgmi output that takes either form.

Two layouts are read. DCGM 3.x names a test in words and gives its GPUs after the status (``| GPU Memory | Pass - GPUs:
1, 2, 3 |``, a second status line ``| | Fail - GPU: 0 |``, ``Skip - All``). DCGM 4.x names the plugin (``| pcie |
Fail |``) and gives each GPU a line of its own (``| | GPU0: Pass |``); the first status is then the test's own verdict,
as ``test_summary`` is in the JSON. ``Warning`` rows (and the lines that continue them) are the results' message;
``Info`` rows are not, as in the JSON. dcgmi wraps a message at a fixed width in the middle of words (``Enabl`` /
``e persistence``), so the pieces are joined as they stand and only then are the spaces tidied.
"""

from __future__ import annotations

import re

from ansible_collections.hpcfabric.cluster.plugins.module_utils import gpu_health, pasted_text

FORMS = 'dcgmi diag -j (JSON) or the dcgmi diag table (+---+ boxes)'

_BORDER = re.compile(r'^\+[-=]+\+[-=]+\+$')
_SECTION = re.compile(r'^[|+]-{3,}\s+(\S.*?)\s+-+\+-+[|+]$')
_STATUS = re.compile(r'^(Pass|Fail|Skip|Warn|Not Run)(?:\s+-\s+(All|GPUs?:?\s*([\d,\s]+)))?$')
_ENTITY = re.compile(r'^GPU(\d+):\s*(Pass|Fail|Skip|Warn|Not Run)$')
_MESSAGES = ('Warning', 'Info', 'Error')
# what dcgmi prints above its table
_PREAMBLE = ('Successfully ran diagnostic for group.',)


def _status(word):
    return word.upper()


def _gpu_ids(qualifier, ids):
    """``All`` -> [] (DCGM names no GPU; the finding then says "GPUs"), ``GPUs: 1, 2`` -> [1, 2]."""
    if not qualifier or qualifier == 'All':
        return []
    return [int(token) for token in re.split(r'[,\s]+', ids.strip()) if token]


class _Test(object):
    """One test's rows until the next test: its statuses, per-GPU lines and messages."""

    def __init__(self, category, name):
        self.category, self.name = category, name
        self.statuses = []      # [(status, [gpu])] from the test's own line and 3.x's further status lines
        self.entities = []      # [(gpu, status)] from 4.x's "GPUn: status" lines
        self.warnings = []      # joined message pieces of each Warning (or Error) row
        self.piece = None       # the list the current message row appends its pieces to

    def results(self):
        message = '; '.join(' '.join(''.join(pieces).split()) for pieces in self.warnings)

        def result(gpus, status):
            return {'category': self.category, 'test': self.name, 'gpus': gpus, 'status': status,
                    'message': '' if status == 'PASS' else message}
        if self.entities:
            results = [result([gpu], status) for gpu, status in self.entities]
            verdict = self.statuses[0][0] if self.statuses else None
            # as in the JSON: a test that fails while each GPU passed failed for no GPU in particular
            if verdict == 'FAIL' and not any(status == 'FAIL' for dummy, status in self.entities):
                results.append(result([], 'FAIL'))
            return results
        return [result(gpus, status) for status, gpus in self.statuses]


def _piece(cell):
    """The text of a value cell as dcgmi wrapped it: one space of padding on the left, two on the right."""
    return cell[1:len(cell) - 2] if len(cell) > 3 else cell.strip()


def parse_dcgmi_table(text):
    """The ``dcgmi diag`` table -> ``({version, results: [{category, test, gpus, status, message}]}, unreadable)``.

    ``status`` is upper case (PASS, FAIL, SKIP, WARN); ``gpus`` the GPU ids a line names (``All`` and a 4.x verdict
    name none); ``message`` the test's warnings for a result that did not pass. ``unreadable`` lists the (line number,
    line) pairs that are no table line (a prompt, ``kubectl exec`` chatter). A table cut short gives the rows it has.
    Raises ValueError when no test row is found.
    """
    version, category = None, None
    tests, unreadable = [], []
    current = None
    for number, line in enumerate(pasted_text.clean(text).splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped in _PREAMBLE or _BORDER.match(stripped):
            continue
        section = _SECTION.match(stripped)
        if section:
            category, current = section.group(1), None
            continue
        cells = stripped.split('|')
        if len(cells) != 4 or cells[0] or cells[3]:
            unreadable.append((number, line))
            continue
        name, cell = cells[1].strip(), cells[2]
        value = cell.strip()
        if (name, value) == ('Diagnostic', 'Result'):
            continue
        if category == 'Metadata':
            if name == 'DCGM Version':
                version = value
            continue
        status, entity = _STATUS.match(value), _ENTITY.match(value)
        if name in _MESSAGES:
            if current is None:
                unreadable.append((number, line))
                continue
            # Info rows are read (they are dcgmi's) but, as in the JSON, are no part of a result's message
            current.piece = [_piece(cell)]
            if name != 'Info':
                current.warnings.append(current.piece)
        elif name:
            if not status:
                unreadable.append((number, line))
                continue
            current = _Test(category, name)
            tests.append(current)
            current.statuses.append((_status(status.group(1)), _gpu_ids(status.group(2), status.group(3))))
        elif current is None:
            unreadable.append((number, line))
        elif entity:
            current.entities.append((int(entity.group(1)), _status(entity.group(2))))
            current.piece = None
        elif status:
            current.statuses.append((_status(status.group(1)), _gpu_ids(status.group(2), status.group(3))))
            current.piece = None
        elif current.piece is not None:
            current.piece.append(_piece(cell))
        else:
            unreadable.append((number, line))
    results = [result for test in tests for result in test.results()]
    if not results:
        raise ValueError('no test row (| Test | Pass |) in the table')
    return {'version': version, 'results': results}, unreadable


def _is_table(text):
    """A border, a section line or a test row: a paste of a few rows is still the table."""
    for line in text.splitlines():
        stripped = line.strip()
        cells = stripped.split('|')
        if _BORDER.match(stripped) or _SECTION.match(stripped) or (
                len(cells) == 4 and not cells[0] and not cells[3] and _STATUS.match(cells[2].strip())):
            return True
    return False


def read_dcgmi_diag(text):
    """Saved ``dcgmi diag`` output in either form -> ``{form: json|table, version, results, unreadable}``.

    The table is found by its borders or section lines; otherwise the text goes to ``gpu_health.parse_dcgmi_diag``
    (JSON, with the text dcgmi prints before it). Raises ValueError naming both forms when neither is there.
    """
    cleaned = pasted_text.clean(text)
    if _is_table(cleaned):
        parsed, unreadable = parse_dcgmi_table(cleaned)
        return dict(parsed, form='table', unreadable=unreadable)
    if '{' not in cleaned:
        first = next((line.strip() for line in cleaned.splitlines() if line.strip()), '')
        raise ValueError('neither %s: no JSON object and no table border (first line: %r)' % (FORMS, first[:80]))
    try:
        parsed = gpu_health.parse_dcgmi_diag(cleaned)
    except ValueError as exc:
        raise ValueError('%s (the forms taken: %s)' % (exc, FORMS)) from exc
    return dict(parsed, form='json', unreadable=[])
