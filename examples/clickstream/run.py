"""One command for the whole clickstream pipeline, against a running `orbitmq serve`:

    orbitmq serve &                               # name server on 127.0.0.1:9876 + a broker
    python -m examples.clickstream.run --seconds 60

It creates the topics, starts the click producer, the Spark streaming job and the results consumer,
runs for `--seconds`, stops everything and prints the final per-minute counts read back from Parquet.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from examples.clickstream.consumer import start_printer
from examples.clickstream.job import start_job
from examples.clickstream.producer import produce_clicks
from examples.clickstream.topics import ensure_topics


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--namesrv", default="127.0.0.1:9876", help="name server address (default %(default)s)"
    )
    parser.add_argument("--seconds", type=int, default=60, help="how long to run (default %(default)s)")
    parser.add_argument("--out", help="output directory (default: a new temporary directory)")
    parser.add_argument("--rate", type=int, default=50, help="clicks per second (default %(default)s)")
    args = parser.parse_args(argv)
    out = Path(args.out or tempfile.mkdtemp(prefix="clickstream-"))

    brokers = ensure_topics(args.namesrv)
    print(f"topics ready on {', '.join(brokers)}; output in {out}", flush=True)

    # Spark's Python workers must run this interpreter (the one with orbitmq and pyarrow installed).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("orbitmq-clickstream")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")

    stop = threading.Event()
    produced: list[int] = []
    producer = threading.Thread(
        target=lambda: produced.append(produce_clicks(args.namesrv, stop, per_second=args.rate))
    )
    producer.start()
    printer = start_printer(args.namesrv)
    query = start_job(spark, args.namesrv, out)
    print("pipeline running: producer -> Spark job -> Parquet + click_counts -> printer", flush=True)
    try:
        time.sleep(args.seconds)
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        producer.join()
        time.sleep(2)
        query.processAllAvailable()
        query.stop()
        printer.shutdown()

    counts = spark.read.parquet(str(out / "counts"))
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    latest = Window.partitionBy("minute", "page").orderBy(F.col("batch_id").desc())
    final = counts.withColumn("rank", F.row_number().over(latest)).where("rank = 1").drop("rank", "batch_id")
    print(f"\nproduced {produced[0] if produced else 0} clicks; final per-minute counts:", flush=True)
    final.orderBy("minute", "page").show(100, truncate=False)
    total = final.agg(F.sum("count")).first()[0] or 0
    print(f"counted {total} clicks in Parquet under {out / 'counts'}")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
