import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { client, eventually, overHttp } from '../support/client';
import { makeWorld, uniqueEmail } from '../support/factories';
import { type Run, startProcess, waitForOutput } from '../support/processes';
import { useTestStack } from '../support/use';

/**
 * An import whose worker is killed with SIGKILL in the middle of it, and a worker started again: the result is
 * the one the same file gives without a kill (counts, refused rows, participants and their counts), no row
 * doubled. The worker runs as production runs it (`scripts/start.ts worker`), on the stack's database and queues.
 */
const stack = useTestStack({ http: true, worker: false });
const ROWS = 10_000;

const workers: Run[] = [];
afterAll(async () => {
  for (const w of workers) {
    if (w.child.exitCode === null && w.child.signalCode === null) {
      w.child.kill('SIGTERM');
      await w.exited;
    }
  }
});

async function startWorker(): Promise<Run> {
  const run = startProcess(
    {
      NODE_ENV: 'test',
      DATABASE_URL: stack.dbUrl,
      REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      QUEUE_PREFIX: stack.prefix,
      WORKER_LOCK_MS: '2000',
      RELAY_GRACE_MS: '2000',
      RELAY_INTERVAL_MS: '500',
    },
    ['scripts/start.ts', 'worker'],
  );
  workers.push(run);
  await waitForOutput(run, /worker and relay running/, 30_000);
  return run;
}

/** The file: new participants with counts, some refused, some twice. */
function file(rewardId: string, tag: string): string {
  const lines = [`email,firstName,loyaltyActionCount.${rewardId}`];
  for (let i = 1; i <= ROWS; i++) {
    if (i % 97 === 0) lines.push(`broken-${i},x,1`);
    else if (i % 89 === 0) lines.push(`u${i - 1}-${tag}@example.com,again,1`);
    else lines.push(`u${i}-${tag}@example.com,N${i},${i % 4}`);
  }
  return `${lines.join('\r\n')}\r\n`;
}

type Outcome = { counts: Record<string, number>; refused: [number, string][]; participants: string[] };

async function outcome(
  campaignId: string,
  importId: string,
  body: Record<string, unknown>,
): Promise<Outcome> {
  const refused = await stack.ctx.db.execute<{ row: number; reason: string }>(
    sql`select row, reason from participant_import_refusals where import_id = ${importId} order by row`,
  );
  // Each participant by the part of its email before the campaign's tag, with its name and counts.
  const rows = await stack.ctx.db.execute<{ p: string }>(sql`
    select split_part(email, '-', 1) || ':' || first_name || ':' || loyalty_action_count
      || ':' || coalesce(a.n, 0) as p
    from participants p
    left join (
      select participant_id, count(*) as n from loyalty_actions where campaign_id = ${campaignId} group by 1
    ) a on a.participant_id = p.id
    where campaign_id = ${campaignId} order by 1`);
  const {
    created,
    updated,
    unchanged,
    refused: n,
    rowsDone,
    rowsTotal,
    loyaltyActionsQueued,
  } = body as Record<string, number>;
  return {
    counts: { created, updated, unchanged, refused: n, rowsDone, rowsTotal, loyaltyActionsQueued } as Record<
      string,
      number
    >,
    refused: refused.map((r) => [r.row, r.reason]),
    participants: rows.map((r) => r.p),
  };
}

describe('an import whose worker is killed', () => {
  it('resumes where its last batch committed and ends as it does without the kill', async () => {
    const a = await makeWorld(stack.ctx, { reward: { isUnlimited: true } });
    const b = await makeWorld(stack.ctx, { reward: { isUnlimited: true } });
    const api = (w: typeof a) => client(overHttp(stack.baseUrl!), w.key);
    const tag = uniqueEmail('k').split('@')[0]!.replace(/-/g, '');
    const send = (w: typeof a) =>
      api(w).post(`/v1/campaign/${w.campaign.id}/participants/imports?mode=ADD`, file(w.reward.id, tag), {
        'content-type': 'text/csv',
      });
    const killed = await send(a);
    expect(killed.status).toBe(202);

    let worker = await startWorker();
    // Mid-import: some batches committed, more to go. Killed at once, mid-batch as likely as not.
    const mid = await eventually(
      () => api(a).get(killed.headers.get('location')!),
      (r) => r.body.rowsDone >= 1000,
      60_000,
    );
    expect(mid.body.status).toBe('RUNNING');
    worker.child.kill('SIGKILL');
    await worker.exited;
    const atKill = (await api(a).get(killed.headers.get('location')!)).body.rowsDone;
    expect(atKill).toBeLessThan(ROWS);
    worker = await startWorker();
    const ended = await eventually(
      () => api(a).get(killed.headers.get('location')!),
      (r) => r.body.status === 'SUCCEEDED' || r.body.status === 'FAILED',
      120_000,
    );

    // The same file into another campaign, without a kill.
    const clean = await send(b);
    const cleanEnded = await eventually(
      () => api(b).get(clean.headers.get('location')!),
      (r) => r.body.status === 'SUCCEEDED' || r.body.status === 'FAILED',
      120_000,
    );
    // Every carried-over count applied, in both.
    await eventually(
      async () =>
        (
          await stack.ctx.db.execute<{ n: number }>(
            sql`select count(*)::int as n from loyalty_actions where status = 'QUEUED' and campaign_id in (${a.campaign.id}, ${b.campaign.id})`,
          )
        )[0]!.n,
      (n) => n === 0,
      120_000,
    );
    const withKill = await outcome(a.campaign.id, killed.body.id, ended.body);
    const without = await outcome(b.campaign.id, clean.body.id, cleanEnded.body);
    expect(ended.body.status).toBe('SUCCEEDED');
    expect(withKill.counts).toEqual(without.counts);
    expect(withKill.counts.rowsDone).toBe(ROWS);
    expect(withKill.refused).toEqual(without.refused);
    expect(withKill.participants).toEqual(without.participants);
    expect(withKill.participants.length).toBe(withKill.counts.created);
    console.log(`import-kill: killed at ${atKill}/${ROWS} rows; ${JSON.stringify(withKill.counts)}`);
  }, 300_000);
});
