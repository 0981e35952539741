#!/usr/bin/env python3
"""Prints the pip requirements of the integrations Home Assistant loads in the
acceptance test: the ones its bootstrap always sets up (frontend, recovery
mode, …) plus api, http, mqtt and tag, with every dependency and
after_dependency, read from the installed integrations' manifest.json files.

HA would pip-install these itself at its first start; doing it here, pinned by
HA's own manifests and package_constraints.txt, lets the test start HA with
--skip-pip (no network at test time, the same packages every run)."""
import json
import pathlib

import homeassistant.bootstrap as bootstrap

root = pathlib.Path(bootstrap.__file__).parent / "components"
wanted = set(bootstrap.CORE_INTEGRATIONS) | set(bootstrap.DEFAULT_INTEGRATIONS) \
    | set(bootstrap.DEFAULT_INTEGRATIONS_RECOVERY_MODE) | set(bootstrap.LOGGING_INTEGRATIONS) \
    | set(bootstrap.FRONTEND_INTEGRATIONS) | set(bootstrap.RECORDER_INTEGRATIONS) \
    | set(bootstrap.STAGE_1_INTEGRATIONS) | {"api", "http", "mqtt", "tag", "lock", "event", "sensor",
                                             "binary_sensor", "button", "select"}
seen, todo, requirements = set(), list(wanted), set()
while todo:
    domain = todo.pop()
    if domain in seen:
        continue
    seen.add(domain)
    manifest = root / domain / "manifest.json"
    if not manifest.exists():
        continue
    m = json.loads(manifest.read_text())
    requirements.update(m.get("requirements", []))
    todo += m.get("dependencies", []) + m.get("after_dependencies", [])
print("\n".join(sorted(requirements)))
