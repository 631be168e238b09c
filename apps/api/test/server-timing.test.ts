import { createApp } from '@stampcard/api';
import { describe, expect, it } from 'vitest';
import { client, inProcess } from '../../../test/support/client';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { useTestStack } from '../../../test/support/use';

const stack = useTestStack();

/** `Server-Timing: a;dur=1.2, b;dur=0.3` as { a: 1.2, b: 0.3 }. */
function stages(header: string | null): Map<string, number> {
  const out = new Map<string, number>();
  for (const entry of (header ?? '').split(',')) {
    const [name, ...params] = entry.trim().split(';');
    const dur = params.find((p) => p.startsWith('dur='));
    if (name && dur) out.set(name, Number(dur.slice(4)));
  }
  return out;
}

describe('Server-Timing (SERVER_TIMING)', () => {
  it('tells each stage of an accept, and its total, when on; each stage is a part of the total', async () => {
    const w = await makeWorld(stack.ctx);
    const app = createApp({ ...stack.deps, serverTiming: true });
    const api = client(inProcess(app), w.key);
    // An existing participant: the group-committed path (the first trigger adds the participant).
    const email = uniqueEmail();
    const path = `/v1/campaign/${w.campaign.id}/loyalty-action`;
    expect((await api.post(path, { participantEmail: email, rewardId: w.reward.id })).status).toBe(200);
    const res = await api.post(path, { participantEmail: email, rewardId: w.reward.id, metadata: { n: 2 } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const got = stages(res.headers.get('server-timing'));
    expect([...got.keys()].sort()).toEqual(
      ['accept-run', 'accept-wait', 'campaign', 'hand-off', 'limits', 'total'].sort(),
    );
    const total = got.get('total')!;
    for (const [name, ms] of got) {
      expect(ms, name).toBeGreaterThanOrEqual(0);
      expect(ms, name).toBeLessThanOrEqual(total + 0.1);
    }
  });

  it('is not sent when off (the default)', async () => {
    const w = await makeWorld(stack.ctx);
    const api = client(inProcess(stack.app), w.key);
    const res = await api.post(`/v1/campaign/${w.campaign.id}/loyalty-action`, {
      participantEmail: uniqueEmail(),
      rewardId: w.reward.id,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('server-timing')).toBeNull();
  });
});
