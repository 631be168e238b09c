import type { TestDb } from './db';

/**
 * Lets a test hold a loyalty action's COMMIT on the server, in its own database: a deferred constraint
 * trigger on the ledger sleeps at COMMIT (once per transaction) for `metadata.commitSleepMs`, then refuses
 * the COMMIT as a lock timeout would if `metadata.commitFails` is set (PostgreSQL's statement timeout does
 * not cover COMMIT).
 */
export async function installSlowCommits(db: TestDb): Promise<void> {
  await db.sql.unsafe(`
    create function test_commit_sleep() returns trigger language plpgsql as $$
    begin
      if new.metadata ? 'commitSleepMs' and current_setting('test.slept', true) is distinct from 'yes' then
        perform set_config('test.slept', 'yes', true);
        perform pg_sleep((new.metadata->>'commitSleepMs')::int / 1000.0);
      end if;
      if new.metadata ? 'commitFails' then
        raise exception 'refused at commit' using errcode = '55P03';
      end if;
      return null;
    end $$;
    create constraint trigger test_commit_sleep after insert on loyalty_actions
      deferrable initially deferred for each row execute function test_commit_sleep();`);
}

/** Backends of the database sleeping in that trigger: COMMITs in flight. */
export async function commitsInFlight(db: TestDb): Promise<number[]> {
  const rows = await db.sql<{ pid: number }[]>`
    select pid from pg_stat_activity where datname = current_database() and wait_event = 'PgSleep'`;
  return rows.map((r) => r.pid);
}
