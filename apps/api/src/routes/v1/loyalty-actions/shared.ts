import { z } from '@hono/zod-openapi';
import { type AcceptActionInput, acceptLoyaltyAction, loadCampaignFor, waitForAction } from '@stampcard/core';
import { enqueueActions } from '@stampcard/jobs';
import type { Context } from 'hono';
import type { AppEnv } from '../../../env';
import { requestHash } from '../../../lib/request-hash';

export const waitQuery = z.object({
  wait: z.enum(['true', 'false']).optional().openapi({
    description: 'true: answer once the action is applied (at most 10 s), with `unlockedRewards`',
  }),
});

/**
 * Shared by both trigger routes: the synchronous checks and the durable write, then the enqueue. The
 * ledger row is committed before the enqueue, so a failed enqueue loses nothing: the relay puts the action
 * in the queue later, and the caller still gets its 200.
 */
export async function triggerAction(
  c: Context<AppEnv>,
  campaignId: string,
  body: unknown,
  input: Omit<AcceptActionInput, 'requestHash' | 'request'>,
  wait: boolean,
) {
  const ctx = c.get('ctx');
  const deps = c.get('deps');
  const principal = c.get('principal');
  const campaign = await loadCampaignFor(ctx, principal, campaignId);
  const { action, participantCreated } = await acceptLoyaltyAction(ctx, campaign, {
    ...input,
    requestHash: requestHash(principal.apiKeyId, c.req.method, c.req.path, body),
    request: { method: c.req.method, path: c.req.path },
  });
  const message = participantCreated
    ? 'Participant added and loyalty action accepted'
    : 'Loyalty action accepted';
  const accepted = {
    id: action.id,
    status: action.status,
    participantId: action.participantId,
    rewardId: action.rewardId,
    createdAt: action.createdAt.getTime(),
  };
  // From here the action is recorded: if the deadline passes now (Redis or the wait stalls), the caller is
  // told it was accepted, not that nothing was.
  c.set('lateReply', () =>
    c.json({ success: true, message: `${message}; not applied yet`, action: accepted }, 200),
  );
  try {
    await enqueueActions(deps.queues, [action.id]);
  } catch (err) {
    deps.logger.warn({ err, actionId: action.id }, 'enqueue failed; the relay will queue the action');
  }
  if (wait) {
    const state = await waitForAction(ctx, campaign.id, action.id, deps.maxWaitMs ?? 10_000);
    return c.json(
      {
        success: true,
        message: state.status === 'QUEUED' ? `${message}; not applied yet` : message,
        action: state,
      },
      200,
    );
  }
  return c.json({ success: true, message, action: accepted }, 200);
}
