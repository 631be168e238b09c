import { expect } from 'vitest';
import { client, inProcess } from './client';
import { makeWorld, uniqueEmail } from './factories';
import { OPERATOR_TOKEN, type TestStack } from './stack';

/** The operator API of a test stack, in process. */
export const operator = (stack: TestStack) => client(inProcess(stack.app), OPERATOR_TOKEN);

/** Registers an endpoint through the operator API; answers it with its secret. */
export async function registerEndpoint(stack: TestStack, campaignId: string, body: Record<string, unknown>) {
  const res = await operator(stack).post(`/admin/v1/campaigns/${campaignId}/webhook-endpoints`, body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { id: string; secret: string; [k: string]: unknown };
}

/** A world whose reward unlocks at the first action, and a function that performs one and waits for it. */
export async function goalWorld(stack: TestStack, opts: Parameters<typeof makeWorld>[1] = {}) {
  const w = await makeWorld(stack.ctx, { reward: { conversionsRequired: 1, isUnlimited: true }, ...opts });
  const api = client(inProcess(stack.app), w.key);
  const act = async (email = uniqueEmail()) => {
    const res = await api.post(`/v1/campaign/${w.campaign.id}/loyalty-action?wait=true`, {
      participantEmail: email,
      rewardId: w.reward.id,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.action.status).toBe('APPLIED');
    return res.body as {
      action: { id: string; unlockedRewards: { id: string }[] };
      participant: { id: string };
    };
  };
  return { ...w, api, act };
}

/** The messages of an endpoint as the operator API lists them. */
export async function messagesOf(stack: TestStack, endpointId: string, query = '') {
  const res = await operator(stack).get(`/admin/v1/webhook-endpoints/${endpointId}/messages${query}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.messages as any[];
}
