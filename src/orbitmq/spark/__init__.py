"""orbitmq for Apache Spark: the `orbitmq` and `orbitmq-store` PySpark data sources (README.md here).

Both formats register themselves (PySpark imports the installed `pyspark_orbitmq` and
`pyspark_orbitmq_store` packages). Importing this package does not import pyspark; the data source
modules do (source, sink, store_source; the pure helpers offsets, planning, options need neither).
"""
