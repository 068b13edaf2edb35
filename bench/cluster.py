"""8. Cluster: two ``switchboard serve`` instances on PostgreSQL + Redis against one.

Both instances run all along, on one fresh PostgreSQL schema and the same Redis
(``SWITCHBOARD_REDIS_URL``), the offline model at 10 ms/word. A round is ``chats`` chats
running ``turns`` turns each, back to back (``bench.clients``): in a *one* round every
chat is on instance A (two client processes), in a *two* round half of them are on A and
half on B (one client process each), each chat on one instance throughout. The rounds
alternate, one, two, one, two…, so the shared machine's drift hits both alike; the result
is turns/s of the two-instance rounds over the one-instance rounds. During each round the
CPU of the servers, the client processes, PostgreSQL (every ``postgres`` process) and
Redis is read from ``/proc``, with the machine's busy cores (``/proc/stat``), so a ratio
below two can be put down to what used the cores.

Hard requirement, as in ``bench.concurrency``: no lost event (seqs without gap, deltas
joining to their message, what each socket saw equal to what the database holds) and no
refused prompt.

Then Redis's cost of a turn nobody else watches: with ``MONITOR`` on, one socket on A
runs turns in its own chat; after each, a socket opens on B in a fresh chat, which A
acknowledges through its ordered outbox (``websocket.cluster``), so A's acknowledgement
marks the end of everything A sent about the turn. The commands counted are those of A's
own connections (each server names them: ``client_name`` in its Redis URL), by kind.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson
from websockets.asyncio.client import ClientConnection, connect

from bench.clients import ClientPool
from bench.common import (
    PROMPT,
    Server,
    _asyncpg_dsn,
    cpu_seconds,
    postgres_schema,
    start_switchboard,
    summary,
)
from bench.concurrency import verify_persisted

REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
MODEL_DELAY = 0.01  # seconds per streamed word, as in bench.concurrency
CHATS = 48  # enough to keep one instance busy on two cores (a turn costs ~35 ms of CPU)
TURNS = 4
ROUNDS = 3  # of each kind, alternating
MONITORED_TURNS = 3
TURN_TIMEOUT = 120.0
MARKER_TIMEOUT = 30.0


# ----------------------------------------------------------------------------- CPU


def _machine_ticks() -> tuple[int, int]:
    """(busy, total) clock ticks of all cores so far, from ``/proc/stat``."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def _pids_named(*names: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() in names:
                    pids.append(int(entry.name))
            except OSError:  # it ended meanwhile
                continue
    return pids


def _cpu_of(pids: list[int]) -> dict[int, float]:
    seconds = {}
    for pid in pids:
        try:
            seconds[pid] = cpu_seconds(pid)
        except (OSError, IndexError):
            continue
    return seconds


@dataclass
class CpuSample:
    """CPU seconds so far of every group of processes the benchmark cares about."""

    groups: dict[str, dict[int, float]]
    machine: tuple[int, int]
    at: float

    @classmethod
    def take(cls, groups: dict[str, list[int]]) -> CpuSample:
        return cls(
            {name: _cpu_of(pids) for name, pids in groups.items()},
            _machine_ticks(),
            time.perf_counter(),
        )

    def shares_since(self, before: CpuSample) -> dict[str, float]:
        """Cores used by each group between ``before`` and this sample (1.0 = one core);
        processes that started meanwhile count from zero."""
        wall = self.at - before.at
        shares = {
            name: sum(s - before.groups[name].get(pid, 0.0) for pid, s in now.items()) / wall
            for name, now in self.groups.items()
        }
        busy = self.machine[0] - before.machine[0]
        total = self.machine[1] - before.machine[1]
        shares["machine"] = (os.cpu_count() or 1) * busy / max(total, 1)
        shares["other"] = max(0.0, shares["machine"] - sum(shares[n] for n in self.groups))
        return shares


# ----------------------------------------------------------------------------- rounds


