// Versioned schema migrations. migrations[i] takes the schema from version i to i+1; the
// version is PRAGMA user_version. Never edit a released migration: add a new one.
#include "daemon/store/migrations.hpp"

namespace ralph {

const std::vector<migration>& schema_migrations() {
    static const std::vector<migration> migrations = {
        // 0 → 1: loops, attempts, output index.
        R"sql(
CREATE TABLE loops (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    workspace TEXT NOT NULL,
    agent TEXT NOT NULL,
    max_iterations INTEGER NOT NULL,
    min_iterations INTEGER NOT NULL,
    priority INTEGER NOT NULL,
    spec TEXT NOT NULL,                  -- the submitted parameters, JSON
    state TEXT NOT NULL,
    stop_reason TEXT NOT NULL DEFAULT '',
    iterations INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    retries INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,         -- epoch ms
    started_at INTEGER NOT NULL DEFAULT 0,
    finished_at INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL,
    resume_at INTEGER NOT NULL DEFAULT 0,
    output_bytes INTEGER NOT NULL DEFAULT 0  -- committed end of the loop's output file
);
CREATE INDEX loops_by_state ON loops (state, priority DESC, id);

CREATE TABLE attempts (
    id INTEGER PRIMARY KEY,
    loop_id INTEGER NOT NULL REFERENCES loops (id) ON DELETE CASCADE,
    iteration INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    argv TEXT NOT NULL,                  -- JSON array
    pid INTEGER NOT NULL DEFAULT 0,      -- also the process group id
    process_start_time INTEGER NOT NULL DEFAULT 0,
    started_at INTEGER NOT NULL,
    ended_at INTEGER NOT NULL DEFAULT 0,
    termination TEXT NOT NULL DEFAULT 'running',
    exit_code INTEGER,
    signal INTEGER,
    completion_signal INTEGER NOT NULL DEFAULT 0,
    error TEXT NOT NULL DEFAULT '',
    output_start INTEGER NOT NULL DEFAULT 0,
    output_end INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX attempts_by_loop ON attempts (loop_id, id);

CREATE TABLE output_chunks (
    loop_id INTEGER NOT NULL REFERENCES loops (id) ON DELETE CASCADE,
    offset INTEGER NOT NULL,
    length INTEGER NOT NULL,
    attempt_id INTEGER NOT NULL,
    stream TEXT NOT NULL,                -- stdout, stderr, recovered
    ts INTEGER NOT NULL,                 -- epoch ms of the first byte
    PRIMARY KEY (loop_id, offset)
) WITHOUT ROWID;
)sql",
        // 1 → 2: what the agents said (README, "Failures"): per-attempt failure class, tokens,
        // cost, turns,
        // tool calls and summary, their sums per loop, the events of every attempt's stream, and
        // the agents held by a usage limit until a reset.
        R"sql(
ALTER TABLE attempts ADD COLUMN failure TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN cost_usd REAL;        -- NULL: the agent reported none
ALTER TABLE attempts ADD COLUMN turns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN tool_calls INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN summary TEXT NOT NULL DEFAULT '';
ALTER TABLE loops ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE loops ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE loops ADD COLUMN cost_usd REAL;
ALTER TABLE loops ADD COLUMN turns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE loops ADD COLUMN tool_calls INTEGER NOT NULL DEFAULT 0;

CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    loop_id INTEGER NOT NULL REFERENCES loops (id) ON DELETE CASCADE,
    attempt_id INTEGER NOT NULL REFERENCES attempts (id) ON DELETE CASCADE,
    ts INTEGER NOT NULL,                 -- epoch ms
    kind TEXT NOT NULL,                  -- common/agent_stream event kinds
    tool TEXT NOT NULL DEFAULT '',
    text TEXT NOT NULL
);
CREATE INDEX events_by_loop ON events (loop_id, id);
CREATE INDEX events_by_attempt ON events (attempt_id);

CREATE TABLE agent_holds (
    agent TEXT PRIMARY KEY,
    until INTEGER NOT NULL,              -- epoch ms; no loop on this agent starts an attempt before
    reason TEXT NOT NULL
);
)sql",
        // 2 → 3: the loop's memory and judgement (README, "Memory, completion and progress"): per
        // attempt the workspace's HEAD
        // before/after, diff stats, whether it made progress, the agent's feedback and the
        // --verify result; steering hints queued for a loop's next iteration.
        R"sql(
ALTER TABLE attempts ADD COLUMN head_before TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN head_after TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN files_changed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN insertions INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN deletions INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN progress INTEGER;      -- NULL: not known (the attempt did not end)
ALTER TABLE attempts ADD COLUMN feedback TEXT NOT NULL DEFAULT '';  -- JSON, '' = none given
ALTER TABLE attempts ADD COLUMN verify_exit INTEGER;   -- --verify's exit status, NULL = not run
ALTER TABLE attempts ADD COLUMN verify_output TEXT NOT NULL DEFAULT '';

CREATE TABLE steering (
    id INTEGER PRIMARY KEY,
    loop_id INTEGER NOT NULL REFERENCES loops (id) ON DELETE CASCADE,
    text TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    iteration INTEGER NOT NULL DEFAULT 0  -- the iteration whose prompt got it; 0 = not yet
);
CREATE INDEX steering_by_loop ON steering (loop_id, iteration);
)sql",
        // 3 → 4: the scheduler and budgets (README, "Scheduling, budgets"): settings changed at run
        // time (JSON values
        // by key: "scheduler", "budget"), and the attempts by start time, from which every
        // budget window is computed.
        R"sql(
CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL                  -- JSON
);
CREATE INDEX attempts_by_start ON attempts (started_at);
)sql",
        // 4 → 5: the git worktree a loop runs in (submit --worktree), for listing loops without
        // reading their spec; '' = none.
        R"sql(
ALTER TABLE loops ADD COLUMN worktree_path TEXT NOT NULL DEFAULT '';
ALTER TABLE loops ADD COLUMN worktree_branch TEXT NOT NULL DEFAULT '';
)sql",
        // 5 → 6: submit --idempotency-key (README, "Using it"): at most one loop per key; NULL =
        // none.
        R"sql(
ALTER TABLE loops ADD COLUMN idempotency_key TEXT;
CREATE UNIQUE INDEX loops_by_idempotency_key ON loops (idempotency_key)
    WHERE idempotency_key IS NOT NULL;
)sql",
        // 6 → 7: submit --fallback: the agent (and model) each attempt ran on, the loop's own or
        // a fallback; the attempts before had the loop's own.
        R"sql(
ALTER TABLE attempts ADD COLUMN agent TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN model TEXT NOT NULL DEFAULT '';
UPDATE attempts SET
    agent = (SELECT agent FROM loops WHERE loops.id = attempts.loop_id),
    model = ifnull((SELECT json_extract(spec, '$.model') FROM loops
                    WHERE loops.id = attempts.loop_id), '');
)sql",
        // 7 → 8: submit --judge: an attempt is the loop's work or its judge's, with the judge's
        // verdict and reasons; the loop's HEAD and working tree at its first iteration, which
        // the judge's diff starts from ('' = not recorded yet, or not a git workspace).
        R"sql(
ALTER TABLE attempts ADD COLUMN kind TEXT NOT NULL DEFAULT 'work';
ALTER TABLE attempts ADD COLUMN verdict TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN verdict_reasons TEXT NOT NULL DEFAULT '';
ALTER TABLE loops ADD COLUMN base_head TEXT NOT NULL DEFAULT '';
ALTER TABLE loops ADD COLUMN base_tree TEXT NOT NULL DEFAULT '';
)sql",
        // 8 → 9: submit --merge and `ralphctl merge`: what became of a --worktree loop's branch
        // ('' = nothing tried yet).
        R"sql(
ALTER TABLE loops ADD COLUMN landing TEXT NOT NULL DEFAULT '';
)sql",
        // 9 → 10: push notifications not yet delivered (ralphd --notify URL, submit --notify):
        // the outbox, one row per event and target, deleted once the target took it. An id is
        // never given again (AUTOINCREMENT): receivers de-duplicate by it.
        R"sql(
