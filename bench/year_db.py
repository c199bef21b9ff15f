#!/usr/bin/env python3
"""A history of many nights, written straight into ralphd's database (bench/run.sh scale).
Standard library only.

    year_db.py DB OUTPUT_DIR --loops N [--days D] [--last-day] [--queued Q] [--now MS]

DB is a database that ralphd made (at its schema) and that holds one loop ralphd ran to its end,
the seed: its spec, workspace, agent and argv are what every loop written here has. The seed's
rows and output file are replaced by:

- N loops, created at an even pace over the D days (default 365) that end at --now (default: the
  current time), ids in creation order. A loop has 1 to 19 attempts (10 on average; one loop in
  five retries every iteration once), each 20 s to 5 min long and 2 s after the one before, with
  tokens, cost, a summary, git heads and diff stats; two output chunks of 60 to 300 bytes per
  attempt (its file under OUTPUT_DIR has exactly those bytes: text lines) and two events per
  attempt. Loops end completed (60%), exhausted (20%), failed (10%), cancelled (5%) or stalled
  (5%); the few whose attempts would still run at --now are paused, with the attempts that ended
  before it. Everything is a function of the loop's index and --now: two databases made with the
  same --loops, --days and --now hold the same loops where their days overlap.
- --last-day: of those loops, only the ones created in the last 24 hours (the "one day"
  database of a year's history: the same last day, ids from 1).
- --queued Q: Q more loops, queued, with no attempt, submitted in the last hour.
Every database made here has its scheduler paused (the settings' "scheduler"): nothing in it starts
before the benchmark says so.

100,000 loops (1,000,000 attempts, 2,000,000 chunks and events) take about half a minute here.
Prints one line: the counts, the size of the database and of the output files.
"""

import argparse
import concurrent.futures
import json
import os
import sqlite3
import sys
import time

DAY_MS = 24 * 3600 * 1000
# A hash of the loop's index (and more), as SQL: deterministic pseudo-random numbers in [0, 2^31).
H = "((({0}) * 2654435761 + {1} * 40503) % 2147483647)"


