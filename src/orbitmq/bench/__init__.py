"""orbitmq.bench: the `orbitmq bench` verb (BENCHMARKS.md workloads, peers in the same run).

cli -> runner -> workloads / server_workloads (written against driver.Driver) -> drivers (client,
raw, peer_drivers/); single-component benchmarks are verbs too (`orbitmq bench codec|store|...`).
Nothing in orbitmq imports this package.
"""
