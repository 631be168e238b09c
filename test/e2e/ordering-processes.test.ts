import { webhookMessages } from '@stampcard/db';
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/client';
import { uniqueEmail } from '../support/factories';
import { type Run, startBuilt, waitForOutput } from '../support/processes';
import { type Received, startReceiver } from '../support/receiver';
import { OPERATOR_TOKEN } from '../support/stack';
import { useTestStack } from '../support/use';
import { goalWorld, registerEndpoint } from '../support/webhooks';

/**
 * `ordering: PARTICIPANT` across three dispatcher processes (`dist/start.js dispatcher`), one of them killed with
 * SIGKILL in the middle: the order is decided in PostgreSQL, so which process sends what, and a process dying
 * with a message in flight, change nothing but a repeat of that message (the same `webhook-id`).
 */
const stack = useTestStack({ dispatcher: false });
const runs: Run[] = [];

afterAll(async () => {
  for (const run of runs)
    if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGTERM');
  await Promise.all(runs.map((r) => r.exited));
});

function dispatcher(): Run {
  const run = startBuilt(
    {
      NODE_ENV: 'test',
      ...stack.storeEnv,
      OPERATOR_TOKEN,
      METRICS_PORT: '0',
      LOG_LEVEL: 'info',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '20,20,20,20,20,20,20,20,20,20',
      WEBHOOK_TIMEOUT_MS: '1000',
      // A killed process's jobs are taken back after about this long.
      WORKER_LOCK_MS: '2000',
      DISPATCHER_CONCURRENCY: '8',
      DISPATCH_SWEEP_MS: '500',
    },
    ['dist/start.js', 'dispatcher'],
  );
  runs.push(run);
  return run;
}

describe('ordered delivery across dispatcher processes', () => {
  it('three dispatchers, one killed mid-run: each participant’s first successes are still 1, 2, 3… in order', {
    timeout: 120_000,
  }, async () => {
    const participantOf = (r: Received): string => r.json?.data?.participant?.id;
    // The first 2xx of each message, per participant, in the order they were answered (a repeat of a message
    // whose answer a killed process never recorded is dropped, as a receiver does by `webhook-id`).
    const firsts = new Map<string, number[]>();
    const answered = new Set<string>();
    const rx = await startReceiver((r) => {
      const fails = Math.random() < 0.3;
      const delayMs = Math.floor(Math.random() * 25);
      if (!fails && !answered.has(r.headers['webhook-id'] as string)) {
        answered.add(r.headers['webhook-id'] as string);
        const p = participantOf(r);
        firsts.set(p, [...(firsts.get(p) ?? []), Number(r.headers['webhook-sequence'])]);
      }
      return { status: fails ? 500 : 200, delayMs };
    });
    try {
      const dispatchers = [dispatcher(), dispatcher(), dispatcher()];
      await Promise.all(
        dispatchers.map((run) => waitForOutput(run, /webhook dispatcher and sweep running/, 30_000)),
      );
      const w = await goalWorld(stack);
      const ep = await registerEndpoint(stack, w.campaign.id, { url: rx.url, ordering: 'PARTICIPANT' });
      const emails = Array.from({ length: 6 }, () => uniqueEmail());
      const rounds = 25;
      for (let round = 0; round < rounds; round++) {
        await Promise.all(emails.map((e) => w.act(e)));
        if (round === 10) dispatchers[0]!.child.kill('SIGKILL');
      }
      const perParticipant = 1 + rounds * 2;
      const total = emails.length * perParticipant;
      const settled = await eventually(
        () =>
          stack.ctx.db.execute<{ status: string; n: number }>(sql`
            select status, count(*)::int as n from ${webhookMessages} where endpoint_id = ${ep.id} group by status`),
        (rows) => rows.length === 1 && rows[0]!.n === total,
        90_000,
      );
      expect(settled).toEqual([{ status: 'SUCCEEDED', n: total }]);
      expect(dispatchers[0]!.child.signalCode).toBe('SIGKILL');
      expect(firsts.size).toBe(emails.length);
      for (const sequences of firsts.values()) {
        expect(sequences).toEqual(Array.from({ length: perParticipant }, (_, i) => i + 1));
      }
    } finally {
      await rx.close();
    }
  });
});