def h(expr, salt):
    return H.format(expr, salt)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("output_dir")
    parser.add_argument("--loops", type=int, required=True)
    parser.add_argument("--days", type=float, default=365)
    parser.add_argument("--last-day", action="store_true")
    parser.add_argument("--queued", type=int, default=0)
    parser.add_argument("--now", type=int, default=int(time.time() * 1000))
    args = parser.parse_args()

    t0 = time.monotonic()
    db = sqlite3.connect(args.db, isolation_level=None)
    (seed_id, spec, workspace, agent, name), = db.execute(
        "SELECT id, spec, workspace, agent, name FROM loops ORDER BY id LIMIT 1")
    (argv,), = db.execute("SELECT argv FROM attempts WHERE loop_id = ?", (seed_id,))
    # Written straight into the database file: no WAL of the whole history, no syncs.
    db.execute("PRAGMA journal_mode = DELETE")
    db.execute("PRAGMA synchronous = OFF")
    db.execute("PRAGMA cache_size = -262144")
    db.execute("PRAGMA temp_store = MEMORY")  # the indexes are sorted in memory, not in files
    db.execute("BEGIN")
    for table in ("events", "output_chunks", "steering", "attempts", "loops"):
        db.execute("DELETE FROM %s" % table)
    try:
        os.remove(os.path.join(args.output_dir, "%d.log" % seed_id))
    except FileNotFoundError:
        pass

    # The indexes are made again after the rows (one sort each instead of a row at a time) and the
    # aggregates the triggers keep summed once, as the migration that made them did.
    schema = db.execute("SELECT type, name, sql FROM sqlite_master WHERE type IN ('index', "
                        "'trigger') AND sql IS NOT NULL").fetchall()
    for kind, name, _ in schema:
        db.execute("DROP %s %s" % (kind.upper(), name))
    if args.loops > 0:
        add_history(db, args, argv, spec, workspace, agent)
    (next_id,), = db.execute("SELECT coalesce(max(id), 0) + 1 FROM loops")
    if args.queued:
        db.execute(
            "WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < ? - 1) "
            "INSERT INTO loops (id, name, workspace, agent, max_iterations, min_iterations, "
            "priority, spec, state, created_at, updated_at) "
            "SELECT ? + i, 'queued-' || i, ?, ?, 20, 1, 0, ?, 'queued', ? + i * 300, ? + i * 300 "
            "FROM k", (args.queued, next_id, workspace, agent, spec, args.now - 3600 * 1000,
                       args.now - 3600 * 1000))
    for _, _, sql in schema:
        db.execute(sql)
    sum_aggregates(db)
    db.execute("INSERT OR REPLACE INTO settings (key, value) VALUES ('scheduler', ?)",
               (json.dumps({"max_concurrent": 1, "paused": True, "window": ""}),))
    db.execute("COMMIT")
    db.execute("PRAGMA journal_mode = WAL")
    generated = time.monotonic()

    # The output files: each loop's chunks, as text lines (four threads: most of it is system
    # calls, which run without the interpreter's lock).
    line = b"agent: working on the next item of the backlog, running the tests, all green so far\n"
    block = line * 64
    os.makedirs(args.output_dir, exist_ok=True)
    sizes = db.execute("SELECT id, output_bytes FROM loops WHERE output_bytes > 0").fetchall()

    def write(some):
        for loop_id, size in some:
            fd = os.open(os.path.join(args.output_dir, "%d.log" % loop_id),
                         os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.write(fd, (block * (size // len(block) + 1))[:size])
            os.close(fd)

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(write, [sizes[i::4] for i in range(4)]))
    files, file_bytes = len(sizes), sum(size for _, size in sizes)
    counts = {table: db.execute("SELECT count(*) FROM %s" % table).fetchone()[0]
              for table in ("loops", "attempts", "output_chunks", "events")}
    db.close()
    used = os.times()
    with open("/proc/self/schedstat") as f:
        waited = int(f.read().split()[1]) / 1e9  # for a CPU, this thread
    print("%s: %s; %.0f MiB database, %d output files of %.0f MiB; %.1f s (rows %.1f s; CPU "
          "%.1f s, %.1f s of it waiting for a CPU)"
          % (os.path.basename(args.db), ", ".join("%d %s" % (n, t) for t, n in counts.items()),
             os.path.getsize(args.db) / 2**20, files, file_bytes / 2**20,
             time.monotonic() - t0, generated - t0, used.user + used.system, waited))


def sum_aggregates(db):
    """What the triggers of schema 14 keep (daemon/store/migrations.cpp), summed from the rows."""
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "loop_counts" in tables:
        db.execute("DELETE FROM loop_counts")
        db.execute("INSERT INTO loop_counts SELECT state, count(*) FROM loops GROUP BY state")
    if "attempt_use" in tables:
        db.execute("DELETE FROM attempt_use")
        for span in (60000, 3600000):
            db.execute("INSERT INTO attempt_use SELECT ?1, started_at / ?1, count(*), "
                       "sum(input_tokens + output_tokens), total(cost_usd) FROM attempts "
                       "GROUP BY 2", (span,))


def add_history(db, args, argv, spec, workspace, agent):
    """The loops of the history, their attempts, output chunks and events."""
    span = int(args.days * DAY_MS)
    first_ms = args.now - span
    step = span / args.loops
    # The loops by index i: their creation time, the length of their attempts (dur) and of their
    # output chunks (clen), how many attempts they have (n) and whether they retry (pairs).
    db.execute("CREATE TEMP TABLE gen (i INTEGER PRIMARY KEY, created INTEGER, dur INTEGER, "
               "clen INTEGER, n INTEGER, pairs INTEGER, fate INTEGER)")
    db.execute(
        "WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < ? - 1) "
        "INSERT INTO gen SELECT i, ? + CAST(i * ? AS INTEGER) + %s %% CAST(? AS INTEGER), "
        "20000 + %s %% 280000, 60 + %s %% 240, 1 + %s %% 19, %s %% 5 = 0, %s %% 100 FROM k"
        % (h("i", 1), h("i", 2), h("i", 3), h("i", 4), h("i", 5), h("i", 6)),
        (args.loops, first_ms, step, max(1, step / 2)))
    if args.last_day:
        db.execute("DELETE FROM gen WHERE created < ?", (args.now - DAY_MS,))
    (base,), = db.execute("SELECT min(i) FROM gen")
    base = base or 0
    db.execute("CREATE TEMP TABLE seq (j INTEGER PRIMARY KEY)")
    db.executemany("INSERT INTO seq VALUES (?)", [(j,) for j in range(19)])

    # Attempts: the j-th starts 2 s after the slot of the one before; a loop that retries has its
    # attempts in pairs (a transient failure, then the iteration's success).
    started = "(g.created + 1000 + s.j * (g.dur + 2000))"
    ended = "(%s + g.dur - %s %% (g.dur / 2))" % (started, h("g.i * 19 + s.j", 7))
    retry = "(g.pairs AND s.j % 2 = 0)"
    db.execute(
        "INSERT INTO attempts (loop_id, iteration, attempt, argv, pid, process_start_time, "
        "started_at, ended_at, termination, exit_code, completion_signal, output_start, "
        "output_end, failure, input_tokens, output_tokens, cost_usd, turns, tool_calls, summary, "
        "head_before, head_after, files_changed, insertions, deletions, progress, agent, model, "
        "kind) "
        "SELECT g.i + 1 - ?, CASE WHEN g.pairs THEN s.j / 2 + 1 ELSE "
        "s.j + 1 END, CASE WHEN g.pairs THEN s.j %% 2 + 1 ELSE 1 END, ?, 4000 + %s %% 60000, "
        "%s, %s, %s, CASE WHEN %s THEN 'failed' ELSE 'exited' END, %s, "
        "0, 2 * s.j * g.clen, (2 * s.j + 2) * g.clen, CASE WHEN %s THEN 'transient' ELSE '' END, "
        "2000 + %s %% 60000, 200 + %s %% 6000, (%s %% 5000) / 100000.0, 1 + %s %% 30, %s %% 40, "
        "'Iteration ' || (s.j + 1) || ': implemented the next item of the backlog, ran the tests "
        "and updated the notes; ' || (%s %% 9) || ' items left.', "
        "printf('%%016x%%016x%%08x', %s, %s, %s %% 65536), "
        "printf('%%016x%%016x%%08x', %s, %s, %s %% 65536), "
        "%s %% 12, %s %% 400, %s %% 150, 1, ?, '', 'work' "
        "FROM gen g JOIN seq s ON s.j < g.n WHERE %s < ? ORDER BY g.i, s.j"
        % (h("g.i * 19 + s.j", 8), h("g.i * 19 + s.j", 9), started, ended, retry,
           "CASE WHEN %s THEN 1 ELSE 0 END" % retry, retry,
           h("g.i * 19 + s.j", 10), h("g.i * 19 + s.j", 11), h("g.i * 19 + s.j", 12),
           h("g.i * 19 + s.j", 13), h("g.i * 19 + s.j", 14), h("g.i * 19 + s.j", 15),
           h("g.i * 19 + s.j", 16), h("g.i * 19 + s.j", 17), h("g.i * 19 + s.j", 18),
           h("g.i * 19 + s.j + 1", 16), h("g.i * 19 + s.j + 1", 17), h("g.i * 19 + s.j + 1", 18),
           h("g.i * 19 + s.j", 19), h("g.i * 19 + s.j", 20), h("g.i * 19 + s.j", 21), ended),
        (base, argv, agent, args.now))
    # Two chunks and two events per attempt.
    db.execute(
        "INSERT INTO output_chunks (loop_id, offset, length, attempt_id, stream, ts) "
        "SELECT a.loop_id, a.output_start + c.j * g.clen, g.clen, a.id, "
        "CASE WHEN c.j = 1 AND a.failure != '' THEN 'stderr' ELSE 'stdout' END, "
        "a.started_at + c.j * 1000 "
        "FROM attempts a JOIN gen g ON g.i = a.loop_id - 1 + ? JOIN seq c ON c.j < 2 "
        "ORDER BY a.loop_id, a.id, c.j", (base,))
    db.execute(
        "INSERT INTO events (loop_id, attempt_id, ts, kind, tool, text) "
        "SELECT a.loop_id, a.id, a.started_at + 500 + c.j * 1000, "
        "CASE c.j WHEN 0 THEN 'text' ELSE 'tool_use' END, CASE c.j WHEN 0 THEN '' ELSE 'Bash' END, "
        "CASE c.j WHEN 0 THEN 'Looking at the backlog: the next unchecked item is number ' || "
        "a.iteration || '.' ELSE 'make test 2>&1 | tail -20' END "
        "FROM attempts a JOIN seq c ON c.j < 2 ORDER BY a.id, c.j")

    # The loops, with their counters and sums from their attempts; the end state by their fate.
    states = ("CASE WHEN g.fate < 60 THEN 'completed' WHEN g.fate < 80 THEN 'exhausted' "
              "WHEN g.fate < 90 THEN 'failed' WHEN g.fate < 95 THEN 'cancelled' ELSE 'stalled' END")
    reasons = ("CASE WHEN g.fate < 60 THEN 'completion signal' WHEN g.fate < 80 THEN "
               "'reached max_iterations' WHEN g.fate < 90 THEN 'agent failed 4 times' WHEN "
               "g.fate < 95 THEN 'cancelled' ELSE '3 iterations without progress' END")
    # When the last attempt ended (the attempts' own formula, for j = n - 1): no index to look
    # it up with while the rows are written.
    last_start = "(g.created + 1000 + (g.n - 1) * (g.dur + 2000))"
    last_end = "(%s + g.dur - %s %% (g.dur / 2))" % (last_start, h("g.i * 19 + g.n - 1", 7))
    running_past_now = ("(g.created + 1000 + (g.n - 1) * (g.dur + 2000) + g.dur >= ?2)")
    db.execute(
        "INSERT INTO loops (id, name, workspace, agent, max_iterations, min_iterations, priority, "
        "spec, state, stop_reason, created_at, started_at, finished_at, updated_at, output_bytes) "
        "SELECT g.i + 1 - ?1, 'night-' || g.i, ?3, ?4, 20, 1, 0, ?5, "
        "CASE WHEN %s THEN 'paused' ELSE %s END, CASE WHEN %s THEN 'paused' ELSE %s END, "
        "g.created, g.created + 1000, CASE WHEN %s THEN 0 ELSE %s + 1000 END, "
        "CASE WHEN %s THEN g.created ELSE %s END + 1000, 0 FROM gen g ORDER BY g.i"
        % (running_past_now, states, running_past_now, reasons, running_past_now, last_end,
           running_past_now, last_end),
        (base, args.now, workspace, agent, spec))
    db.execute(
        "UPDATE loops SET iterations = s.iterations, attempts = s.attempts, retries = s.retries, "
        "output_bytes = s.output_end, input_tokens = s.input_tokens, "
        "output_tokens = s.output_tokens, cost_usd = s.cost_usd, turns = s.turns, "
        "tool_calls = s.tool_calls "
        "FROM (SELECT loop_id, max(iteration) AS iterations, count(*) AS attempts, "
        "sum(attempt > 1) AS retries, max(output_end) AS output_end, "
        "sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, "
        "sum(cost_usd) AS cost_usd, sum(turns) AS turns, sum(tool_calls) AS tool_calls "
        "FROM attempts GROUP BY loop_id) AS s WHERE loops.id = s.loop_id")


if __name__ == "__main__":
    sys.exit(main())
