import { participantRewards } from '@stampcard/db';
import { eq, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, eventually, overHttp } from '../support/client';
import { makeWorld, uniqueEmail } from '../support/factories';
import { startPgBouncer } from '../support/pgbouncer';
import { startReceiver } from '../support/receiver';
import { useStackOn } from '../support/use';
import { goalWorldOverHttp } from '../support/webhooks';

/**
 * Every role through Debian's PgBouncer in transaction mode (`DATABASE_POOLER=transaction`): no prepared
 * statement, no session setting, each transaction on whichever server connection the pooler gives; partition
 * maintenance on `DATABASE_DIRECT_URL`.
 */
const { stack } = useStackOn(
  () => startPgBouncer(),
  (bouncer, db) => ({
    pooledUrl: bouncer.urlFor(decodeURIComponent(new URL(db.url).pathname.slice(1))),
  }),
);

describe('through PgBouncer in transaction mode', () => {
  it('accepts, applies and delivers; ?wait=true and Idempotency-Key work; a limit-1 reward is won once among 20', async () => {
    const rx = await startReceiver();
    try {
      const { api, path, ...w } = await goalWorldOverHttp(stack, rx.url);
      const body = { participantEmail: uniqueEmail(), rewardId: w.reward.id };
      const first = await api.post(`${path}?wait=true`, body, { 'Idempotency-Key': 'through-the-pooler' });
      expect(first.status).toBe(200);
      expect(first.body.action.status).toBe('APPLIED');
      const again = await api.post(`${path}?wait=true`, body, { 'Idempotency-Key': 'through-the-pooler' });
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body).toEqual(first.body);
      await rx.waitFor(1);

      // Concurrency on pooled connections: the row locks of one transaction stay on one server connection.
      const race = await makeWorld(stack.ctx, { reward: { limit: 1, conversionsRequired: 1 } });
      const raceApi = client(overHttp(stack.baseUrl!), race.key);
      const email = uniqueEmail();
      const replies = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          raceApi.post(`/v1/campaign/${race.campaign.id}/loyalty-action`, {
            participantEmail: email,
            rewardId: race.reward.id,
            metadata: { n: i },
          }),
        ),
      );
      expect(replies.map((r) => r.status)).toEqual(Array(20).fill(200));
      const p = await eventually(
        () => raceApi.get(`/v1/campaign/${race.campaign.id}/participant/${encodeURIComponent(email)}`),
        (r) => r.body.loyaltyActionCount === 20,
        20_000,
      );
      expect(p.body.rewards).toHaveLength(1);
      const won = await stack.ctx.db
        .select()
        .from(participantRewards)
        .where(eq(participantRewards.rewardId, race.reward.id));
      expect(won).toHaveLength(1);
    } finally {
      await rx.close();
    }
  });

  it('runs partition maintenance on PostgreSQL itself: its session lock never rides a pooled connection', async () => {
    const run = await stack.worker!.partitionMaintenance.runOnce();
    expect(run).not.toBeNull();
    expect(run!.failed).toEqual([]);
  });

  it('bounds statements by the settings the pooler gives its connections: a statement past 3 s is cancelled', async () => {
    const started = Date.now();
    const err = await stack.deps.db.execute(sql`select pg_sleep(10)`).then(
      () => null,
      (e: { code?: string; cause?: { code?: string } }) => e.cause?.code ?? e.code,
    );
    expect(err).toBe('57014');
    expect(Date.now() - started).toBeLessThan(6000);
  });
});
