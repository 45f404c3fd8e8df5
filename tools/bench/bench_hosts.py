"""Per-host figures: what each install path verifies, and how long plan/apply/verify take.

Runs entirely in a temporary folder (a sandbox home and data dir); never touches the real
home. Uses the real Codex CLI from .tools/codex when it is installed
(tools/dev/install_codex_cli.sh) to read back the Codex entry. `--json` prints one document.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the test helpers: tests.support
CODEX = ROOT / ".tools" / "codex" / "node_modules" / ".bin" / "codex"
HOW = {
    "codex": "config.toml parsed back (tomlkit) + real `codex mcp get --json`",
    "trae": "mcp.json parsed back (format round trip); host UI not available",
    "workbuddy": "mcp.json parsed back (format round trip); host UI not available",
    "cherry-studio": "manual only: deep link decoded back; app state never written",
}


def timed(fn: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn()
    return value, (time.perf_counter() - start) * 1000


def codex_readback(home: Path, name: str, argv: list[str]) -> str:
    if not CODEX.is_file():
        return "skipped (Codex CLI not installed)"
    env = {**os.environ, "CODEX_HOME": str(home / ".codex")}
    out = subprocess.run([str(CODEX), "mcp", "get", name, "--json"], env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return f"failed: {out.stderr.strip()[:200]}"
    transport = json.loads(out.stdout)["transport"]
    return "argv matches" if [transport["command"], *transport["args"]] == argv else "argv DIFFERS"


def run() -> list[dict[str, Any]]:
    from book_agent_adapters.bench import HostAdapter
    from tests.support.hosts_helpers import make_package

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        package = make_package(base / "pkg")
        for host in ("codex", "trae", "workbuddy", "cherry-studio"):
            home, data = base / host / "home", base / host / "data"
            target = HostAdapter(host, home=home, data_dir=data)
            plan, t_plan = timed(lambda t=target: t.install(package, auth_env="BOOK_KEY"))
            _, t_apply = timed(lambda t=target: t.install(package, apply=True, auth_env="BOOK_KEY"))
            again, t_again = timed(lambda t=target: t.install(package, apply=True, auth_env="BOOK_KEY"))
            report, t_verify = timed(lambda t=target: t.verify(package, auth_env="BOOK_KEY"))
            _, t_uninstall = timed(lambda t=target: t.uninstall(package, apply=True))
            rows.append({
                "host": host, "files_planned": len(plan["changes"]), "idempotent": not again["written"],
                "verify_ok": report["ok"], "mcp_status": report["mcp"]["status"], "how": HOW[host],
                "real_cli": codex_readback_after(host, target, package, plan) if host == "codex" else "n/a",
                "ms": {"plan": round(t_plan, 1), "apply": round(t_apply, 1), "reinstall": round(t_again, 1),
                       "verify": round(t_verify, 1), "uninstall": round(t_uninstall, 1)},
                "unconfirmed": plan["unconfirmed"],
            })
    return rows


def codex_readback_after(host: str, target: Any, package: Any, plan: dict[str, Any]) -> str:
    target.install(package, apply=True, auth_env="BOOK_KEY")
    result = codex_readback(target.port.ctx.home, plan["server_name"], plan["mcp_command"])
    target.uninstall(package, apply=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", action="store_true")
    rows = run()
    if parser.parse_args().json:
        print(json.dumps(rows, indent=2))
        return
    for row in rows:
        ms = row["ms"]
        print(f"{row['host']:14} files={row['files_planned']} idempotent={row['idempotent']} "
              f"verify={row['verify_ok']} mcp={row['mcp_status']} real_cli={row['real_cli']}")
        print(f"{'':14} plan {ms['plan']} ms, apply {ms['apply']} ms, reinstall {ms['reinstall']} ms, "
              f"verify {ms['verify']} ms, uninstall {ms['uninstall']} ms")
        print(f"{'':14} how: {row['how']}")
        for item in row["unconfirmed"]:
            print(f"{'':14} unconfirmed: {item}")


if __name__ == "__main__":
    main()
