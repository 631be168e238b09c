import { createRoute, z } from '@hono/zod-openapi';
import {
  EMBEDDED_REWARDS,
  listParticipantRewards,
  loadCampaignFor,
  requireParticipant,
} from '@stampcard/core';
import type { App } from '../../../env';
import { errorResponses, okResponse, pageLimit } from '../../../lib/schemas';
import { participantParams } from '../participants/schemas';
import { ParticipantRewardPage } from '../responses';

const route = createRoute({
  method: 'get',
  operationId: 'listParticipantRewards',
  path: '/v1/campaign/{id}/participant/{idOrEmail}/rewards',
  summary: "A participant's rewards, oldest first",
  description: `The participant's whole reward history (the Participant object shows only its newest ${EMBEDDED_REWARDS}, and its \`rewardsUrl\` points here). A path segment that contains \`@\` is an email; anything else is a participant id. Page with \`nextId\` (the \`nextId\` of the previous page: the id of the first reward of the next one) while \`more\` is true; \`limit\` 1..100 (20).`,
  tags: ['Participants'],
  request: {
    params: participantParams,
    query: z.strictObject({
      limit: pageLimit,
      nextId: z.string().min(1).max(64).optional(),
    }),
  },
  responses: {
    ...okResponse('`{ rewards, limit, nextId, more }`', ParticipantRewardPage),
    ...errorResponses,
  },
});

export const registerListParticipantRewards = (app: App) =>
  app.openapi(route, async (c) => {
    const ctx = c.get('ctx');
    const { id, idOrEmail } = c.req.valid('param');
    const campaign = await loadCampaignFor(ctx, c.get('principal'), id);
    const participant = await requireParticipant(ctx, campaign.id, idOrEmail);
    return c.json(await listParticipantRewards(ctx, participant, c.req.valid('query')), 200);
  });
