import { type App, createApp } from '@stampcard/api';
import { describe, expect, it } from 'vitest';
import { client, inProcess } from '../../../test/support/client';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { refusals } from '../../../test/support/refused';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';

/**
 * `MAX_REQUESTS_IN_FLIGHT` (`Deps.maxRequestsInFlight`): past the requests a process works on at once, the next
 * is answered 503 UNAVAILABLE at once, whatever its path among those that read a store, and nothing is done.
 */
const stack = useTestStack({ worker: false });
const expectRefused = refusals(stack);

/** An app that takes `max` requests at once, whose `/v1` requests with `?hold=true` wait for `open()`. */
function heldApp(max: number): { app: App; open: () => void } {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const app = createApp({
    ...stack.deps,
    maxRequestsInFlight: max,
    extraMiddleware: [
      async (c, next) => {
        if (c.req.query('hold') === 'true') await gate;
        await next();
      },
    ],
  });
  return { app, open };
}

describe('requests in flight, bounded per process', () => {
  it('past the bound, a request is answered 503 at once with Retry-After, and nothing is written', async () => {
    const w = await makeWorld(stack.ctx, { account: { rateLimits: { concurrency: 10 } } });
    const { app, open } = heldApp(2);
    const api = client(inProcess(app), w.key);
    const held = [1, 2].map(() => api.get('/v1/campaigns?hold=true'));
    await new Promise((r) => setTimeout(r, 100));

    const trigger = () =>
      api.post(`/v1/campaign/${w.campaign.id}/loyalty-action`, {
        participantEmail: uniqueEmail(),
        rewardId: w.reward.id,
      });
    const started = performance.now();
    const body = await expectRefused(trigger, 503, 'UNAVAILABLE');
    expect(performance.now() - started).toBeLessThan(1000);
    expect(body.message).toBe(
      'This server is working on 2 requests already: nothing was done, retry in a second',
    );
    const refused = await trigger();
    expect(refused.headers.get('retry-after')).toBe('1');
    // One counter for every path it bounds: the operator API too. Health is outside it.
    const operator = client(inProcess(app), OPERATOR_TOKEN);
    expect((await operator.get('/admin/v1/accounts')).status).toBe(503);
    expect((await api.get('/health')).status).toBe(200);

    open();
    expect((await Promise.all(held)).map((r) => r.status)).toEqual([200, 200]);
    // Room again once they are answered.
    expect((await trigger()).status).toBe(200);
  });

  it('gives the room back when a request ends, failed or not', async () => {
    const w = await makeWorld(stack.ctx);
    const app = createApp({
      ...stack.deps,
      maxRequestsInFlight: 1,
      extraMiddleware: [
        async () => {
          throw new Error('crash');
        },
      ],
    });
    const api = client(inProcess(app), w.key);
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await api.get('/v1/campaigns')).status);
    expect(statuses).toEqual([500, 500, 500]);
  });
});
