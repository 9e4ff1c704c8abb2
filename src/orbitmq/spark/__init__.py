"""orbitmq for Apache Spark: the `orbitmq` and `orbitmq-store` PySpark data sources (README.md here).

    spark.read.format("orbitmq").option("namesrv", "127.0.0.1:9876").option("topic", "t").load()
    spark.readStream.format("orbitmq")...
    df.write.format("orbitmq")...;  df.writeStream.format("orbitmq")...
    spark.read.format("orbitmq-store").option("path", "/path/to/store").load()

Both formats register themselves (PySpark imports the installed `pyspark_orbitmq` and
`pyspark_orbitmq_store` packages). Modules:

- `source`: the DataSource with the batch and stream readers; `sink`: the Arrow writers.
- `store_source`: commit-log segments of a store directory, read without a broker.
- `offsets`, `planning`, `options`: the pure offset model, planning arithmetic and option parsing.
- `arrow_records`: message records decoded straight into Arrow batches.
- `broker_access`, `cluster_view`, `range_reader`: talking to the cluster (driver and executors).

Importing this package does not import pyspark; the data source modules do.
"""
