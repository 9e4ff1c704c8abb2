"""`orbitmq bench store`: append, read and recovery throughput of MessageStore (a script, not a test).

Index and consume queues use RocketMQ's default sizes; the commit-log segment size is configurable.
What is measured: DESCRIPTION (the verb's --help).
"""

from __future__ import annotations

import argparse
import os
import shutil
import threading
import time
from collections.abc import Sequence

from orbitmq.message.batch import BatchEntry
from orbitmq.message.hosts import pack_host
from orbitmq.message.property_string import encode_properties
from orbitmq.store import MessageStore, StoreBatch, StoreConfig, StoreMessage

DESCRIPTION = """\
Store engine benchmark (a script, not a test): append, read and recovery throughput of MessageStore.

    orbitmq bench store [--messages 200000] [--body 1024] [--dir /tmp/orbitmq-store-bench]

Measures, with 1 KiB bodies by default:
- append, single puts, ASYNC_FLUSH (msgs/s, MB/s of records);
- append, batches of 32 (put_messages), ASYNC_FLUSH;
- append, SYNC_FLUSH with N concurrent writer threads each waiting for its own flush (group commit:
  reports messages per fdatasync);
- read: get_messages over every queue, 32 per pull (zero-copy views);
- recovery: load() after a clean shutdown, after a crash (abort file left), and after a crash that
  also lost every consume queue, index file and the checkpoint (full rebuild), per GiB of commit log.
Index and consume queues use RocketMQ's default sizes; the commit-log segment size is configurable.
"""


BORN = pack_host("10.0.0.1", 40000)
QUEUES = 8


def config(root: str, segment_mb: int, flush: str = "ASYNC_FLUSH") -> StoreConfig:
    return StoreConfig(
        store_path_root_dir=root,
        mapped_file_size_commit_log=segment_mb << 20,
        flush_disk_type=flush,
    )


def messages(n: int, body: bytes, start: int = 0) -> list[StoreMessage]:
    out = []
    for i in range(start, start + n):
        props = encode_properties(
            {"TAGS": "TagA", "KEYS": f"order-{i}", "UNIQ_KEY": f"0A0000010001AB12{i:016X}", "WAIT": "true"}
        )
        out.append(StoreMessage("BenchTopic", i % QUEUES, 0, body, props, 0, 1_700_000_000_000, BORN))
    return out


def fresh(root: str, segment_mb: int, flush: str = "ASYNC_FLUSH", *, index: bool = True) -> MessageStore:
    shutil.rmtree(root, ignore_errors=True)
    cfg = config(root, segment_mb, flush)
    cfg.message_index_enable = index
    store = MessageStore(cfg)
    store.load()
    store.start()
    return store


def report(label: str, count: int, nbytes: int, seconds: float, extra: str = "") -> None:
    print(f"{label:<44} {count / seconds:>10,.0f} msgs/s {nbytes / seconds / 1e6:>8.1f} MB/s {extra}")


def _timed_puts(store: MessageStore, n: int, body: bytes, label: str) -> None:
    msgs = messages(n, body)
    t = time.perf_counter()
    for m in msgs:
        store.put_message(m)
    report(label, n, store.get_max_phy_offset(), time.perf_counter() - t)


def bench_single(root: str, n: int, body: bytes, segment_mb: int) -> MessageStore:
    store = fresh(root, segment_mb)
    _timed_puts(store, n, body, "append single, ASYNC_FLUSH")
    return store


def bench_single_no_index(root: str, n: int, body: bytes, segment_mb: int) -> None:
    store = fresh(root, segment_mb, index=False)
    _timed_puts(store, n, body, "append single, ASYNC_FLUSH, index off")
    store.shutdown()


