import { z } from '@hono/zod-openapi';
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
