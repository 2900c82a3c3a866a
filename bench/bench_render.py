"""Rendering benchmark: time, object sizes and memory for jobs of 10 to 2,000 replicas.

    python bench/bench_render.py [--repeat N]

Prints figures; asserts nothing. The job is 1 learner, N-2 collectors and 1 evaluator. For scale,
the same run also times the naive shape (one Hera container template per replica, the node list
copied into each) that this design avoids.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from hera.workflows import DAG, Container, Env, Workflow

from dihera import load_job, render
from dihera.experiment import dijob, task

SIZES = (10, 100, 1000, 2000)


def job_manifest(replicas: int) -> dict[str, Any]:
    return dijob(
        "bench",
        [
            task("learner", image="ding:1", command=["ditask"]),
            task("collector", replicas=replicas - 2, image="ding:1", command=["ditask"]),
            task("evaluator", image="ding:1", command=["ditask"]),
        ],
    ).to_manifest()


def naive_workflow(replicas: int) -> dict[str, Any]:
    nodes = ",".join(f"bench-r-{i}.di-bench.default.svc.cluster.local" for i in range(replicas))
    with Workflow(name="bench", entrypoint="dag") as wf:
        containers = [
            Container(
                name=f"r-{i}",
                image="ding:1",
                command=["ditask"],
                env=[Env(name="DI_RANK", value=str(i)), Env(name="DI_NODES", value=nodes)],
            )
            for i in range(replicas)
        ]
        with DAG(name="dag"):
            for c in containers:
                c()
    return wf.to_dict()


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def peak_kib(fn: Callable[[], Any]) -> float:
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    render(load_job(job_manifest(10)))  # warm imports and caches
    print(
        f"{'replicas':>8} {'validate+render':>16} {'per replica':>12} {'Workflow':>10} {'ConfigMap':>10} "
        f"{'peak mem':>10} {'naive render':>13} {'naive size':>11} {'speed-up':>9}"
    )
    for n in SIZES:
        manifest = job_manifest(n)
        seconds, rendered = timed(lambda m=manifest: render(load_job(m)), args.repeat)
        sizes = {o["kind"]: len(json.dumps(o, separators=(",", ":"))) for o in rendered.objects()}
        mem = peak_kib(lambda m=manifest: render(load_job(m)))
        naive_s, naive = timed(lambda n=n: naive_workflow(n), 1 if n > 100 else args.repeat)
        naive_size = len(json.dumps(naive, separators=(",", ":")))
        print(
            f"{n:>8} {seconds * 1000:>13.1f} ms {seconds / n * 1e6:>9.1f} us "
            f"{sizes['Workflow'] / 1024:>7.0f} KiB {sizes['ConfigMap'] / 1024:>6.0f} KiB "
            f"{mem / 1024:>6.1f} MiB {naive_s * 1000:>10.0f} ms {naive_size / 1024:>7.0f} KiB "
            f"{naive_s / seconds:>8.1f}x"
        )
    print("object limit: 1,536 KiB (etcd request); target: every object well under 1 MiB, 1,000 replicas < 1 s")


if __name__ == "__main__":
    main()
