/**
 * The bare servers the bench measures Stampcard's API against, run as a child process
 * (`node --import tsx bench/bare-server.ts`) on PORT, like an API process, on `@hono/node-server`, the server
 * library the API runs on:
 *
 * - `BARE_MODE=answer` (the ingest baseline): every request answered with one fixed JSON body shaped like an
 *   accepted action, nothing else;
 * - `BARE_MODE=accept` (the one caller's floor): every request's body read, then one Redis script run (a
 *   counter with an expiry, as a rate limit is) and one row committed to PostgreSQL (an insert on its own, with
 *   `synchronous_commit` on), one after the other, then the same answer. That is the least an accept can do
 *   that shares its limits between processes and answers only once its action is on the disk: the round trips
 *   of this machine, with nothing of Stampcard's in the way. DATABASE_URL and REDIS_URL name the stores.
 */
import { randomUUID } from 'node:crypto';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { Redis } from 'ioredis';
import postgres from 'postgres';

const ANSWER = {
  success: true,
  message: 'Participant loyalty action accepted',
  action: {
    id: 'act_0123456789abcdefghij',
    status: 'QUEUED',
    participantId: 'abcdefghijkl',
    rewardId: 'crew_0123456789abcdefghij',
    createdAt: 1_800_000_000_000,
  },
};

/** The floor's rows, in the bench's own database (dropped with it). */
const FLOOR_TABLE = 'bench_accept_floor';

/** A counter with an expiry, one round trip: the shape of a rate limit's script. */
const COUNT_SCRIPT = `local n = redis.call('incr', KEYS[1]) redis.call('pexpire', KEYS[1], ARGV[1]) return n`;

async function acceptApp(): Promise<Hono> {
  const sql = postgres(process.env.DATABASE_URL!, { max: 4, onnotice: () => {} });
  await sql.unsafe(`create table if not exists ${FLOOR_TABLE} (
    id text primary key, body text not null, created_at timestamptz not null default now())`);
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { enableAutoPipelining: true });
  redis.defineCommand('countRequest', { numberOfKeys: 1, lua: COUNT_SCRIPT });
  const counter = `bench-floor:${randomUUID()}`;
  const app = new Hono();
  app.get('/ready', (c) => c.json(ANSWER));
  app.post('*', async (c) => {
    const body = await c.req.text();
    await (redis as Redis & { countRequest(key: string, ttlMs: number): Promise<number> }).countRequest(
      counter,
      60_000,
    );
    await sql`insert into ${sql(FLOOR_TABLE)} (id, body) values (${randomUUID()}, ${body})`;
    return c.json(ANSWER, 202);
  });
  return app;
}

function answerApp(): Hono {
  const app = new Hono();
  app.all('*', (c) => c.json(ANSWER));
  return app;
}

const app = process.env.BARE_MODE === 'accept' ? await acceptApp() : answerApp();
serve({ fetch: app.fetch, port: Number(process.env.PORT), hostname: '127.0.0.1' });
process.on('SIGTERM', () => process.exit(0));
