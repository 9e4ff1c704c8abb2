"""`orbitmq admin watch -g GROUP [-t TOPIC]`: a live terminal view of a group's lag per queue and its
consume TPS (GET_CONSUME_STATS: the broker's one-minute window), refreshed every `--interval` s.

Without a terminal, or at the end, it prints the last snapshot as `consumerProgress` does (table or
`--json`), so scripts get the same shapes; `--count N` stops after N refreshes (0: until Ctrl-C).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

from orbitmq.admin.base import AdminError
from orbitmq.admin.registry import Report, command, non_negative_int
from orbitmq.admin.table import format_table
from orbitmq.admin.views import ConsumerProgress

if TYPE_CHECKING:
    from rich.table import Table

    from orbitmq.admin.api import AdminClient

HEADERS = ["#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Diff"]


def _args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-g", "--groupName", dest="group", required=True, help="consumer group")
    parser.add_argument("-t", "--topic", help="only this topic")
    parser.add_argument("-i", "--interval", type=float, default=2.0, help="seconds between refreshes")
    parser.add_argument(
        "--count", type=non_negative_int, default=0, help="stop after this many refreshes (0: until Ctrl-C)"
    )


def _rows(progress: ConsumerProgress) -> list[tuple[object, ...]]:
    return [
        (q.topic, q.broker_name, q.queue_id, q.broker_offset, q.consumer_offset, q.diff)
        for q in progress.queues
    ]


def _rich_table(progress: ConsumerProgress, history: list[int]) -> Table:
    from rich.table import Table
    from rich.text import Text

    spark = _sparkline(history)
    table = Table(
        title=Text(f"{progress.group}  lag {progress.diff_total}  {progress.consume_tps:.1f} msg/s  {spark}"),
        title_justify="left",
    )
    for i, header in enumerate(HEADERS):
        table.add_column(header.lstrip("#"), justify="right" if i >= 2 else "left")
    for row in _rows(progress):
        style = "bold red" if int(str(row[-1])) > 0 else None
        table.add_row(*(Text(str(c)) for c in row), style=style)
    return table


def _sparkline(values: list[int]) -> str:
    """The lag history as block characters (higher = more behind)."""
    if not values:
        return ""
    blocks = "▁▂▃▄▅▆▇█"
    top = max(values) or 1
    return "".join(blocks[min(len(blocks) - 1, v * (len(blocks) - 1) // top)] for v in values[-40:])


async def _progress(admin: AdminClient, group: str, topic: str | None) -> ConsumerProgress:
    try:
        return await admin.consumer_progress(group, topic)
    except AdminError:
        return ConsumerProgress(group, [], 0.0)


@command("watch", "live view of a group's lag per queue and consume TPS", _args)
async def watch(admin: AdminClient, args: argparse.Namespace) -> Report:
    history: list[int] = []
    progress = await _progress(admin, args.group, args.topic)
    history.append(progress.diff_total)
    live_view = sys.stdout.isatty() and not args.json
    refreshes = 1
    if live_view:
        from rich.live import Live

        with Live(_rich_table(progress, history), refresh_per_second=4, transient=True) as live:
            while args.count == 0 or refreshes < args.count:
                await asyncio.sleep(args.interval)
                progress = await _progress(admin, args.group, args.topic)
                history.append(progress.diff_total)
                live.update(_rich_table(progress, history))
                refreshes += 1
    else:
        while args.count == 0 or refreshes < args.count:
            await asyncio.sleep(args.interval)
            progress = await _progress(admin, args.group, args.topic)
            history.append(progress.diff_total)
            refreshes += 1
    text = format_table(HEADERS, _rows(progress))
    text += f"\n\nConsume TPS: {progress.consume_tps:.2f}\nDiff Total: {progress.diff_total}"
    data = progress.to_json()
    data["lagHistory"] = history
    return Report(text, data)
