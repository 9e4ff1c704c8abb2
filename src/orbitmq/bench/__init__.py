"""orbitmq.bench: the `orbitmq bench` verb (BENCHMARKS.md workloads, peers in the same run).

cli (the verb; options: its flags; runner: the run order) -> workloads / server_workloads (W1-W5,
W8-W10, written against driver.Driver) -> drivers (client_driver: orbitmq's client; raw_driver: raw
remoting requests; peer_drivers/: NATS and Redis, loaded by peers). Pure helpers: stats, cpu,
ratelimit, result, table, progress.
Single-component benchmarks, run as `orbitmq bench codec|store|broker-smoke|spark [ARGS]`:
codec_bench, store_bench, broker_smoke, spark_bench (W7 runs spark_bench as a subprocess).
Nothing in orbitmq imports this package.
"""