CREATE TABLE notifications (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    target TEXT NOT NULL,                -- the URL it goes to
    body TEXT NOT NULL,                  -- the event, JSON: the generic format without its id
    created_at INTEGER NOT NULL,         -- epoch ms
    tries INTEGER NOT NULL DEFAULT 0,
    last_error TEXT NOT NULL DEFAULT ''
);
CREATE INDEX notifications_by_target ON notifications (target, id);
)sql",
        // 10 → 11: loop.diff: per attempt the tree ids of the workspace's git snapshots before and
        // after it, which its diff is made from ('' = none: not a git workspace, no snapshot
        // after the attempt, or recorded before this version).
        R"sql(
ALTER TABLE attempts ADD COLUMN tree_before TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN tree_after TEXT NOT NULL DEFAULT '';
)sql",
        // 11 → 12: ralphd --account and --peer: a usage-limit hold belongs to an account (the
        // holds recorded before were this daemon's, under the default account) and may have been
        // learnt from a peer, its origin ('' = recorded here).
        R"sql(
CREATE TABLE agent_holds_12 (
    agent TEXT NOT NULL,
    account TEXT NOT NULL,
    until INTEGER NOT NULL,              -- epoch ms; no loop on this agent starts an attempt before
    reason TEXT NOT NULL,
    origin TEXT NOT NULL DEFAULT '',     -- the host whose loop hit the limit; '' = this one
    PRIMARY KEY (agent, account)
);
INSERT INTO agent_holds_12 (agent, account, until, reason)
    SELECT agent, 'default', until, reason FROM agent_holds;
DROP TABLE agent_holds;
ALTER TABLE agent_holds_12 RENAME TO agent_holds;
)sql",
        // 12 → 13: a claim of completion survives a wait and a restart until its judge rules on
        // it: the rule an attempt met, and the final answer that met it ('' for the others).
        // The claims recorded before kept no rule's name.
        R"sql(
ALTER TABLE attempts ADD COLUMN completion_rule TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN final_answer TEXT NOT NULL DEFAULT '';
UPDATE attempts SET completion_rule = 'a completion rule' WHERE completion_signal = 1;
)sql",
        // 13 → 14: a year of history costs what a day of it does (bench/README.md, "scale").
        // Indexes for what is bounded by a window or a state: the loops by end time (a report's
        // window, gc's cutoff), by state and id (a page of loop.list per state), the attempts
        // still running (recovery at start). Aggregates kept by triggers, in the transaction of
        // the rows they sum, so that no writer can forget them: the loops per state
        // (daemon.info, the queue's length) and the attempts' use per minute and per hour of
        // their start (the budgets' windows: admission::measure).
        R"sql(
CREATE INDEX loops_by_state_id ON loops (state, id);
CREATE INDEX loops_by_finished ON loops (finished_at);
CREATE INDEX attempts_running ON attempts (loop_id) WHERE termination = 'running';

