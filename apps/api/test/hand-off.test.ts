import { createApp } from '@stampcard/api';
import { events } from '@stampcard/db';
import { inArray } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, eventually, inProcess } from '../../../test/support/client';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { capturedLogger } from '../../../test/support/logs';
import { queueDown } from '../../../test/support/queue-down';
import { useReceivers } from '../../../test/support/receiver';
import { useTestStack } from '../../../test/support/use';
import { operator, registerEndpoint } from '../../../test/support/webhooks';

// The dispatcher runs, but its sweep's timer does not (the test stack leaves it to tests, which run it by hand
// only where they say so): an event that reaches a receiver here was handed on by its write, at once.
const stack = useTestStack({ dispatcher: true });
const receiver = useReceivers();

/** A campaign whose endpoint (a local receiver) wants the events of participant and operator writes. */
async function watchedCampaign() {
  const rx = await receiver();
  const w = await makeWorld(stack.ctx);
  await registerEndpoint(stack, w.campaign.id, {
    url: rx.url,
    eventTypes: ['PARTICIPANT_UPDATED', 'CAMPAIGN_ENDED'],
  });
  const api = client(inProcess(stack.app), w.key);
  const email = uniqueEmail();
  const added = await api.post(`/v1/campaign/${w.campaign.id}/loyalty-action`, {
    participantEmail: email,
    rewardId: w.reward.id,
  });
  expect(added.status, JSON.stringify(added.body)).toBe(200);
  return { ...w, rx, api, email };
}

describe('writes hand their events to the dispatcher once committed', () => {
  it("a participant update's PARTICIPANT_UPDATED reaches the receiver without the sweep", async () => {
    const w = await watchedCampaign();
    const res = await w.api.patch(`/v1/campaign/${w.campaign.id}/participant/${w.email}`, {
      firstName: 'Ada',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const [got] = await w.rx.waitFor(1, 5000);
    expect(got!.json.type).toBe('PARTICIPANT_UPDATED');
    expect(got!.json.data.participant.firstName).toBe('Ada');
    expect(got!.json.data.changed).toEqual(['firstName']);
  });

  it("an operator's campaign change records CAMPAIGN_ENDED and it reaches the receiver without the sweep", async () => {
    const w = await watchedCampaign();
    const res = await operator(stack).patch(`/admin/v1/campaigns/${w.campaign.id}`, { status: 'COMPLETE' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const [got] = await w.rx.waitFor(1, 5000);
    expect(got!.json.type).toBe('CAMPAIGN_ENDED');
    expect(got!.json.data.campaign.id).toBe(w.campaign.id);
  });

  it('an enqueue that fails is logged with ids and error class only, the write answers, and the sweep delivers', async () => {
    const w = await watchedCampaign();
    const down = queueDown();
    const { logger, lines } = capturedLogger('warn');
    try {
      const app = createApp({ ...stack.deps, queues: down.queues, logger });
      const api = client(inProcess(app), w.key);
      const res = await api.patch(`/v1/campaign/${w.campaign.id}/participant/${w.email}`, {
        firstName: 'Grace',
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const line = lines.map((l) => JSON.parse(l)).find((l) => l.msg.startsWith('events not queued'));
      expect(line, lines.join('\n')).toBeDefined();
      expect(line.eventIds).toHaveLength(1);
      expect(line.errorClass).toEqual(expect.any(String));
      // Ids and the error's class: no event body, no participant's data, no error message.
      expect(JSON.stringify(line)).not.toContain('Grace');
      expect(JSON.stringify(line)).not.toContain(w.email);
      expect(
        Object.keys(line)
          .filter((k) => !['level', 'time', 'pid', 'hostname', 'name', 'service', 'msg'].includes(k))
          .sort(),
      ).toEqual(['errorClass', 'eventIds']);
      const [row] = await stack.ctx.db.select().from(events).where(inArray(events.id, line.eventIds));
      expect(row?.type).toBe('PARTICIPANT_UPDATED');
      expect(row?.dispatchedAt).toBeNull();
      // Nothing was queued, so nothing arrives until the sweep runs; then it does.
      await new Promise((r) => setTimeout(r, 300));
      expect(w.rx.received).toHaveLength(0);
      await eventually(
        () => stack.dispatcher!.sweeper.runOnce().then(() => w.rx.received.length),
        (n) => n === 1,
      );
      expect(w.rx.received[0]!.json.data.participant.firstName).toBe('Grace');
    } finally {
      await down.close();
    }
  });
});
