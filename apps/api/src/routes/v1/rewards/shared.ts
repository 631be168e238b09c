import { z } from '@hono/zod-openapi';
import { enqueue } from '@stampcard/jobs';
import type { Context } from 'hono';
import type { AppEnv } from '../../../env';
import { errorResponsesFor, PUBLIC_ERRORS } from '../../../lib/error-schema';
import { campaignIdParam } from '../../../lib/schemas';

/** `{id}` and `{participantRewardId}` of the routes that act on one earned reward. */
export const rewardParams = z.object({
  id: campaignIdParam,
  participantRewardId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'participantRewardId', in: 'path' }, example: 'prew_3kQ9aZ7xY2bC4dE6fG8h' }),
});

/** Besides the errors of every `/v1` route: the reward is not in a state that allows the change. */
export const rewardChangeErrors = errorResponsesFor([...PUBLIC_ERRORS, 'INVALID_STATE']);

/**
 * Once a change has committed: from here on the request's deadline answers `reply` (the change happened),
 * and the events it wrote go to the dispatcher at once. An enqueue that fails is only logged: the
 * dispatcher's sweep fans out undispatched events within `DISPATCH_SWEEP_MS` anyway.
 */
export async function committed(c: Context<AppEnv>, eventIds: string[], reply: () => Response) {
  c.set('lateReply', reply);
  if (eventIds.length === 0) return;
  const deps = c.get('deps');
  await enqueue(deps.queues, 'webhook-events.fan-out', [{ payload: { eventIds } }]).catch((err) =>
    deps.logger.warn({ err, events: eventIds.length }, 'events left to the dispatcher sweep'),
  );
}