CREATE TABLE loop_counts (
    state TEXT PRIMARY KEY,
    loops INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO loop_counts SELECT state, count(*) FROM loops GROUP BY state;
CREATE TRIGGER loop_counts_insert AFTER INSERT ON loops BEGIN
    INSERT INTO loop_counts VALUES (new.state, 1)
        ON CONFLICT (state) DO UPDATE SET loops = loops + 1;
END;
CREATE TRIGGER loop_counts_update AFTER UPDATE OF state ON loops
WHEN old.state != new.state BEGIN
    UPDATE loop_counts SET loops = loops - 1 WHERE state = old.state;
    INSERT INTO loop_counts VALUES (new.state, 1)
        ON CONFLICT (state) DO UPDATE SET loops = loops + 1;
END;
CREATE TRIGGER loop_counts_delete AFTER DELETE ON loops BEGIN
    UPDATE loop_counts SET loops = loops - 1 WHERE state = old.state;
END;

CREATE TABLE attempt_use (
    span INTEGER NOT NULL,               -- ms: 60000 (a minute) or 3600000 (an hour)
    slot INTEGER NOT NULL,               -- the attempts started in [slot * span, (slot + 1) * span)
    runs INTEGER NOT NULL,               -- how many
    tokens INTEGER NOT NULL,             -- their input + output tokens
    cost REAL NOT NULL,                  -- their cost_usd (none reported: 0)
    PRIMARY KEY (span, slot)
) WITHOUT ROWID;
INSERT INTO attempt_use
    SELECT 60000, started_at / 60000, count(*), sum(input_tokens + output_tokens),
           total(cost_usd) FROM attempts GROUP BY 2;
INSERT INTO attempt_use
    SELECT 3600000, started_at / 3600000, count(*), sum(input_tokens + output_tokens),
           total(cost_usd) FROM attempts GROUP BY 2;
CREATE TRIGGER attempt_use_insert AFTER INSERT ON attempts BEGIN
    INSERT INTO attempt_use
        VALUES (60000, new.started_at / 60000, 1, new.input_tokens + new.output_tokens,
                ifnull(new.cost_usd, 0)),
               (3600000, new.started_at / 3600000, 1, new.input_tokens + new.output_tokens,
                ifnull(new.cost_usd, 0))
        ON CONFLICT (span, slot) DO UPDATE SET runs = runs + 1,
            tokens = tokens + excluded.tokens, cost = cost + excluded.cost;
END;
CREATE TRIGGER attempt_use_update AFTER UPDATE OF started_at, input_tokens, output_tokens,
    cost_usd ON attempts BEGIN
    UPDATE attempt_use SET runs = runs - 1,
        tokens = tokens - (old.input_tokens + old.output_tokens),
        cost = cost - ifnull(old.cost_usd, 0)
        WHERE (span = 60000 AND slot = old.started_at / 60000)
           OR (span = 3600000 AND slot = old.started_at / 3600000);
    INSERT INTO attempt_use
        VALUES (60000, new.started_at / 60000, 1, new.input_tokens + new.output_tokens,
                ifnull(new.cost_usd, 0)),
               (3600000, new.started_at / 3600000, 1, new.input_tokens + new.output_tokens,
                ifnull(new.cost_usd, 0))
        ON CONFLICT (span, slot) DO UPDATE SET runs = runs + 1,
            tokens = tokens + excluded.tokens, cost = cost + excluded.cost;
    DELETE FROM attempt_use WHERE runs = 0
        AND ((span = 60000 AND slot = old.started_at / 60000)
          OR (span = 3600000 AND slot = old.started_at / 3600000));
END;
CREATE TRIGGER attempt_use_delete AFTER DELETE ON attempts BEGIN
    UPDATE attempt_use SET runs = runs - 1,
        tokens = tokens - (old.input_tokens + old.output_tokens),
        cost = cost - ifnull(old.cost_usd, 0)
        WHERE (span = 60000 AND slot = old.started_at / 60000)
           OR (span = 3600000 AND slot = old.started_at / 3600000);
    DELETE FROM attempt_use WHERE runs = 0
        AND ((span = 60000 AND slot = old.started_at / 60000)
          OR (span = 3600000 AND slot = old.started_at / 3600000));
END;
)sql",
        // 14 → 15: the space gc frees goes back to the file system, a chunk at a time
        // (incremental_vacuum: store::vacuum_some), which auto_vacuum must be set for before the
        // tables are made: once, by rewriting the whole file.
        {R"sql(
PRAGMA auto_vacuum = INCREMENTAL;
VACUUM;
)sql",
         true},
        // 15 → 16: loop.retry takes an ended loop back from where it was: the iteration policy
        // reads only the attempts after this one (0: never retried).
        R"sql(
ALTER TABLE loops ADD COLUMN retried_after INTEGER NOT NULL DEFAULT 0;
)sql",
        // 16 → 17: one push notification per cause, also across restarts (ralphd::is_news): the
        // wait a loop's notification last announced, and every wait (cause, until) announced.
        R"sql(
ALTER TABLE loops ADD COLUMN announced_wait TEXT NOT NULL DEFAULT '';
ALTER TABLE loops ADD COLUMN announced_ran INTEGER NOT NULL DEFAULT 0;
CREATE TABLE announced_waits (
    loop_id INTEGER NOT NULL REFERENCES loops (id) ON DELETE CASCADE,
    cause TEXT NOT NULL,
    until INTEGER NOT NULL,
    PRIMARY KEY (loop_id, cause, until)
) WITHOUT ROWID;
)sql",
    };
    return migrations;
}

}  // namespace ralph
