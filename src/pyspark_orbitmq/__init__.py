"""Auto-registration of the `orbitmq` Spark data source.

PySpark (4.x) imports every top-level module named `pyspark_*` on the Python path the first time a data
source is looked up, and registers its `DefaultSource` under `DefaultSource.name()`. So once orbitmq is
installed, `spark.read.format("orbitmq")` works with no `spark.dataSource.register(...)` call.
"""

from orbitmq.spark.source import OrbitDataSource as DefaultSource

__all__ = ["DefaultSource"]
