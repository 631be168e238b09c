import { createApp } from '@stampcard/api';
import { createLogger } from '@stampcard/config';
import { createDb, loyaltyActions } from '@stampcard/db';
import { eq } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { client, expectErrorShape, inProcess } from '../../../test/support/client';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { queueDown } from '../../../test/support/queue-down';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';

const stack = useTestStack({ worker: false });
const logger = createLogger({ level: 'silent', name: 'failures-test' });
const down = queueDown();
const { redis: deadRedis, queues: deadQueues } = down;

afterAll(() => down.close());

describe('when a backing store is down', () => {
  it('PostgreSQL down: 503 UNAVAILABLE, and /ready says which store', async () => {
    const deadDb = createDb('postgres://postgres@127.0.0.1:1/stampcard', { max: 1 });
    const app = createApp({ ...stack.deps, db: deadDb.db, logger });
    const w = await makeWorld(stack.ctx);
    const r = await client(inProcess(app), w.key).get('/v1/campaigns');
    const body = expectErrorShape(r, 503, 'UNAVAILABLE');
    expect(body.message).toMatch(/retry later/);
    const ready = await client(inProcess(app)).get('/ready');
    expectErrorShape(ready, 503, 'UNAVAILABLE');
    expect(ready.body.checks).toEqual({ postgres: 'down', redis: 'ok' });
    await deadDb.close();
  });

  it('Redis down: the action is still recorded and answered 200; the relay queues it later', async () => {
    const app = createApp({ ...stack.deps, redis: deadRedis, queues: deadQueues, logger });
    const w = await makeWorld(stack.ctx);
    const r = await client(inProcess(app), w.key).post(`/v1/campaign/${w.campaign.id}/loyalty-action`, {
      participantEmail: uniqueEmail(),
      rewardId: w.reward.id,
    });
    expect(r.status).toBe(200);
    const [row] = await stack.ctx.db
      .select()
      .from(loyaltyActions)
      .where(eq(loyaltyActions.id, r.body.action.id));
    expect(row?.status).toBe('QUEUED');
    const ready = await client(inProcess(app)).get('/ready');
    expect(ready.status).toBe(503);
    expect(ready.body.checks).toEqual({ postgres: 'ok', redis: 'down' });
  });
});

describe('an unexpected fault', () => {
  it('is a 500 INTERNAL_ERROR with a request id, never a stack trace', async () => {
    const app = createApp({
      ...stack.deps,
      logger,
      extraMiddleware: [
        async () => {
          throw new Error('boom: internal detail');
        },
      ],
    });
    const w = await makeWorld(stack.ctx);
    const r = await client(inProcess(app), w.key).get('/v1/campaigns');
    const body = expectErrorShape(r, 500, 'INTERNAL_ERROR');
    expect(body.requestId).toBe(r.headers.get('x-request-id'));
    expect(JSON.stringify(body)).not.toContain('boom');
  });

  it('the operator token still guards the operator API of such an app', async () => {
    const r = await client(inProcess(stack.app), `${OPERATOR_TOKEN}x`).get('/admin/v1/queues');
    expectErrorShape(r, 403, 'NOT_AUTHORIZED');
  });
});
