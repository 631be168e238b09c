import { expect } from 'vitest';
import { type client, operatorProgram } from './client';
import { TEST_RATE_LIMITS } from './factories';
import type { startReceiver } from './receiver';

/**
 * What the console's overview tests watch move: a program made through the operator API (a reward no action
 * reaches, so each action is one `LOYALTY_ACTION_APPLIED`), and two receivers of those webhooks, one answering
 * 200 (`ok`) and one 500 (`failing`: listed among the endpoints failing now).
 */
export async function programWithReceivers(
  op: ReturnType<typeof client>,
  start: (...args: Parameters<typeof startReceiver>) => ReturnType<typeof startReceiver>,
) {
  const p = await operatorProgram(op, { rateLimits: TEST_RATE_LIMITS, reward: { conversionsRequired: 100 } });
  const ok = await start();
  const failing = await start(() => ({ status: 500 }));
  for (const r of [ok, failing]) {
    const res = await op.post(`/admin/v1/campaigns/${p.campaignId}/webhook-endpoints`, {
      url: r.url,
      eventTypes: ['LOYALTY_ACTION_APPLIED'],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  }
  return { ...p, ok, failing };
}
