"""The clickstream example: producer -> Spark streaming job -> Parquet + results topic -> consumer."""
