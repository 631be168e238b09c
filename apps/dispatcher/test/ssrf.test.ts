import { createEndpoint } from '@stampcard/core';
import { webhookEndpoints } from '@stampcard/db';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../../test/support/client';
import { type Receiver, startReceiver } from '../../../test/support/receiver';
import { refusals } from '../../../test/support/refused';
import { useTestStack } from '../../../test/support/use';
import { goalWorld, messagesOf, operator } from '../../../test/support/webhooks';

/** Private networks are NOT allowed here, as in production. */
const stack = useTestStack({
  dispatcher: true,
  sweep: true,
  allowPrivateNetworks: false,
  retrySchedule: '50',
});
const expectRefused = refusals(stack);

let rx: Receiver;
beforeAll(async () => {
  rx = await startReceiver();
});
afterAll(async () => {
  await rx.close();
});

describe('SSRF guard', () => {
  it('refuses non-public destinations at registration, however they are written, and writes nothing', async () => {
    const w = await goalWorld(stack);
    const op = operator(stack);
    const path = `/admin/v1/campaigns/${w.campaign.id}/webhook-endpoints`;
    const refused = [
      'http://127.0.0.1/hooks',
      'http://10.0.0.1/hooks',
      'http://192.168.1.10/',
      'http://[::1]/hooks',
      'http://169.254.169.254/latest/meta-data/',
      'http://0x7f000001/',
      'http://2130706433/',
      'http://017700000001/',
      'http://[::ffff:127.0.0.1]/',
      'http://[::ffff:7f00:1]/',
      'http://100.64.0.1/',
      'http://0.0.0.0/',
      'http://224.0.0.1/',
      'http://[fe80::1]/',
      'http://[fc00::1]/',
      // IPv4-compatible IPv6 (::/96), which the URL parser writes as [::7f00:1], [::a9fe:a9fe].
      'http://[::127.0.0.1]/',
      'http://[::169.254.169.254]/latest/meta-data/',
      `http://localhost:${rx.port}/hooks`,
      `http://api.localhost:${rx.port}/hooks`,
    ];
    for (const url of refused) {
      const body = await expectRefused(() => op.post(path, { url }), 400, 'VALIDATION_ERROR');
      expect(body.errors[0], url).toMatchObject({
        param: 'url',
        msg: expect.stringMatching(/not a public address/),
      });
      // The refusal names the setting that allows a receiver on this machine.
      expect(body.errors[0].msg, url).toContain('WEBHOOK_ALLOW_PRIVATE_NETWORKS=true');
    }
    const ok = await op.post(path, { url: 'https://93.184.215.14/hooks' });
    expect(ok.status).toBe(200);
  });

  it('checks again at every connection: a name that now resolves to loopback, or a stored private IP, is never called', async () => {
    const w = await goalWorld(stack);
    // As if the name had resolved to a public address when it was registered (DNS rebinding).
    const byName = await createEndpoint(
      stack.ctx,
      w.campaign.id,
      { url: `http://localhost:${rx.port}/hooks`, eventTypes: ['PARTICIPANT_REACHED_A_GOAL'] },
      { allowPrivateNetworks: true },
    );
    const byIp = await createEndpoint(
      stack.ctx,
      w.campaign.id,
      { url: 'https://93.184.215.14/hooks', eventTypes: ['PARTICIPANT_REACHED_A_GOAL'] },
      {},
    );
    await stack.ctx.db.update(webhookEndpoints).set({ url: rx.url }).where(eq(webhookEndpoints.id, byIp.id));
    await w.act();
    for (const ep of [byName, byIp]) {
      const [m] = await eventually(
        () => messagesOf(stack, ep.id),
        (ms) => ms[0]?.status === 'FAILED',
      );
      expect(m.attemptLog.map((a: any) => [a.statusCode, a.errorClass])).toEqual([
        [null, 'REFUSED_ADDRESS'],
        [null, 'REFUSED_ADDRESS'],
      ]);
    }
    expect(rx.received).toHaveLength(0);
  });
});
