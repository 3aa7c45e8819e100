"""Run the collection's playbooks against inventories written by the test, the way a sysadmin would."""
import os
import shutil
import subprocess

import pytest
import yaml

from checkout import ANSIBLE_PLAYBOOK, ROOT


@pytest.fixture
def inventory(tmp_path):
    """Copy inventories/example into tmp_path, apply edits, and return its path.

    ``edit(path_in_inventory, mutate)`` loads a YAML file of the copy, lets ``mutate`` change it, and writes it back.
    """
    dest = tmp_path / 'inventory'
    shutil.copytree(ROOT / 'inventories' / 'example', dest)

    class Inventory:
        path = dest

        @staticmethod
        def edit(name, mutate):
            f = dest / name
            data = yaml.safe_load(f.read_text()) if f.exists() else {}
            mutate(data)
            f.write_text(yaml.safe_dump(data, sort_keys=False))

    return Inventory


@pytest.fixture
def playbook():
    """Run ``ansible-playbook -i INVENTORY PLAYBOOK`` from the checkout; return (rc, combined output)."""
    def run(inventory_path, name, *args):
        env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0')
        proc = subprocess.run(
            [ANSIBLE_PLAYBOOK, '-i', str(inventory_path), str(ROOT / 'playbooks' / name), *args],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
        return proc.returncode, proc.stdout + proc.stderr
    return run