def _sockets_of(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def _local_ports_to(pids: list[int], remote_port: int) -> list[int]:
    """The local TCP ports of ``pids``' connections to ``remote_port`` (``/proc/net``)."""
    inodes = set().union(*(_sockets_of(pid) for pid in pids))
    ports = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, remote, inode = fields[1], fields[2], fields[9]
            if inode in inodes and int(remote.rsplit(":", 1)[1], 16) == remote_port:
                ports.append(int(local.rsplit(":", 1)[1], 16))
    return ports


async def _postgres_backends(postgres_url: str, servers: list[Server]) -> list[int]:
    """The PostgreSQL backends serving ``servers`` (not those of other users of the
    database server, whose CPU would otherwise count as ours)."""
    import asyncpg

    dsn = _asyncpg_dsn(postgres_url)
    ports = _local_ports_to([s.pid for s in servers], urlsplit(dsn).port or 5432)
    connection = await asyncpg.connect(dsn)
    try:
        rows = await connection.fetch(
            "SELECT pid FROM pg_stat_activity WHERE client_port = ANY($1::int[])", ports
        )
    finally:
        await connection.close()
    return [row["pid"] for row in rows]


async def _process_groups(
    postgres_url: str, servers: list[Server], pools: list[ClientPool]
) -> dict[str, list[int]]:
    groups = {f"server_{chr(ord('a') + i)}": [s.pid] for i, s in enumerate(servers)}
    groups["clients"] = [pid for pool in pools for pid in pool.pids]
    groups["postgres"] = await _postgres_backends(postgres_url, servers)
    groups["redis"] = _pids_named("redis-server")  # the whole server: shared, but idle here
    return groups


async def _round(
    kind: str, servers: list[Server], chats: int, turns: int, label: str, postgres_url: str
) -> dict[str, Any]:
    """One round of ``chats`` chats × ``turns`` turns on instance A alone (``one``) or
    split over A and B (``two``)."""
    ids = [f"cluster-{label}-{i}" for i in range(chats)]
    spec = {"prompt": PROMPT, "turns": turns, "turn_timeout": TURN_TIMEOUT}
    # The same two client processes either way: only where their sockets go changes.
    if kind == "one":
        shares = [(servers[0], ClientPool(2, servers[0].port, ids, **spec))]
    else:
        shares = [
            (server, ClientPool(1, server.port, ids[index::2], **spec))
            for index, server in enumerate(servers)
        ]
    try:
        for _, pool in shares:
            opened, failures, failed = await asyncio.to_thread(pool.wait_ready, 120.0)
            if failed:
                raise RuntimeError(f"{failed} sockets did not open, e.g. {failures}")
        pools = [pool for _, pool in shares]
        groups = await _process_groups(postgres_url, servers, pools)
        before = CpuSample.take(groups)
        started = time.perf_counter()
        per_server = await asyncio.gather(
            *(asyncio.to_thread(pool.run_turns, TURN_TIMEOUT * turns + 60) for pool in pools)
        )
        wall = time.perf_counter() - started
        # Backends the pools opened during the round count too (from zero).
        groups = await _process_groups(postgres_url, servers, pools)
        cpu = CpuSample.take(groups).shares_since(before)
        load = os.getloadavg()
        problems: list[str] = []
        for (server, _), reports in zip(shares, per_server, strict=True):
            problems += [f"{r['chat_id']}: {p}" for r in reports for p in r["problems"]]
            problems += await verify_persisted(server, reports, turns)
    finally:
        for _, pool in shares:
            await asyncio.to_thread(pool.close)
    reports = [report for chunk in per_server for report in chunk]
    done = sum(report["completed_turns"] for report in reports)
    gaps = sum(report["seq_gaps"] for report in reports)
    latencies = [latency for report in reports for latency in report["latencies"]]
    return {
        "kind": kind,
        "chats": chats,
        "turns": done,
        "turns_expected": chats * turns,
        "seconds": wall,
        "turns_per_s": done / wall,
        "latency": summary(latencies) if latencies else None,
        "cpu": cpu,
        "postgres_backends": len(groups["postgres"]),
        # Per completed turn: what a turn costs each group, whatever else ran meanwhile.
        "cpu_ms_per_turn": {
            name: share * wall * 1000 / max(done, 1) for name, share in cpu.items()
        },
        "load_average": load,
        "refused_prompts": sum(
            1 for r in reports for p in r["problems"] if "server error frame" in p
        ),
        "seq_gaps": gaps,
        "lost_or_incomplete": gaps + len(problems) + (chats * turns - done),
        "problems": problems[:10],
    }


# ----------------------------------------------------------------------------- Redis cost


async def redis_reachable(url: str) -> bool:
    import redis.asyncio as redis

    client = redis.from_url(url, socket_timeout=3, socket_connect_timeout=3)
    try:
        return bool(await client.ping())
    except Exception:
        return False
    finally:
        await client.aclose()


def _kind_of(command: str, rate_prefix: str) -> str:
    """What a server's Redis command was for."""
    if rate_prefix in command:
        return "rate_limit"  # the shared prompt window (websocket.limits)
    if command.startswith(("PING", "HELLO", "CLIENT")):
        return "connection"  # health checks and connection set-up, not per turn
    return "cluster"  # events, snapshots, notices (websocket.cluster); MULTI/EXEC too


class _Monitor:
    """Every command Redis runs (``MONITOR``), with the address that sent it."""

    def __init__(self, url: str) -> None:
        import redis.asyncio as redis

        self._client = redis.from_url(url, socket_timeout=None)
        self.commands: list[tuple[str, str]] = []  # (address, command)
        self.arrived = asyncio.Event()

    async def __aenter__(self) -> _Monitor:
        self._monitor = self._client.monitor()
        await self._monitor.__aenter__()
        self._task = asyncio.create_task(self._collect())
        return self

    async def _collect(self) -> None:
        async for info in self._monitor.listen():
            address = f"{info['client_address']}:{info['client_port']}"
            self.commands.append((address, info["command"]))
            self.arrived.set()

    async def wait_for(self, found: Any, start: int) -> int:
        """Index of the first command from ``start`` on for which ``found`` holds."""
        async with asyncio.timeout(MARKER_TIMEOUT):
            while True:
                for index in range(start, len(self.commands)):
                    if found(*self.commands[index]):
                        return index
                start = len(self.commands)
                self.arrived.clear()
                await self.arrived.wait()

    async def __aexit__(self, *_: Any) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        await self._monitor.__aexit__()
        await self._client.aclose()


async def _addresses(url: str, client_name: str) -> set[str]:
    """The addresses of a server's Redis connections (each named ``client_name``)."""
    import redis.asyncio as redis

    async with redis.from_url(url, socket_timeout=5) as client:
        return {c["addr"] for c in await client.client_list() if c.get("name") == client_name}


async def _one_turn(ws: ClientConnection) -> None:
    await ws.send(orjson.dumps({"type": "prompt", "text": PROMPT}).decode())
    async with asyncio.timeout(TURN_TIMEOUT):
        while True:
            event = orjson.loads(await ws.recv())
            if event["type"] == "error":
                raise RuntimeError(f"server error frame: {event}")
            if event["type"] == "suggested_prompts":
                return


async def redis_cost(
    redis_url: str, a: Server, b: Server, name_a: str, rate_prefix: str, turns: int
) -> dict[str, Any]:
    """Redis commands A sends during whole turns on a chat no other instance watches."""
    chat = f"cluster-alone-{secrets.token_hex(4)}"
    per_turn: list[dict[str, int]] = []
    examples: list[str] = []
    latencies: list[float] = []  # of a turn alone on its instance: the load-free floor
    # The socket opens before the first count: its arrival (SUBSCRIBE, PUBSUB CHANNELS, a
    # watch notice, the snapshot read) is the socket's cost, paid once, not the turn's. The
    # server reads frames only once that is done, so its pong says it is.
    async with (
        connect(a.ws_url(chat), open_timeout=30, ping_interval=None, max_size=None) as ws,
        _Monitor(redis_url) as monitor,
    ):
        await ws.send('{"type":"ping"}')
        async with asyncio.timeout(TURN_TIMEOUT):
            while orjson.loads(await ws.recv())["type"] != "pong":
                pass
        for index in range(turns):
            start, began = len(monitor.commands), time.perf_counter()
            await _one_turn(ws)
            latencies.append(time.perf_counter() - began)
            # A acknowledges B's watch of a fresh chat through its outbox, after every
            # batch it queued before: everything A sent about the turn is in by then.
            marker = f"cluster-marker-{index}-{secrets.token_hex(4)}"
            acknowledged = asyncio.create_task(
                monitor.wait_for(
                    lambda _, c, m=marker: c.startswith("PUBLISH sb:chat:") and m in c, start
                )
            )
            async with connect(b.ws_url(marker), open_timeout=30, ping_interval=None):
                end = await acknowledged
            ours = await _addresses(redis_url, name_a)
            window = [c for addr, c in monitor.commands[start:end] if addr in ours]
            if window and window[-1] == "MULTI":  # the acknowledgement's own transaction
                window.pop()
            counts: dict[str, int] = {"cluster": 0, "rate_limit": 0, "connection": 0}
            for command in window:
                counts[_kind_of(command, rate_prefix)] += 1
            examples += [c[:120] for c in window if _kind_of(c, rate_prefix) != "connection"]
            per_turn.append(counts)
    return {
        "turns": turns,
        "per_turn": per_turn,
        "cluster_commands_per_turn": max(t["cluster"] for t in per_turn),
        "rate_limit_commands_per_turn": max(t["rate_limit"] for t in per_turn),
        "examples": sorted(set(examples))[:10],
        "latency_alone": summary(latencies),
    }


# ----------------------------------------------------------------------------- the run


def _mean(rounds: list[dict[str, Any]], key: str) -> float:
    return statistics.fmean(r[key] for r in rounds)


def _mean_of(rounds: list[dict[str, Any]], key: str) -> dict[str, float]:
    return {name: statistics.fmean(r[key][name] for r in rounds) for name in rounds[0][key]}


def box_ceiling(ms_per_turn: dict[str, float]) -> float:
    """The most two instances can give over one on this machine, from what a turn costs.

    One instance is one Python thread: at best one core of server work. The machine's
    cores also run each turn's client, PostgreSQL and Redis work, so all of it together,
    per turn, bounds the turns/s of two instances. (Other work on the machine lowers it
    further; it is left out here.)
    """
    server = ms_per_turn["server_a"] + ms_per_turn["server_b"]
    ours = server + ms_per_turn["clients"] + ms_per_turn["postgres"] + ms_per_turn["redis"]
    cores = os.cpu_count() or 1
    one = 1000 / server  # one core of server work
    two = min(2 * one, cores * 1000 / ours)
    return two / min(one, cores * 1000 / ours)


async def run(
    work_dir: Path,
    *,
    postgres_url: str | None,
    redis_url: str = REDIS_URL,
    chats: int = CHATS,
    turns: int = TURNS,
    rounds: int = ROUNDS,
    monitored_turns: int = MONITORED_TURNS,
    delay: float = MODEL_DELAY,
) -> dict[str, Any]:
    if postgres_url is None:
        return {"skipped": "PostgreSQL is not reachable"}
    if not await redis_reachable(redis_url):
        return {"skipped": f"Redis at {redis_url} is not reachable"}
    run_id = secrets.token_hex(4)
    rate_prefix = f"sb:bench-{run_id}:ratelimit"
    names = [f"sb-bench-{run_id}-a", f"sb-bench-{run_id}-b"]
    separator = "&" if "?" in redis_url else "?"
    servers: list[Server] = []
    async with postgres_schema(postgres_url) as url:
        try:
            for name in names:
                directory = work_dir / f"cluster-{name}"
                directory.mkdir()
                servers.append(
                    start_switchboard(
                        url,
                        directory,
                        offline_delta_delay=delay,
                        own_session=True,
                        redis_url=f"{redis_url}{separator}client_name={name}",
                        rate_limit_key_prefix=rate_prefix,
                    )
                )
            # Warm both up before anything is timed (imports, statement caches, and the
            # connection pools grown to what each kind of round needs).
            for kind in ("one", "two"):
                await _round(kind, servers, chats, 1, f"{run_id}-warm-{kind}", postgres_url)
            measured = []
            for index in range(rounds):
                for kind in ("one", "two"):
                    measured.append(
                        await _round(
                            kind, servers, chats, turns, f"{run_id}-{kind}{index}", postgres_url
                        )
                    )
            cost = await redis_cost(
                redis_url, servers[0], servers[1], names[0], rate_prefix, monitored_turns
            )
        finally:
            for server in servers:
                server.stop()
    one = [r for r in measured if r["kind"] == "one"]
    two = [r for r in measured if r["kind"] == "two"]
    return {
        "chats": chats,
        "turns_each": turns,
        "rounds": rounds,
        "delay": delay,
        "one_turns_per_s": _mean(one, "turns_per_s"),
        "two_turns_per_s": _mean(two, "turns_per_s"),
        "ratio": _mean(two, "turns_per_s") / _mean(one, "turns_per_s"),
        "pair_ratios": [t["turns_per_s"] / o["turns_per_s"] for o, t in zip(one, two, strict=True)],
        "one_latency_p50": statistics.fmean(r["latency"]["p50"] for r in one),
        "two_latency_p50": statistics.fmean(r["latency"]["p50"] for r in two),
        "one_cpu": _mean_of(one, "cpu"),
        "two_cpu": _mean_of(two, "cpu"),
        "one_cpu_ms_per_turn": _mean_of(one, "cpu_ms_per_turn"),
        "two_cpu_ms_per_turn": _mean_of(two, "cpu_ms_per_turn"),
        "box_ceiling_ratio": box_ceiling(_mean_of(one, "cpu_ms_per_turn")),
        "load_average": [r["load_average"][0] for r in measured],
        "refused_prompts": sum(r["refused_prompts"] for r in measured),
        "lost_or_incomplete": sum(r["lost_or_incomplete"] for r in measured),
        "redis": cost,
        "rounds_detail": measured,
    }
