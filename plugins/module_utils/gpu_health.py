# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""GPU and link health: parsers of the kernel log, nvidia-smi, PCIe sysfs and dcgmi, and the rules that turn one host's
readings into findings ``{host, device, check, seen, action}``.

Pure functions (the sysfs reader only reads files); the gpu_health_facts module collects, the gpu_health_findings filter
judges. Each finding's ``action`` starts with what an operator does - reseat, replace cable, drain, reboot, RMA - and
says why.
"""
from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET

# NVIDIA's XID catalog, the source of the meaning and the immediate action of each XID below:
# https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html (and its PDF, docs.nvidia.com/deploy/pdf/XID_Errors.pdf)
XID_CATALOG_URL = 'https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html'

# XIDs that say the GPU, its memory, its links or its firmware is at fault: what the catalog calls them and what to do.
HARDWARE_XIDS = {
    48: ('double-bit ECC error', 'drain, reboot: the GPU must be reset to retire or remap the failing memory; '
                                 'RMA if it recurs'),
    61: ('internal micro-controller breakpoint/warning', 'drain, reboot: the GPU needs a reset'),
    62: ('internal micro-controller halt', 'drain, reboot: the GPU needs a reset; RMA if it recurs'),
    63: ('ECC page retirement or row remapping recorded', 'reboot: the pending remap takes effect at the GPU reset'),
    64: ('ECC page retirement or row remapping failure', 'RMA: the memory cannot repair itself any more'),
    74: ('NVLink error', 'drain, reboot: reset the GPUs; if the link errors recur, reseat the GPU or RMA the baseboard'),
    79: ('GPU has fallen off the bus',
         'drain, reseat: the GPU stopped answering on PCIe; reseat it and check its power and riser, RMA if it recurs'),
    92: ('high single-bit ECC error rate', 'drain: run dcgmi diag -r 3; RMA if the memory errors keep rising'),
    94: ('contained ECC error', 'reboot: the application on the GPU was stopped; the reset remaps the failing row'),
    95: ('uncontained ECC error', 'drain, reboot: every application on the GPU is affected; the GPU must be reset'),
    119: ('GSP RPC timeout', 'drain, reboot: the GPU System Processor firmware stopped answering'),
    120: ('GSP error', 'drain, reboot: the GPU System Processor firmware reported an error'),
    121: ('C2C link error', 'drain, reboot: the chip-to-chip link to the CPU failed; RMA if it recurs'),
    140: ('unrecovered ECC error', 'drain, reboot: the GPU must be reset; RMA if it recurs'),
    154: ('GPU recovery action changed', 'drain, reboot: the driver asks for a GPU reset or a node reboot'),
}
# NVLink 5 (Blackwell) link XIDs 144-150: a fatal one takes the link down, a Nonfatal one is corrected and only logged.
for _xid in range(144, 151):
    HARDWARE_XIDS[_xid] = ('NVLink error', 'drain, reboot: reset the GPU; if the link errors recur, reseat or replace '
                                           'the NVLink cable or cartridge, else RMA the tray')

# Application-caused XIDs are not hardware findings: the catalog gives the user's program (an illegal instruction or
# address, a kernel that was killed or timed out) as their usual cause, and each clears when the process exits. Naming a
# node for them would drain good hardware for a bad job; a GPU that is really failing shows one of the XIDs above, ECC or
# row remapping counts, or a dcgmi failure as well.
# 13 graphics engine exception, 31 GPU memory page fault, 43 GPU stopped processing, 45 preemptive cleanup (follows
# another error or a killed process), 109 context switch timeout (a long-running kernel).
APPLICATION_XIDS = frozenset([13, 31, 43, 45, 109])

_XID = re.compile(r'NVRM: Xid \(PCI:([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})(?:\.([0-7]))?\): (\d+), ?(.*)$')
_PID = re.compile(r"^pid=('[^']*'|\S+?), ?")
_NAME = re.compile(r'^name=(.*?), ?')
_FALLEN = re.compile(r'NVRM: The NVIDIA GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$')


def pci_address(text):
    """``0000:3b:00.0`` from an NVRM (``0000:3b:00``), nvidia-smi (``00000000:3B:00.0``) or sysfs PCI address."""
    match = re.match(r'^([0-9A-Fa-f]{4,8}):([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})(?:\.([0-7]))?$', text.strip())
    if not match:
        raise ValueError('not a PCI address: %r' % text)
    domain, bus, device, function = match.groups()
    return '%04x:%s:%s.%s' % (int(domain, 16), bus.lower(), device.lower(), function or '0')


def parse_xids(text):
    """The XID events of a kernel log (dmesg, ``journalctl -k`` in any output format).

    Returns ``[{pci, xid, pid, name, text, line}]`` in log order: ``pci`` normalised (``0000:3b:00.0``), ``xid`` an int,
    ``pid``/``name`` as printed or null (drivers before R470 print neither), ``text`` the message after them. A GPU the
    driver reports as fallen off the bus without an XID line (newer drivers print it over three NVRM lines) is an event
    with ``xid`` 79 and ``text`` saying so.
    """
    events = []
    lines = text.splitlines()
    for number, line in enumerate(lines):
        match = _XID.search(line)
        if match:
            pci, function, xid, rest = match.groups()
            pid = name = None
            found = _PID.match(rest)
            if found:
                pid, rest = found.group(1).strip("'"), rest[found.end():]
            found = _NAME.match(rest)
            if found:
                name, rest = found.group(1), rest[found.end():]
            events.append({'pci': pci_address(pci + '.' + (function or '0')), 'xid': int(xid), 'pid': pid,
                           'name': name, 'text': rest.strip(), 'line': number + 1})
            continue
        match = _FALLEN.search(line)
        if match and any('fallen off the bus' in later for later in lines[number + 1:number + 3]):
            events.append({'pci': pci_address(match.group(1)), 'xid': 79, 'pid': None, 'name': None,
                           'text': 'GPU has fallen off the bus (reported without an XID line)', 'line': number + 1})
    return events


def _text(element, path):
    """Stripped text of ``path`` under ``element``; None when absent, empty or "N/A" (not supported or not applicable)."""
    found = element.find(path) if element is not None else None
    if found is None or found.text is None:
        return None
    value = found.text.strip()
    return None if value in ('', 'N/A', '[N/A]') or value.startswith('Requested functionality') else value


def _count(element, path):
    value = _text(element, path)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def _yes(element, path):
    value = _text(element, path)
    return None if value is None else value.lower() == 'yes'


# The uncorrectable counters of one ECC scope in every form drivers print: <double_bit><total> (before R525),
# <dram_uncorrectable> and <sram_uncorrectable> (R525 on), <sram_uncorrectable_parity>/<sram_uncorrectable_secded> (R550 on).
_UNCORRECTABLE = ('double_bit/total', 'dram_uncorrectable', 'sram_uncorrectable', 'sram_uncorrectable_parity',
                  'sram_uncorrectable_secded')

# Clock event (throttle) reasons that are not a fault: the GPU is idle, an administrator set the clocks (application or
# display clocks), it boosts in step with its sync-boost group, or it holds the power limit software set (sw_power_cap is
# how every loaded GPU reaches its limit). What remains - hardware slowdown, thermal slowdown (hardware or software) and
# the external power brake - is the cooling or the power supply holding the GPU back.
BENIGN_CLOCK_REASONS = frozenset(['gpu_idle', 'applications_clocks_setting', 'sync_boost', 'display_clocks_setting',
                                  'sw_power_cap'])
CLOCK_REASON_ACTIONS = {
    'hw_slowdown': 'drain: the GPU slows itself down (too hot or short of power); check its cooling and power cables, '
                   'reseat if it persists',
    'hw_thermal_slowdown': 'drain: the GPU is too hot; check the airflow, fans and heatsink',
    'sw_thermal_slowdown': 'drain: the GPU is above its thermal target; check the airflow, fans and heatsink',
    'hw_power_brake_slowdown': 'drain: the external power brake is asserted; check the power supplies',
}


def _clock_reasons(gpu):
    """``{reason: active}`` from <clocks_event_reasons> (R535 on) or <clocks_throttle_reasons> (older drivers)."""
    reasons = {}
    for section, prefix in (('clocks_event_reasons', 'clocks_event_reason_'),
                            ('clocks_throttle_reasons', 'clocks_throttle_reason_')):
        element = gpu.find(section)
        if element is None:
            continue
        for child in element:
            value = (child.text or '').strip()
            if child.tag.startswith(prefix) and value in ('Active', 'Not Active'):
                reasons[child.tag[len(prefix):]] = value == 'Active'
    return reasons


def _ecc_scope(gpu, scope):
    element = gpu.find('ecc_errors/' + scope)
    counts = [c for c in (_count(element, path) for path in _UNCORRECTABLE) if c is not None]
    return sum(counts) if counts else None


def parse_nvidia_smi_xml(text):
    """The health fields of ``nvidia-smi -q -x``, one dict per GPU in output order (nvidia-smi's index order).

    ``{index, pci, uuid, product, ecc_mode, ecc_uncorrectable: {volatile, aggregate}, remapped_rows: {pending, failure,
    uncorrectable} | null, retired_pages: {pending, double_bit} | null, clock_reasons: {reason: active}}``; a value the
    driver gives as N/A is null. Raises ValueError when the text is not nvidia-smi's XML.
    """
    try:
        root = ET.fromstring(text.strip().encode('utf-8'))
    except ET.ParseError as exc:
        raise ValueError('not XML: %s' % exc)
    if root.tag != 'nvidia_smi_log':
        raise ValueError('the root element is <%s>, not <nvidia_smi_log>' % root.tag)
    gpus = []
    for index, gpu in enumerate(root.findall('gpu')):
        remap = gpu.find('remapped_rows')
        remapped = None
        if remap is not None and len(remap):
            remapped = {'pending': _yes(remap, 'remapped_row_pending'), 'failure': _yes(remap, 'remapped_row_failure'),
                        'uncorrectable': _count(remap, 'remapped_row_unc')}
        pages = gpu.find('retired_pages')
        retired = None
        if pages is not None and _text(pages, 'pending_retirement') is not None:
            retired = {'pending': bool(_yes(pages, 'pending_retirement')) or bool(_yes(pages, 'pending_blacklist')),
                       'double_bit': _count(pages, 'double_bit_retirement/retired_count')}
        gpus.append({
            'index': index,
            'pci': pci_address(_text(gpu, 'pci/pci_bus_id') or gpu.get('id')),
            'uuid': _text(gpu, 'uuid'),
            'product': _text(gpu, 'product_name'),
            'ecc_mode': _text(gpu, 'ecc_mode/current_ecc'),
            'ecc_uncorrectable': {'volatile': _ecc_scope(gpu, 'volatile'), 'aggregate': _ecc_scope(gpu, 'aggregate')},
            'remapped_rows': remapped,
            'retired_pages': retired,
            'clock_reasons': _clock_reasons(gpu),
        })
    return gpus


_NVLINK_GPU = re.compile(r'^GPU (\d+): (.*?) \(UUID: (.*)\)\s*$')
_NVLINK_LINK = re.compile(r'^\s*Link (\d+): (.*?)\s*$')


def parse_nvlink_status(text):
    """``nvidia-smi nvlink -s``: ``[{gpu, product, uuid, links: {n: 'active' | 'inactive'}, rates: {n: text}}]``.

    A link is active when it shows a rate (``25.781 GB/s``), inactive when it shows ``<inactive>``; any other state
    counts as inactive (a link with no rate is no evidence of a working link). Lines that are neither a GPU header nor a
    link line (an elision someone pasted, a ``Link N, P2P is supported`` line of another option) are passed over.
    """
    gpus = []
    for line in text.splitlines():
        match = _NVLINK_GPU.match(line.strip())
        if match:
            gpus.append({'gpu': int(match.group(1)), 'product': match.group(2), 'uuid': match.group(3),
                         'links': {}, 'rates': {}})
            continue
        match = _NVLINK_LINK.match(line)
        if match and gpus:
            state = match.group(2)
            active = bool(re.match(r'^\d+(\.\d+)? GB/s$', state))
            gpus[-1]['links'][int(match.group(1))] = 'active' if active else 'inactive'
            gpus[-1]['rates'][int(match.group(1))] = state
    return gpus


def link_speed_gts(text):
    """GT/s of a sysfs link speed (``16.0 GT/s PCIe``; ``8 GT/s`` before Linux 5.3), None for ``Unknown`` or nothing."""
    match = re.match(r'^\s*(\d+(?:\.\d+)?) GT/s', text or '')
    return float(match.group(1)) if match else None


def link_width(text):
    """Lanes of a sysfs link width (``16``; some kernels print ``x16``), None when unreadable or 0 (no link)."""
    match = re.match(r'^\s*x?(\d+)\s*$', text or '')
    if not match:
        return None
    return int(match.group(1)) or None


def read_pcie_link(device_dir):
    """The PCIe link of a device directory (``/sys/bus/pci/devices/<bdf>`` or a netdev's ``device``).

    ``{pci, current_speed, max_speed, current_width, max_width}`` with the texts as sysfs gives them (null when the
    file is missing or unreadable: a virtual function or a device behind a hypervisor often has no link files).
    """
    values = {'pci': os.path.basename(os.path.realpath(device_dir))}
    for name in ('current_link_speed', 'max_link_speed', 'current_link_width', 'max_link_width'):
        try:
            with open(os.path.join(device_dir, name)) as handle:
                values[name.replace('_link', '')] = handle.read().strip()
        except (IOError, OSError):
            values[name.replace('_link', '')] = None
    return values


# DCGM's entity group of a GPU (DCGM_FE_GPU). DCGM 4.x names each result's entity: another group (the CPU of a Grace
# board, an NVSwitch) numbers its entities from 0 too, and such an id read as a GPU id would name the wrong GPU.
DCGM_GPU_ENTITY_GROUP = 1


def _dcgm_warnings(entry):
    warnings = entry.get('warnings') or []
    return '; '.join(w.get('warning', '') if isinstance(w, dict) else str(w) for w in warnings)


def _dcgm_entity(result):
    """``(gpus, other)`` of one result: the GPU ids it names, or for an entity that is no GPU its name (``CPU 0``)."""
    ids = result.get('gpu_ids', result.get('gpu_id'))
    if ids is None and result.get('entity_id') is not None:
        group, name = result.get('entity_group_id'), result.get('entity_group')
        is_gpu = group == DCGM_GPU_ENTITY_GROUP if group is not None else name in (None, 'GPU')
        if not is_gpu:
            return [], '%s %s' % (name or 'entity group %s' % group, result['entity_id'])
        ids = result['entity_id']
    return ([int(i) for i in str(ids).split(',') if i.strip().isdigit()] if ids is not None else []), None


def parse_dcgmi_diag(text):
    """``dcgmi diag -r N -j``: ``{version, results: [{category, test, gpus: [int], status, message}]}``.

    Reads DCGM 3.x (``"DCGM GPU Diagnostic"``, per-result ``gpu_ids`` or ``gpu_id``, ``version`` in it) and 4.x
    (``"DCGM Diagnostic"``, per-result ``entity_group_id``/``entity_id``, ``version`` in the ``metadata`` beside it);
    text before the JSON (dcgmi prints warnings there) and null entries are passed over. ``status`` is upper case
    (PASS, FAIL, WARN, SKIP); ``message`` joins the result's warnings, after the entity's name where the result is of
    no GPU (``CPU 0: ...``; ``gpus`` is then empty). A test whose ``test_summary`` fails while none of its results does
    gives one more FAIL result with no GPU. Raises ValueError when there is no diagnostic JSON, naming dcgmi's
    ``runtime_error`` where it gives one.
    """
    start = text.find('{')
    if start < 0:
        raise ValueError('no JSON object in the output')
    try:
        data = json.loads(text[start:])
    except ValueError as exc:
        raise ValueError('not JSON: %s' % exc)
    root = data.get('DCGM GPU Diagnostic') or data.get('DCGM Diagnostic') if isinstance(data, dict) else None
    # a diagnostic that could not run at all is a runtime_error and no results: its reason is the message to give
    for holder in (data, root):
        if isinstance(holder, dict) and holder.get('runtime_error'):
            raise ValueError('dcgmi diag did not run: %s' % holder['runtime_error'])
    if not isinstance(root, dict) or not isinstance(root.get('test_categories'), list):
        raise ValueError('no "DCGM GPU Diagnostic" or "DCGM Diagnostic" with test_categories')
    results = []
    for category in root['test_categories']:
        if not isinstance(category, dict):
            continue
        for test in category.get('tests') or []:
            if not isinstance(test, dict):
                continue
            failed = False
            for result in test.get('results') or []:
                if not isinstance(result, dict):
                    continue
                gpus, other = _dcgm_entity(result)
                message = _dcgm_warnings(result)
                if other:
                    message = other + (': ' + message if message else '')
                status = str(result.get('status', '')).upper()
                failed = failed or status == 'FAIL'
                results.append({'category': category.get('category'), 'test': test.get('name'), 'gpus': gpus,
                                'status': status, 'message': message})
            # DCGM 4.x gives each test a verdict of its own as well: a Fail there with no failed result (an error tied
            # to no entity) would go unreported if only the results were read
            summary = test.get('test_summary')
            if isinstance(summary, dict) and str(summary.get('status', '')).upper() == 'FAIL' and not failed:
                results.append({'category': category.get('category'), 'test': test.get('name'), 'gpus': [],
                                'status': 'FAIL', 'message': _dcgm_warnings(summary)})
    version = root.get('version') or (data.get('metadata') or {}).get('version')
    return {'version': version, 'results': results}


def _finding(host, device, check, seen, action):
    return {'host': host, 'device': device, 'check': check, 'seen': seen, 'action': action}


def _gpu_device(pci):
    return 'GPU %s' % pci


def _xid_findings(host, events):
    grouped = {}
    for event in events:
        if event['xid'] in HARDWARE_XIDS and not (event['xid'] >= 144 and 'Nonfatal' in event['text']):
            grouped.setdefault((event['pci'], event['xid']), []).append(event)
    findings = []
    for (pci, xid), group in sorted(grouped.items()):
        meaning, action = HARDWARE_XIDS[xid]
        times = '' if len(group) == 1 else ' (%d times)' % len(group)
        findings.append(_finding(host, _gpu_device(pci), 'xid', 'XID %d, %s%s: %s' % (xid, meaning, times, group[0]['text']),
                                 action))
    return findings


def _smi_findings(host, gpus):
    findings = []
    for gpu in gpus:
        device = _gpu_device(gpu['pci'])
        volatile = gpu['ecc_uncorrectable']['volatile']
        if volatile:
            # the aggregate (lifetime) count alone is no finding: row remapping (Ampere on) or page retirement already
            # took the failing memory out of use, and their pending or failed state is judged below
            findings.append(_finding(host, device, 'ecc', '%d uncorrectable ECC errors since the driver loaded '
                                     '(%s lifetime)' % (volatile, gpu['ecc_uncorrectable']['aggregate']),
                                     'drain, reboot: the GPU must be reset to take the failing memory out of use; RMA '
                                     'if the errors come back'))
        remap = gpu['remapped_rows'] or {}
        if remap.get('failure'):
            findings.append(_finding(host, device, 'row_remap', 'row remapping failed (%s rows remapped for '
                                     'uncorrectable errors)' % remap.get('uncorrectable'),
                                     'RMA: the memory has no spare rows left (NVIDIA memory error management)'))
        elif remap.get('pending'):
            findings.append(_finding(host, device, 'row_remap', 'a row remap is pending',
                                     'reboot: the remap takes effect when the GPU is reset'))
        if (gpu['retired_pages'] or {}).get('pending'):
            findings.append(_finding(host, device, 'page_retirement', 'memory pages are pending retirement '
                                     '(%s retired for double-bit errors)' % gpu['retired_pages']['double_bit'],
                                     'reboot: the pages are retired when the driver reloads'))
        active = sorted(r for r, on in gpu['clock_reasons'].items() if on and r not in BENIGN_CLOCK_REASONS)
        for reason in active:
            findings.append(_finding(host, device, 'throttle', 'clock event reason %s is active' % reason,
                                     CLOCK_REASON_ACTIONS.get(reason, 'drain: the GPU runs below its clocks for '
                                                                      'a reason nvidia-smi names %s' % reason)))
    return findings


# How many NVLinks a GPU's board wires is not in nvidia-smi's output: the chip has a fixed number of link slots (6 on a
# V100, 12 on an A100, 18 on an H100) and `nvidia-smi nvlink -s` lists them all, but a PCIe card wires only the slots
# its NVLink bridges reach (two H100 PCIe with three bridges: 12 of 18, the rest `<inactive>` for good), while an SXM
# baseboard wires every slot. An inactive slot is therefore a fault only where the board wires it. The count a board
# wires comes from `nvlinks_per_gpu` where the site gives it, else from the peers - every GPU of the same model in
# the cluster: a slot the board does not wire is never active, so the most active links any GPU of a model shows is
# what its boards wire, and a GPU with fewer has links down. The count, not the slot numbers, is compared: the output
# does not say which slots a board wires, so a slot is only named as down where a peer of the same model has it active.
NVLINK_ACTION = ('reboot: a GPU reset retrains the links; if they stay inactive, reseat the GPU or replace the NVLink '
                 'bridge or cable, else RMA the baseboard')


def _link_slots(gpu):
    """``{slot: state}`` of one GPU of ``nvidia-smi nvlink -s``, the slots as ints.

    The module's result reaches the filter through JSON, which turns every dict key into a string (``{'3': 'inactive'}``):
    the slots are read back as ints, so the module's result is judged as the parser's dicts are.
    """
    return dict((int(n), state) for n, state in (gpu.get('links') or {}).items())


def nvlinks_per_gpu_problems(nvlinks_per_gpu):
    """What is wrong with ``nvlinks_per_gpu`` (``{GPU model as nvidia-smi names it: links its board wires}``)."""
    if nvlinks_per_gpu is None:
        return []
    if not isinstance(nvlinks_per_gpu, dict):
        return ['nvlinks_per_gpu must map GPU models (as nvidia-smi names them) to the NVLinks their boards wire, got %r'
                % (nvlinks_per_gpu,)]
    return ['nvlinks_per_gpu.%s must be a number of links >= 1, got %r' % (model, links)
            for model, links in sorted(nvlinks_per_gpu.items(), key=lambda item: str(item[0]))
            if isinstance(links, bool) or not isinstance(links, int) or links < 1]


def nvlink_expected(nvlink_lists, nvlinks_per_gpu=None):
    """How many NVLinks each GPU model's boards wire: ``{model: {links, source, gpus, active_slots}}``.

    ``nvlink_lists`` holds the ``nvidia-smi nvlink -s`` GPUs of each host to compare (one list per host). ``source`` is
    ``nvlinks_per_gpu`` where the setting names the model, else ``peers``: the most active links any GPU of the model
    shows. ``gpus`` counts the GPUs of the model read; ``active_slots`` are the slots active on any of them. A model
    without a setting and without any active link has no entry: NVLink is not in use on it.
    """
    settings = nvlinks_per_gpu or {}
    models = {}
    for nvlink in nvlink_lists:
        for gpu in nvlink:
            links = _link_slots(gpu)
            model = models.setdefault(gpu['product'], {'most': 0, 'gpus': 0, 'active_slots': set()})
            active = [n for n, state in links.items() if state == 'active']
            model['most'] = max(model['most'], len(active))
            model['gpus'] += 1
            model['active_slots'].update(active)
    expected = {}
    for name, model in models.items():
        if name in settings:
            links, source = settings[name], 'nvlinks_per_gpu'
        elif model['most']:
            links, source = model['most'], 'peers'
        else:
            continue
        expected[name] = {'links': links, 'source': source, 'gpus': model['gpus'],
                          'active_slots': sorted(model['active_slots'])}
    return expected


def _slots(numbers):
    return ', '.join(str(n) for n in numbers)


def _nvlink_findings(host, nvlink, gpus, expected=None):
    """The GPUs of one host with fewer active NVLinks than their boards wire (see :func:`nvlink_expected`).

    ``expected`` is the cluster's :func:`nvlink_expected`; without it the host's own GPUs are the peers. The inactive
    slots of a GPU with as many active links as its model's boards wire are unwired, never a finding. A host without
    any active link is judged only on ``nvlinks_per_gpu``: its GPUs' peers cannot tell a node built without bridges
    from one that lost them all.
    """
    expected = nvlink_expected([nvlink]) if expected is None else expected
    slots = [(gpu, _link_slots(gpu)) for gpu in nvlink]
    in_use = any(state == 'active' for dummy, links in slots for state in links.values())
    by_index = dict((g['index'], g['pci']) for g in gpus)
    findings = []
    for gpu, links in slots:
        model = expected.get(gpu['product'])
        if model is None or (model['source'] == 'peers' and not in_use):
            continue
        active = sum(1 for state in links.values() if state == 'active')
        inactive = sorted(n for n, state in links.items() if state != 'active')
        # a link is down where nvidia-smi says so: a slot missing from the text (a paste cut short) is no evidence
        if active >= model['links'] or not inactive:
            continue
        # the slots active on a peer are wired: those are the links that went down; the rest are unwired on every
        # board of the model. Where no peer has any of them active (a count from the setting alone), every inactive
        # slot is named: which of them the board wires the output cannot say
        down = [n for n in inactive if n in model['active_slots']] or inactive
        unwired = [n for n in inactive if n not in down]
        if model['source'] == 'peers':
            basis = '%d is the most any %s shows' % (model['links'], gpu['product'])
        else:
            basis = 'nvlinks_per_gpu gives %d for %s' % (model['links'], gpu['product'])
        if unwired:
            basis += '; %s %s inactive on every one: unwired' % (_slots(unwired), 'is' if len(unwired) == 1 else 'are')
        seen = 'NVLink %s down: %d of %d links active (%s)' % (
            _slots(down) if len(down) <= model['links'] - active else
            '%d of %s' % (model['links'] - active, _slots(down)), active, model['links'], basis)
        pci = by_index.get(gpu['gpu'])
        device = _gpu_device(pci) if pci else 'GPU %d (%s)' % (gpu['gpu'], gpu['uuid'])
        findings.append(_finding(host, device, 'nvlink', seen, NVLINK_ACTION))
    return findings


def _pcie_findings(host, links):
    findings = []
    for link in links:
        kind, device = link['kind'], link['device']
        current, maximum = link_width(link.get('current_width')), link_width(link.get('max_width'))
        # an SR-IOV virtual function reads width 0 and no speed: it has no link of its own, its physical function does
        if current is None and link_speed_gts(link.get('current_speed')) is None:
            continue
        if current and maximum and current < maximum:
            findings.append(_finding(host, device, 'pcie_width', 'PCIe link x%d of x%d' % (current, maximum),
                                     'reseat: a link narrower than its device trains on a bad contact, slot or riser; '
                                     'reseat the card (and its riser), RMA if it stays narrow'))
        # NVIDIA GPUs lower their PCIe link speed when idle (power saving: nvidia-smi shows current gen 1 of 4 at P8),
        # so a GPU's speed read before a job is no evidence; only a NIC, which keeps its trained speed, is judged on it
        if kind != 'nic':
            continue
        speed, top = link_speed_gts(link.get('current_speed')), link_speed_gts(link.get('max_speed'))
        if top and (speed is None or speed < top):
            findings.append(_finding(host, device, 'pcie_speed', 'PCIe link at %s of %s' % (
                link.get('current_speed'), link.get('max_speed')),
                'reseat: the link trained below the NIC\'s speed (a bad contact or riser, or a slower slot); reseat '
                'it or move it to a slot of its generation'))
    return findings


def _dcgm_findings(host, dcgm, gpus):
    by_index = dict((g['index'], g['pci']) for g in gpus)
    findings = []
    for result in dcgm['results']:
        if result['status'] != 'FAIL':
            continue
        for gpu in result['gpus'] or [None]:
            device = _gpu_device(by_index[gpu]) if gpu in by_index else (
                'GPU %d (DCGM id)' % gpu if gpu is not None else 'GPUs')
            findings.append(_finding(host, device, 'dcgm', 'dcgmi diag %s / %s failed%s' % (
                result['category'], result['test'], ': ' + result['message'] if result['message'] else ''),
                # the software test checks the node's setup (driver, persistence mode, libraries), not the GPU
                'fix what the message names on the node (the nvidia_driver role sets persistence mode), then rerun '
                'dcgmi diag' if result['test'] == 'software' else
                'drain: rerun dcgmi diag -r 3 on the drained node; RMA the GPU if it fails again'))
    return findings


def health_findings(host, data, nvlink=None):
    """One host's findings from what gpu_health_facts read (its ``health`` return), in check order.

    ``nvlink`` is the cluster's :func:`nvlink_expected` (the NVLinks each GPU model's boards wire); without it the
    host's own GPUs are the peers its NVLinks are compared with.
    """
    gpus = data.get('gpus') or []
    return (_xid_findings(host, data.get('xids') or []) + _smi_findings(host, gpus)
            + _nvlink_findings(host, data.get('nvlink') or [], gpus, nvlink)
            + _pcie_findings(host, data.get('pcie') or [])
            + (_dcgm_findings(host, data['dcgm'], gpus) if data.get('dcgm') else []))


def health_report(results_by_host, nvlinks_per_gpu=None):
    """The cluster's health check from ``{host: gpu_health_facts result}`` (a skipped or missing result: null).

    ``{passed, findings: [{host, device, check, seen, action}], unread: [{host, source, why}], messages, summary,
    nvlink}``: ``passed`` is true when no finding was made; what could not be read is listed in ``unread`` and named in
    ``messages`` and ``summary`` - its health is unknown, never counted as good. ``nvlink`` says, per GPU model, how
    many NVLinks its boards wire and where that came from (:func:`nvlink_expected`): ``nvlinks_per_gpu`` (``{model:
    links}``, the model as nvidia-smi names it) where given, else the GPUs of that model on every host judged together.
    A GPU with fewer active links is a finding naming the slots that are active on its peers; slots inactive on every
    GPU of the model are unwired (PCIe cards wire only the slots their NVLink bridges reach) and never a finding.
    """
    if not isinstance(results_by_host, dict):
        raise TypeError('expected {host: gpu_health_facts result}, got %s' % type(results_by_host).__name__)
    problems = nvlinks_per_gpu_problems(nvlinks_per_gpu)
    if problems:
        raise ValueError('; '.join(problems))
    healths = dict((host, result['health']) for host, result in results_by_host.items()
                   if isinstance(result, dict) and isinstance(result.get('health'), dict))
    nvlink = nvlink_expected([health.get('nvlink') or [] for health in healths.values()], nvlinks_per_gpu)
    findings, unread = [], []
    for host in sorted(healths):
        findings += health_findings(host, healths[host], nvlink)
        unread += [dict(host=host, **u) for u in healths[host].get('unread') or []]
    messages = ['%s: %s: %s (%s); %s' % (f['host'], f['device'], f['check'], f['seen'], f['action']) for f in findings]
    messages += ['%s: %s not read: %s' % (u['host'], u['source'], u['why']) for u in unread]
    hosts = sorted(set(f['host'] for f in findings))
    summary = ('%d finding(s) on %s' % (len(findings), ', '.join(hosts))) if findings else 'no finding'
    if unread:
        summary += '; not read: %s' % ', '.join('%s %s' % (u['host'], u['source']) for u in unread)
    return {'passed': not findings, 'findings': findings, 'unread': unread, 'messages': messages, 'summary': summary,
            'nvlink': nvlink}
