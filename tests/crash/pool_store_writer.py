"""Child process of the transient-store-pool crash test: appends messages through the write buffer (ASYNC
flush, pool of 2) and prints one line per acknowledged message until it is killed.

A group of 1-8 messages is appended, then committed (copied from the buffer to the segment file) and
flushed, and only then acknowledged: `ack <uniq key> <queue id> <queue offset> <physical offset>`. A kill
while a group is being appended loses that group's buffered, uncommitted messages (never acknowledged).
"""

from __future__ import annotations

import random
import sys

from orbitmq.message.hosts import pack_host
from orbitmq.message.property_string import encode_properties
from orbitmq.store import MessageStore, StoreConfig, StoreMessage


def main() -> int:
    root, run = sys.argv[1], sys.argv[2]
    config = StoreConfig(
        store_path_root_dir=root,
        mapped_file_size_commit_log=64 * 1024,
        mapped_file_size_consume_queue=100 * 20,
        max_hash_slot_num=64,
        max_index_num=300,
        transient_store_pool_enable=True,
        transient_store_pool_size=2,
    )
    store = MessageStore(config, store_host=("127.0.0.1", 10911))
    store.load()
    store.start()
    if not store.transient_store_pool_active:
        print("error pool inactive", flush=True)
        return 1
    print("ready", flush=True)
    rng = random.Random(run)
    born = pack_host("10.0.0.1", 1234)
    i = 0
    while True:
        group = []
        end = 0
        for _ in range(rng.randint(1, 8)):
            uniq = f"{run}-{i}"
            i += 1
            props = encode_properties({"UNIQ_KEY": uniq, "KEYS": f"k{i % 5}"})
            msg = StoreMessage("Crash", i % 4, 0, b"payload-%d-" % i * rng.randint(1, 60), props, 0, 1, born)
            r = store.put_message(msg)
            if not r.ok:
                print("error", r.status, flush=True)
                return 1
            group.append((uniq, msg.queue_id, r.queue_offset, r.wrote_offset))
            end = r.end_offset
        store.commit(thorough=True)
        if not store.wait_flushed(end, 10):
            print("error flush timeout", flush=True)
            return 1
        sys.stdout.write("".join(f"ack {u} {q} {qo} {phy}\n" for u, q, qo, phy in group))
        sys.stdout.flush()


if __name__ == "__main__":
    raise SystemExit(main())
