"""The peer drivers `orbitmq bench --peers` loads (orbitmq.bench.peers): NATS JetStream and Redis Streams.

Each drives a third-party server and its Python client (the `bench` extra); the servers themselves come
from Debian packages (bench/peers/install.sh in a source checkout).
"""