def bench_batch(root: str, n: int, body: bytes, segment_mb: int, size: int = 32) -> None:
    store = fresh(root, segment_mb)
    batches = []
    for b in range(n // size):
        entries = [
            BatchEntry(
                0,
                memoryview(body),
                encode_properties(
                    {"TAGS": "TagA", "KEYS": f"order-{b}-{j}", "UNIQ_KEY": f"0A0000010001AB12{b:08X}{j:08X}"}
                ),
            )
            for j in range(size)
        ]
        batches.append(StoreBatch("BenchTopic", b % QUEUES, 0, 1, BORN, entries, "CLUSTER\x01bench"))
    t = time.perf_counter()
    for batch in batches:
        store.put_messages(batch)
    dt = time.perf_counter() - t
    report(f"append batches of {size}, ASYNC_FLUSH", len(batches) * size, store.get_max_phy_offset(), dt)
    store.shutdown()


def bench_sync(root: str, n: int, body: bytes, segment_mb: int, writers: int) -> None:
    store = fresh(root, segment_mb, "SYNC_FLUSH")
    assert store.flusher is not None
    per = n // writers
    chunks = [messages(per, body, w * per) for w in range(writers)]
    rounds_before = store.flusher.flush_count
    failures = []

    def writer(msgs: list[StoreMessage]) -> None:
        for m in msgs:
            r = store.put_message(m)
            if not store.wait_flushed(r.end_offset, 10):
                failures.append(r)

    threads = [threading.Thread(target=writer, args=(c,)) for c in chunks]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    dt = time.perf_counter() - t
    rounds = store.flusher.flush_count - rounds_before
    total = per * writers
    report(
        f"append SYNC_FLUSH, {writers} waiting writers",
        total,
        store.get_max_phy_offset(),
        dt,
        f"({rounds} flush rounds, {total / max(rounds, 1):.1f} msgs/fdatasync, {len(failures)} timeouts)",
    )
    store.shutdown()


def bench_read(store: MessageStore) -> None:
    t = time.perf_counter()
    count = 0
    nbytes = 0
    for q in range(QUEUES):
        offset = 0
        while True:
            got = store.get_messages("bench", "BenchTopic", q, offset, 32, None)
            if not got.message_count:
                break
            count += got.message_count
            nbytes += got.buffer_total_size
            offset = got.next_begin_offset
    dt = time.perf_counter() - t
    report("read get_messages, 32 per pull", count, nbytes, dt)


def _timed_load(root: str, segment_mb: int, label: str, **overrides: object) -> None:
    cfg = config(root, segment_mb)
    for name, value in overrides.items():
        setattr(cfg, name, value)
    store = MessageStore(cfg)
    t = time.perf_counter()
    store.load()
    dt = time.perf_counter() - t
    log_bytes = store.get_max_phy_offset() - store.get_min_phy_offset()
    print(f"{label:<44} {dt:>8.2f} s for {log_bytes / 2**20:.0f} MiB ({dt / (log_bytes / 2**30):.1f} s/GiB)")
    store.start()
    store.abort()  # leaves the abort file: the next load is a crash recovery


def bench_recovery(root: str, segment_mb: int) -> None:
    # 1. After the clean shutdown of bench_single: CRC scan of the last 3 segments.
    _timed_load(root, segment_mb, "recovery after clean shutdown")
    # 2. After a crash (abort file present; checkpoint from the clean shutdown): CRC scan from the
    #    checkpoint's segment and re-dispatch from there (RocketMQ's abnormal recovery).
    _timed_load(root, segment_mb, "recovery after crash")
    # 3. After a crash with every derived file lost: full CRC scan + rebuild of all queues and the index.
    shutil.rmtree(os.path.join(root, "consumequeue"))
    shutil.rmtree(os.path.join(root, "index"))
    os.unlink(os.path.join(root, "checkpoint"))
    _timed_load(root, segment_mb, "crash, queues+index lost: full rebuild", message_index_safe=True)
    store = MessageStore(config(root, segment_mb))
    store.load()
    store.start()
    store.shutdown()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="orbitmq bench store",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--body", type=int, default=1024)
    parser.add_argument("--segment-mb", type=int, default=128)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--dir", default="/tmp/orbitmq-store-bench")
    args = parser.parse_args(argv)
    body = os.urandom(args.body)
    root = args.dir
    print(f"{args.messages} messages, {args.body}-byte bodies, {args.segment_mb} MiB segments, dir {root}")
    store = bench_single(root, args.messages, body, args.segment_mb)
    bench_read(store)
    store.shutdown()
    bench_recovery(root, args.segment_mb)
    bench_single_no_index(root + "-noindex", args.messages, body, args.segment_mb)
    bench_batch(root + "-batch", args.messages, body, args.segment_mb)
    bench_sync(root + "-sync", min(args.messages, 20_000), body, args.segment_mb, args.writers)
    bench_sync(root + "-sync1", min(args.messages, 5_000), body, args.segment_mb, 1)
    for suffix in ("", "-noindex", "-batch", "-sync", "-sync1"):
        shutil.rmtree(root + suffix, ignore_errors=True)


if __name__ == "__main__":
    main()
