"""``python -m bench`` (``make bench``): the ten benchmarks, one after the other.

Prints a table with the targets, writes ``bench/results/<time>.json`` (and
``latest.json``) and the generated part of ``docs/benchmarks.md``. PostgreSQL runs use
``BENCH_POSTGRES_URL`` (default ``postgresql+asyncpg://postgres@127.0.0.1:5432/test``) in
a fresh schema that is dropped afterwards; they are skipped, and said so, when it is not
reachable; so is the cluster benchmark without PostgreSQL or Redis (``BENCH_REDIS_URL``,
default ``redis://127.0.0.1:6379/0``). Exit status 1 if a hard requirement failed (lost
events, refused prompts, sockets that did not stay open); a missed performance target is
reported, not an error.

    python -m bench                        # everything (about 5 minutes on 2 cores)
    python -m bench --only turn,streaming  # some of: turn streaming concurrency idle
                                           # storage approval peer cluster long_chat
                                           # containment
    python -m bench --quick                # smaller counts: a smoke run, numbers not kept
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import (
    approval,
    cluster,
    concurrency,
    containment,
    idle,
    long_chat,
    peer,
    report,
    storage,
    streaming,
    turn_overhead,
)
from bench.common import (
    POSTGRES_URL,
    RESULTS_DIR,
    ROOT,
    postgres_reachable,
    quiet_logs,
    raise_fd_limit,
    use_uvloop,
)

NAMES = (
    "turn",
    "streaming",
    "concurrency",
    "idle",
    "storage",
    "approval",
    "peer",
    "cluster",
    "long_chat",
    "containment",
)
DOC = ROOT / "docs" / "benchmarks.md"


async def _postgres_version(url: str) -> str | None:
    import asyncpg

    if not await postgres_reachable(url):
        return None
    connection = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://", 1))
    try:
        return str(await connection.fetchval("SHOW server_version"))
    finally:
        await connection.close()


def _plan(quick: bool, postgres: str | None) -> dict[str, Callable[[Path], Awaitable[Any]]]:
    if quick:
        return {
            "turn": lambda d: turn_overhead.run(d, postgres_url=postgres, count=10, warmup=2),
            "streaming": lambda d: streaming.run(
                d, rounds=1, words=1_000, flat_words=5_000, flat_runs=1
            ),
            "concurrency": lambda d: concurrency.run(
                d, levels=((20, 2), (50, 1)), postgres_url=postgres, postgres_levels=((50, 1),)
            ),
            "idle": lambda d: idle.run(d, sockets=500, processes=2),
            "storage": lambda d: storage.run(d, postgres_url=postgres, turns=50),
            "approval": lambda d: approval.run(d, postgres_url=postgres, count=5, warmup=1),
            "peer": lambda d: peer.run(d, count=10, warmup=2, clients=10, turns_each=1, batches=1),
            "cluster": lambda d: cluster.run(
                d, postgres_url=postgres, chats=8, turns=1, rounds=1, monitored_turns=1
            ),
            "long_chat": lambda d: long_chat.run(d, turns=60),
            "containment": lambda d: containment.run(d, rounds=1),
        }
    return {
        "turn": lambda d: turn_overhead.run(d, postgres_url=postgres),
        "streaming": lambda d: streaming.run(d),
        "concurrency": lambda d: concurrency.run(d, postgres_url=postgres),
        "idle": lambda d: idle.run(d),
        "storage": lambda d: storage.run(d, postgres_url=postgres),
        "approval": lambda d: approval.run(d, postgres_url=postgres),
        "peer": lambda d: peer.run(d),
        "cluster": lambda d: cluster.run(d, postgres_url=postgres),
        "long_chat": lambda d: long_chat.run(d),
        "containment": lambda d: containment.run(d),
    }


KEYS = {"turn": "turn_overhead"}


async def main(names: list[str], quick: bool, write_doc: bool) -> int:
    started = time.monotonic()
    pg_version = await _postgres_version(POSTGRES_URL)
    postgres = POSTGRES_URL if pg_version else None
    if postgres is None:
        print(
            f"PostgreSQL at {POSTGRES_URL} is not reachable: its rows are skipped", file=sys.stderr
        )
    results: dict[str, Any] = {
        "machine": report.machine(pg_version),
        "load_average_before": os.getloadavg(),
        "quick": quick,
        "source": report.source_tree(ROOT),
    }
    plan = _plan(quick, postgres)
    with tempfile.TemporaryDirectory(prefix="switchboard-bench-") as tmp, quiet_logs():
        for name in names:
            print(f"running {name} ...", file=sys.stderr, flush=True)
            began = time.monotonic()
            results[KEYS.get(name, name)] = await plan[name](Path(tmp))
            print(f"  {name}: {time.monotonic() - began:.0f} s", file=sys.stderr, flush=True)
    results["load_average_after"] = os.getloadavg()
    results["seconds"] = time.monotonic() - started
    results["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    results["command"] = (
        "python -m bench"
        + (" --quick" if quick else "")
        + (f" --only {','.join(names)}" if list(names) != list(NAMES) else "")
    )

    rows = report.all_rows(results)
    print()
    print(report.table(rows))
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    text = json.dumps(results, indent=2, default=str)
    (RESULTS_DIR / f"bench-{stamp}.json").write_text(text)
    (RESULTS_DIR / "latest.json").write_text(text)
    print(f"\nresults: {RESULTS_DIR / f'bench-{stamp}.json'}")
    if write_doc and not quick:
        report.update_doc(DOC, report.generated_section(results, rows))
        print(f"updated: {DOC.relative_to(ROOT)}")
    failed = [row for row in rows if row.verdict == "FAIL"]
    for row in failed:
        print(f"HARD REQUIREMENT FAILED: {row.benchmark}: {row.measured}", file=sys.stderr)
    return 1 if failed else 0


def cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", default=",".join(NAMES), help=f"comma-separated subset of: {' '.join(NAMES)}"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small counts (a smoke run); docs/benchmarks.md is left alone",
    )
    parser.add_argument("--no-doc", action="store_true", help="do not touch docs/benchmarks.md")
    args = parser.parse_args(argv)
    names = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(names) - set(NAMES))
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(NAMES)}")
    raise_fd_limit()
    use_uvloop()
    return asyncio.run(main(names, args.quick, not args.no_doc))


if __name__ == "__main__":
    sys.exit(cli())
