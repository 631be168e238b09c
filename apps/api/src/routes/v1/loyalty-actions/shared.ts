import { z } from '@hono/zod-openapi';
import { type AcceptActionInput, triggerLoyaltyAction } from '@stampcard/core';
import type { Context } from 'hono';
import type { AppEnv } from '../../../env';
import { errorResponsesFor, PUBLIC_ERRORS } from '../../../lib/error-schema';
import { requestHash } from '../../../lib/request-hash';

export const waitQuery = z.object({
  wait: z.enum(['true', 'false']).optional().openapi({
    description: 'true: answer once the action is applied (at most 10 s), with `unlockedRewards`',
  }),
});

/**
 * What a trigger can answer besides 200: the campaign not IN_PROGRESS, an identical request in flight, a
 * participant blocked by anti-fraud, and, when it would add the participant, the account's quota.
 */
export const triggerErrors = {
  byEmail: errorResponsesFor([
    ...PUBLIC_ERRORS,
    'INVALID_STATE',
    'USAGE_LIMIT',
    'DUPLICATE_REQUEST',
    'PARTICIPANT_BLOCKED',
  ]),
  byId: errorResponsesFor([...PUBLIC_ERRORS, 'INVALID_STATE', 'DUPLICATE_REQUEST', 'PARTICIPANT_BLOCKED']),
};

/**
 * Shared by both trigger routes: the request's identity (for the 409 of an identical request in flight),
 * then core's `triggerLoyaltyAction` with the app's accept batcher. Once the action is recorded, a deadline
 * that passes answers that it was accepted, not that nothing was.
 */
export async function triggerAction(
  c: Context<AppEnv>,
  campaignId: string,
  body: unknown,
  input: Omit<AcceptActionInput, 'requestHash'>,
  wait: boolean,
) {
  const principal = c.get('principal');
  const answer = await triggerLoyaltyAction(
    c.get('ctx'),
    c.get('trigger'),
    principal,
    campaignId,
    {
      ...input,
      requestHash: requestHash(principal.apiKeyId, c.req.method, c.req.path, body),
    },
    {
      wait,
      onRecorded: (late) => {
        c.get('deps').metrics?.accept.accepted();
        c.set('lateReply', () => c.json(late, 200));
      },
    },
  );
  return c.json(answer, 200);
}
