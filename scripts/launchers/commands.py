"""Asserts that each launcher in deploy/ starts the right command: `runner worker` with the
flags a launcher needs. Run by scripts/check-launchers with the venv's Python (PyYAML)."""

import shlex
import sys
from pathlib import Path

import yaml

problems = []


def need(ok, what):
    if not ok:
        problems.append(what)


def worker_flags(argv, where, *wanted):
    """argv starts `runner worker` (runner by any path) and holds each of `wanted`."""
    need(
        len(argv) >= 2 and Path(argv[0]).name == "runner" and argv[1] == "worker",
        f"{where}: does not start `runner worker`: {argv}",
    )
    for flag in wanted:
        need(flag in argv, f"{where}: `runner worker` without {flag}: {argv}")


def kubernetes(path):
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    deployments = [d for d in docs if d.get("kind") in ("Deployment", "StatefulSet")]
    need(len(deployments) == 1, f"{path}: one Deployment (or StatefulSet) expected")
    for d in deployments:
        spec = d["spec"]["template"]["spec"]
        need(spec.get("restartPolicy", "Always") == "Always", f"{path}: restartPolicy is not Always")
        need(spec.get("initContainers"), f"{path}: no init container makes the clone")
        workers = spec["containers"]
        need(len(workers) == 1, f"{path}: one worker container expected")
        for c in workers:
            worker_flags(c.get("command", []), f"{path} ({c['name']})", "--remote", "--jobs")
            need(c.get("resources", {}).get("requests"), f"{path}: no resource requests")
            secrets = [
                e for e in c.get("env", []) if "secretKeyRef" in e.get("valueFrom", {})
            ]
            need(secrets, f"{path}: the agent's key does not come from a Secret")
        need(
            any("secret" in v for v in spec.get("volumes", [])),
            f"{path}: the repository's credentials do not come from a Secret",
        )


def actions(path):
    flow = yaml.safe_load(path.read_text())
    # YAML 1.1 reads the key `on` as True.
    triggers = flow.get("on", flow.get(True, {}))
    need("workflow_dispatch" in triggers and "schedule" in triggers, f"{path}: not dispatch + schedule")
    need("concurrency" in flow, f"{path}: no concurrency")
    found = 0
    for name, job in flow["jobs"].items():
        need("matrix" in job.get("strategy", {}), f"{path}: job {name} has no matrix")
        for step in job.get("steps", []):
            for line in step.get("run", "").splitlines():
                argv = shlex.split(line)
                if argv[:2] == ["runner", "worker"]:
                    found += 1
                    worker_flags(argv, f"{path} ({name})", "--exit-when-idle")
    need(found == 1, f"{path}: {found} `runner worker` lines, one expected")


def systemd(path):
    lines = [l.strip() for l in path.read_text().splitlines()]
    execs = [l.split("=", 1)[1] for l in lines if l.startswith("ExecStart=")]
    need(len(execs) == 1, f"{path}: one ExecStart= expected")
    for e in execs:
        worker_flags(shlex.split(e), str(path), "--remote")
    for setting in ("Restart=always", "NoNewPrivileges=yes", "ProtectSystem=strict"):
        need(setting in lines, f"{path}: no {setting}")
    need(any(l.startswith("User=") and l != "User=root" for l in lines), f"{path}: no dedicated User=")


deploy = Path(sys.argv[1])
kubernetes(deploy / "kubernetes/runner-workers.yaml")
actions(deploy / "github-actions/runner-workers.yml")
systemd(deploy / "systemd/runner-worker@.service")
if problems:
    print("\n".join(f"check-launchers: {p}" for p in problems), file=sys.stderr)
    sys.exit(1)
print("check-launchers: each launcher starts `runner worker`")
