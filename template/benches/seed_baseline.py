"""Python baselines for `cargo bench --bench inbox`, measured in the same run.

The seed article's consumer was Python + SQLite. This script re-creates
its two reference points so that the Rust numbers can be quoted as ratios
taken on the same machine at the same time:

* `parallel`: one iteration creates a fresh database, then 4 threads, each
  with its own connection, deliver the same 50 debits through an
  insert-first inbox (BEGIN IMMEDIATE, WAL, synchronous=NORMAL); the
  balance is checked and everything closed. Milliseconds per iteration.
* `loop`: one connection, one transaction per delivery, no parsing;
  deliveries per second.

Prints one JSON object.
Usage: python3 seed_baseline.py ITERATIONS DELIVERIES [PARALLEL_FOLDER [LOOP_FOLDER]]
(where the databases go; the benchmark passes the folders its own
measurements use, so both sides pay the same storage costs.)
"""

import json
import os
import sqlite3
import statistics
import sys
import tempfile
import threading
import time

SCHEMA = """
CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL);
INSERT INTO accounts VALUES (1, 1000);
CREATE TABLE inbox (consumer TEXT NOT NULL, message_id TEXT NOT NULL,
                    received_at REAL NOT NULL, PRIMARY KEY (consumer, message_id));
"""


def connect(path):
    db = sqlite3.connect(path, isolation_level=None, timeout=10, check_same_thread=False)
    db.execute("PRAGMA synchronous=NORMAL")
    return db


def deliver(db, message_id):
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("INSERT INTO inbox VALUES ('debit', ?, ?)", (message_id, time.time()))
        db.execute("UPDATE accounts SET balance = balance - 10 WHERE id = 1")
        db.execute("COMMIT")
    except sqlite3.IntegrityError:
        db.execute("ROLLBACK")


def parallel_iteration(folder, n):
    start = time.perf_counter()
    path = os.path.join(folder, f"p{n}.db")
    setup = connect(path)
    setup.execute("PRAGMA journal_mode=WAL")
    setup.executescript(SCHEMA)
    connections = [connect(path) for _ in range(4)]
    barrier = threading.Barrier(4)

    def worker(db):
        barrier.wait()
        for i in range(50):
            deliver(db, f"m{i}")

    threads = [threading.Thread(target=worker, args=(db,)) for db in connections]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert setup.execute("SELECT balance FROM accounts").fetchone()[0] == 500
    for db in connections + [setup]:
        db.close()
    return time.perf_counter() - start


def loop(folder, deliveries):
    db = connect(os.path.join(folder, "loop.db"))
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript(SCHEMA)
    start = time.perf_counter()
    for i in range(deliveries):
        deliver(db, f"m{i}")
    return deliveries / (time.perf_counter() - start)


def main():
    iterations, deliveries = int(sys.argv[1]), int(sys.argv[2])
    parallel_parent = sys.argv[3] if len(sys.argv) > 3 else None
    loop_parent = sys.argv[4] if len(sys.argv) > 4 else parallel_parent
    with tempfile.TemporaryDirectory(dir=parallel_parent) as folder:
        times = sorted(parallel_iteration(folder, n) for n in range(iterations))
    with tempfile.TemporaryDirectory(dir=loop_parent) as folder:
        rate = loop(folder, deliveries)
    print(json.dumps({
        "parallel_median_ms": statistics.median(times) * 1000,
        "parallel_p99_ms": times[int(len(times) * 0.99) - 1] * 1000,
        "loop_per_second": rate,
    }))


if __name__ == "__main__":
    main()
