import { randomBytes } from 'node:crypto';
import { connectPostgres } from '@stampcard/db';
import { afterAll, describe, expect, it } from 'vitest';
import { client, eventually, operatorProgram, overHttp } from '../support/client';
import { TEST_RATE_LIMITS } from '../support/factories';
import { type OwnPostgres, startOwnPostgres } from '../support/own-postgres';
import { freePort, type Run, startProcess, waitForOutput } from '../support/processes';
import { deleteRedisKeys, queueSizesAt, REDIS_URL, uniquePrefix } from '../support/redis-keys';

/**
 * A PostgreSQL of this test's own, restarted (`pg_ctl restart -m fast`) and then frozen (SIGSTOP) under a
 * steady load of actions, with `npm start`'s three roles running against it as real processes. Before the
 * driver patch (patches/postgres+3.4.9.patch) the worker, and the API with it, died of
 * `TypeError: Cannot read properties of null (reading 'write')` from the driver's `nextWrite`; before its second
 * part, the dispatcher died of an unhandled `ECONNRESET`: the driver's own array-types query of a new connection,
 * reset while PostgreSQL restarted (packages/db/test/driver-startup.test.ts provokes it every time).
 */
const TOKEN = `op_${randomBytes(16).toString('hex')}`;
const PREFIX = uniquePrefix('stampcard_pgrestart');
const RATE_PER_S = 150;

let pg: OwnPostgres | undefined;
let run: Run | undefined;
afterAll(async () => {
  // A frozen server would hold the roles' graceful stop.
  try {
    pg?.thaw();
  } catch {}
  if (run && run.child.exitCode === null) {
    run.child.kill('SIGTERM');
    await Promise.race([run.exited, new Promise((r) => setTimeout(r, 40_000))]);
    if (run.child.exitCode === null) run.child.kill('SIGKILL');
  }
  pg?.destroy();
  await deleteRedisKeys(REDIS_URL, PREFIX);
}, 60_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a PostgreSQL restart and a silent PostgreSQL under load', () => {
  it('kill no role: every process stays up, every accepted action is applied, the API answers again', async () => {
    pg = await startOwnPostgres();
    const port = await freePort();
    run = startProcess({
      DATABASE_URL: pg.url('stampcard'),
      PORT: String(port),
      HOST: '127.0.0.1',
      OPERATOR_TOKEN: TOKEN,
      QUEUE_PREFIX: PREFIX,
    });
    await waitForOutput(run, /Stampcard API listening/, 60_000);
    await waitForOutput(run, /webhook dispatcher and sweep running/, 60_000);
    await waitForOutput(run, /worker and relay running/, 60_000);
    const http = overHttp(`http://127.0.0.1:${port}`);
    const op = client(http, TOKEN);
    const { key, campaignId, rewardId } = await operatorProgram(op, {
      rateLimits: TEST_RATE_LIMITS,
      reward: { conversionsRequired: 3, isUnlimited: true },
    });
    const api = client(http, key);
    const path = `/v1/campaign/${campaignId}/loyalty-action`;

    // A steady load, at most 300 requests in flight, each bounded by its own timeout.
    const accepted: string[] = [];
    const answers = new Map<number | string, number>();
    const inFlight = new Set<Promise<void>>();
    let n = 0;
    let loading = true;
    let inFlightAtRestart = 0;
    const load = (async () => {
      while (loading) {
        for (let i = 0; i < RATE_PER_S / 10 && inFlight.size < 300; i++) {
          const email = `p${n++ % 400}@example.com`;
          const p = api
            .post(path, { participantEmail: email, rewardId: rewardId }, {})
            .then(
              (r) => {
                answers.set(r.status, (answers.get(r.status) ?? 0) + 1);
                if (r.status === 200) accepted.push(r.body.action.id);
              },
              (err: Error) => void answers.set(err.name, (answers.get(err.name) ?? 0) + 1),
            )
            .finally(() => inFlight.delete(p));
          inFlight.add(p);
        }
        await sleep(100);
      }
      await Promise.all(inFlight);
    })();

    try {
      await sleep(2000);
      inFlightAtRestart = inFlight.size;
      pg.restart();
      await sleep(3000);
      pg.freeze();
      await sleep(5000);
      pg.thaw();
      await sleep(3000);
    } finally {
      pg.thaw();
      loading = false;
      await load;
    }

    // Every role survived: none died, so none was restarted.
    expect(run.child.exitCode).toBeNull();
    const deaths = run
      .output()
      .split('\n')
      .filter((line) => /uncaught error|exited; restarting/.test(line));
    expect(deaths).toEqual([]);
    expect(run.output().match(/process started/g)).toHaveLength(3);
    // The restart came under load (how many were accepted depends on the machine, not on the code).
    expect(inFlightAtRestart, JSON.stringify([...answers])).toBeGreaterThan(0);

    // The API answers again, and every action it accepted ends up APPLIED.
    await eventually(
      () => client(http).get('/ready'),
      (r) => r.status === 200,
      20_000,
    );
    const after = await api.post(`${path}?wait=true`, {
      participantEmail: 'after@example.com',
      rewardId: rewardId,
    });
    expect(after.status).toBe(200);
    expect(after.body.action.status).toBe('APPLIED');
    accepted.push(after.body.action.id);
    const sql = connectPostgres(pg.url('stampcard'), { max: 1, onnotice: () => {} });
    try {
      const applied = await eventually(
        async () =>
          (
            await sql<{ n: number }[]>`
              select count(*)::int as n from loyalty_actions where id = any(${accepted}) and status = 'APPLIED'`
          )[0]!.n,
        (count) => count === accepted.length,
        // A batch job that failed through the whole outage waits out its backoff before its next attempt (the
        // catalog's 500 ms, doubled each time: 16 s after its sixth), and the relay leaves a job that is still
        // to run alone; on a loaded machine the outage's failures can reach that far.
        60_000,
      ).catch(async (err: Error) => {
        // Where the rest stand, what the queues hold, and the roles' last warnings and errors.
        const statuses = await sql<{ status: string; n: number }[]>`
          select status, count(*)::int as n from loyalty_actions where id = any(${accepted}) group by status`;
        const said = run!
          .output()
          .split('\n')
          .filter((l) => l && !/^\{"level":[1-3]0,/.test(l))
          .slice(-40);
        const queues = await queueSizesAt(REDIS_URL, PREFIX);
        throw new Error(
          `${err.message} of ${accepted.length} accepted; by status ${JSON.stringify(statuses)}; queues: ${queues}\n${said.join('\n')}`,
        );
      });
      expect(applied).toBe(accepted.length);
    } finally {
      await sql.end({ timeout: 1 });
    }
  }, 180_000);
});
