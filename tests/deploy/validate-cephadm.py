#!/usr/bin/python3
"""Validates deploy/cephadm/cephscope.yaml offline with Ceph's own service-spec classes
(python3-ceph-common: ceph.deployment.service_spec), as `ceph orch apply -i` would parse it,
checks what cephscope needs from it, and checks its embedded cephscope config with the
daemon's own parser (cephscope --config.check).

    tests/deploy/validate-cephadm.py SPEC CEPHSCOPE_BINARY
"""
import copy
import subprocess
import sys
import tempfile

import yaml
from ceph.deployment.service_spec import CustomContainerSpec, ServiceSpec


def check(doc: dict, binary: str) -> list:
    """What is wrong with the spec DOC for cephscope; raises where Ceph's classes refuse it."""
    spec = ServiceSpec.from_json(copy.deepcopy(doc))
    spec.validate()
    problems = []
    if not isinstance(spec, CustomContainerSpec):
        problems.append(f"not a custom container spec: {type(spec).__name__}")
    else:
        if not spec.privileged:
            problems.append("not privileged: eBPF needs it (or the documented capabilities)")
        if "--pid=host" not in (spec.args or []):
            problems.append("no --pid=host: the OSDs would be invisible")
        if 9488 not in (spec.ports or []):
            problems.append("port 9488 not declared")
        mounts = {dict(kv.split("=", 1) for kv in m if "=" in kv).get("destination")
                  for m in (spec.bind_mounts or [])}
        if "/sys/kernel/tracing" not in mounts:
            problems.append("tracefs not mounted")
        if spec.volume_mounts.get("cephscope.yaml") != "/etc/cephscope/cephscope.yaml":
            problems.append("the config file is not mounted at /etc/cephscope/cephscope.yaml")
        args = spec.extra_entrypoint_args or []
        if "--config.file=/etc/cephscope/cephscope.yaml" not in [str(a) for a in args]:
            problems.append("the daemon is not pointed at its config file")
        if ServiceSpec.from_json(spec.to_json()).to_json() != spec.to_json():
            problems.append("the spec does not survive cephadm's JSON round trip")
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as conf:
            conf.write(spec.files["cephscope.yaml"])
            conf.flush()
            check = subprocess.run([binary, "--config.check", "--config.file", conf.name],
                                   capture_output=True, text=True, check=False)
            if check.returncode != 0:
                problems.append(f"embedded config rejected: {check.stderr.strip()}")
    return problems


# Each of these breaks the spec in one way the checks above must notice.
MUTATIONS = {
    "unprivileged": lambda d: d["spec"].update(privileged=False),
    "own pid namespace": lambda d: d["spec"].update(args=[]),
    "no tracefs": lambda d: d["spec"].update(bind_mounts=d["spec"]["bind_mounts"][1:]),
    "bad embedded config": lambda d: d["spec"]["files"].update({"cephscope.yaml": "listen: x:y\n"}),
}


def main() -> int:
    spec_path, binary = sys.argv[1], sys.argv[2]
    with open(spec_path, encoding="utf-8") as f:
        docs = list(yaml.safe_load_all(f))
    assert len(docs) == 1, f"{spec_path}: one service spec expected, got {len(docs)}"
    problems = check(docs[0], binary)
    for name, mutate in MUTATIONS.items():
        broken = copy.deepcopy(docs[0])
        mutate(broken)
        if not check(broken, binary):
            problems.append(f"the check misses a spec with {name}")
    spec = ServiceSpec.from_json(copy.deepcopy(docs[0]))
    for p in problems:
        print(f"{spec_path}: {p}")
    if problems:
        return 1
    print(f"{spec_path}: valid {spec.service_type}.{spec.service_id} spec "
          f"(ceph.deployment.service_spec of python3-ceph-common), image {spec.image}, "
          f"placement {spec.placement.pretty_str()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
