"""Auto-registration of the `orbitmq-store` Spark data source (a broker's store directory, read offline).

See `pyspark_orbitmq`: PySpark registers the `DefaultSource` of every top-level `pyspark_*` module.
"""

from orbitmq.spark.store_source import StoreDataSource as DefaultSource

__all__ = ["DefaultSource"]
