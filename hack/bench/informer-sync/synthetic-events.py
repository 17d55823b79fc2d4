#!/usr/bin/env python3
"""Writes N watch events (one JSON line each) of ConfigMaps shaped as informer-sync's
populate makes them (4 labels, 2 annotations, 4 data keys of 256 bytes, and the
managedFields entry the API server adds), for `decode-bench FILE 1 retained` without a
control plane. The heap figures match a recorded stream's (docs/benchmarks.md).

    python3 hack/bench/informer-sync/synthetic-events.py 2000 > /tmp/events.jsonl
"""
import json
import sys

MASK = 2**64 - 1


def filler(i, key):
    # The same xorshift filler as src/main.rs's config_map.
    x = ((i * 0x9E3779B97F4A7C15) & MASK) ^ (key + 1)
    s = ""
    while len(s) < 256:
        x ^= (x << 13) & MASK
        x ^= x >> 7
        x ^= (x << 17) & MASK
        s += "%016x" % x
    return s


def fields_v1():
    leaves = lambda *keys: {".": {}, **{f"f:{k}": {} for k in keys}}
    return {
        "f:data": leaves("application.properties", "endpoints.txt", "feature-flags.json", "logging.yaml"),
        "f:metadata": {
            "f:annotations": leaves("bench.example.com/description", "bench.example.com/owner"),
            "f:labels": leaves("app.kubernetes.io/component", "app.kubernetes.io/name",
                               "bench.example.com/index", "bench.example.com/parity"),
        },
    }


def config_map(i):
    return {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {
            "name": "cm-%06d" % i,
            "namespace": "informer-sync-bench",
            "uid": "0b0c6a8e-5f7e-4c1e-9d7a-%012d" % i,
            "resourceVersion": str(100000 + i),
            "creationTimestamp": "2026-11-27T10:00:00Z",
            "labels": {
                "app.kubernetes.io/component": "shard-%d" % (i % 16),
                "app.kubernetes.io/name": "informer-sync-bench",
                "bench.example.com/index": str(i),
                "bench.example.com/parity": "even" if i % 2 == 0 else "odd",
            },
            "annotations": {
                "bench.example.com/description": "ConfigMap number %d of the informer initial-sync benchmark" % i,
                "bench.example.com/owner": "team-platform@example.com",
            },
            "managedFields": [{
                "manager": "informer-sync-bench",
                "operation": "Update",
                "apiVersion": "v1",
                "time": "2026-11-27T10:00:00Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": fields_v1(),
            }],
        },
        "data": {
            "application.properties": filler(i, 0),
            "logging.yaml": filler(i, 1),
            "feature-flags.json": filler(i, 2),
            "endpoints.txt": filler(i, 3),
        },
    }


for i in range(int(sys.argv[1]) if len(sys.argv) > 1 else 2000):
    print(json.dumps({"type": "ADDED", "object": config_map(i)}, separators=(",", ":")))
