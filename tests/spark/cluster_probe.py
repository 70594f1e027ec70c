"""Run by test_cluster.py in a fresh interpreter (the driver): plan on a standalone Spark master and report
where the executors found our code. Usage: cluster_probe.py MASTER INPUT.json OUT_DIR

INPUT: {"cases": [{"seed": N, "specs": [[name, partitions, rf], ...], "brokers": [[id, rack_or_null], ...]}]}
Writes OUT_DIR/report.json ({"executors": [...], "python_exec": ..., "texts": [...]}) and, per case i,
OUT_DIR/proposed-i.json (the out_path mode). One SparkContext for all cases.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def where(_: Any) -> list[dict[str, Any]]:
    import reassign_cli.planning.plan
    import reassign_cli.spark.engine

    return [
        {
            "cwd": os.getcwd(),
            "plan_file": reassign_cli.planning.plan.__file__,
            "engine_file": reassign_cli.spark.engine.__file__,
            "executable": sys.executable,
            "no_site": sys.flags.no_site,
            "version": list(sys.version_info[:2]),
        }
    ]


def main() -> None:
    from reassign_cli.core import model
    from reassign_cli.planning import plan
    from reassign_cli.spark import engine as spark_engine

    master, inp, out_dir = sys.argv[1:4]
    with open(inp) as f:
        d = json.load(f)
    with spark_engine.spark_context(master) as sc:
        executors = sc.parallelize(range(4), 4).mapPartitions(where).collect()
        texts = []
        for i, case in enumerate(d["cases"]):
            specs = [plan.TopicSpec(n, p, rf) for n, p, rf in case["specs"]]
            brokers = [model.Broker(b, r) for b, r in case["brokers"]]
            texts.append(spark_engine.proposed_json(specs, brokers, case["seed"], master=master))
            out_path = os.path.join(out_dir, f"proposed-{i}.json")
            spark_engine.proposed_json(specs, brokers, case["seed"], master=master, out_path=out_path)
        report = {"executors": executors, "python_exec": sc.pythonExec, "master": sc.master, "texts": texts}
    with open(os.path.join(out_dir, "report.json"), "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main()
