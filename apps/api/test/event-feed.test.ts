import { recordEvents } from '@stampcard/core';
import { describe, expect, it } from 'vitest';
import { client, expectErrorShape, inProcess } from '../../../test/support/client';
import { makeUserWithKey, makeWorld } from '../../../test/support/factories';
import { startReceiver } from '../../../test/support/receiver';
import { refusals } from '../../../test/support/refused';
import { useTestStack } from '../../../test/support/use';
import { goalWorld, registerEndpoint } from '../../../test/support/webhooks';

const stack = useTestStack({ dispatcher: true, sweep: true });
const expectRefused = refusals(stack);

describe('the event feed', () => {
  it('gives each event exactly as its webhook carried it, oldest first', async () => {
    const rx = await startReceiver();
    try {
      const w = await goalWorld(stack);
      await registerEndpoint(stack, w.campaign.id, { url: rx.url });
      await w.act();
      await w.act();
      const delivered = await rx.waitFor(6);
      const feed = await w.api.get(`/v1/campaign/${w.campaign.id}/events?limit=100`);
      expect(feed.status).toBe(200);
      expect(feed.body.more).toBe(false);
      expect(feed.body.events).toHaveLength(6);
      expect(feed.body.nextAfter).toBe(feed.body.events[5].id);
      const bodies = new Map(delivered.map((r) => [r.body, r]));
      for (const e of feed.body.events) {
        expect(e.id).toMatch(/^evt_/);
        const { id: _id, ...body } = e;
        // The same bytes a webhook delivery carried: a receiver can treat the two alike.
        expect(bodies.has(JSON.stringify(body)), e.type).toBe(true);
      }
      const times = feed.body.events.map((e: any) => e.timestamp);
      expect(times).toEqual([...times].sort((a, b) => a - b));
    } finally {
      await rx.close();
    }
  });

  it("pages through every event exactly once, and never shows another campaign's", async () => {
    const w = await makeWorld(stack.ctx);
    const other = await makeWorld(stack.ctx);
    const ended = (campaignId: string, n: number) =>
      Array.from({ length: n }, () => ({
        campaignId,
        type: 'CAMPAIGN_ENDED' as const,
        data: { campaign: { id: campaignId, name: 'x', status: 'COMPLETE' as const, currencyISO: 'USD' } },
      }));
    const mine = await recordEvents(stack.ctx, ended(w.campaign.id, 45));
    await recordEvents(stack.ctx, ended(other.campaign.id, 5));
    const api = client(inProcess(stack.app), w.key);
    const seen: string[] = [];
    let after = '';
    for (let page = 0; page < 10; page++) {
      const res = await api.get(`/v1/campaign/${w.campaign.id}/events${after ? `?after=${after}` : ''}`);
      expect(res.status).toBe(200);
      expect(res.body.events.length).toBeLessThanOrEqual(20);
      seen.push(...res.body.events.map((e: any) => e.id));
      if (!res.body.more) break;
      after = res.body.nextAfter;
    }
    expect(seen).toEqual(mine);
    const last = await api.get(`/v1/campaign/${w.campaign.id}/events?after=${mine.at(-1)}`);
    expect(last.body).toEqual({ events: [], more: false, nextAfter: null });
  });

  it('refuses bad paging, unknown cursors and callers who cannot reach the campaign', async () => {
    const w = await makeWorld(stack.ctx);
    const other = await makeWorld(stack.ctx);
    const api = client(inProcess(stack.app), w.key);
    const path = `/v1/campaign/${w.campaign.id}/events`;
    for (const q of ['limit=0', 'limit=101', 'limit=abc', 'limit=1.5', 'after=', 'colour=red'])
      await expectRefused(() => api.get(`${path}?${q}`), 400, 'VALIDATION_ERROR');
    const [foreign] = await recordEvents(stack.ctx, [
      {
        campaignId: other.campaign.id,
        type: 'CAMPAIGN_ENDED',
        data: { campaign: { id: other.campaign.id, name: 'x', status: 'COMPLETE', currencyISO: 'USD' } },
      },
    ]);
    await expectRefused(() => api.get(`${path}?after=${foreign}`), 404, 'NOT_FOUND');
    await expectRefused(() => api.get(`${path}?after=evt_missing`), 404, 'NOT_FOUND');
    await expectRefused(() => api.get(`/v1/campaign/${other.campaign.id}/events`), 403, 'NOT_AUTHORIZED');
    const member = await makeUserWithKey(stack.ctx, w.account.id, { role: 'MEMBER', campaignIds: [] });
    await expectRefused(() => client(inProcess(stack.app), member.key).get(path), 403, 'NOT_AUTHORIZED');
    expectErrorShape(await client(inProcess(stack.app)).get(path), 403, 'NOT_AUTHORIZED');
  });
});
