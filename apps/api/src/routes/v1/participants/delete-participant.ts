import { createRoute } from '@hono/zod-openapi';
import { deleteParticipant, loadCampaignFor } from '@stampcard/core';
import type { App } from '../../../env';
import { errorResponses, okResponse } from '../../../lib/schemas';
import { ParticipantRemoved, participantParams } from './schemas';

const route = createRoute({
  method: 'delete',
  path: '/v1/campaign/{id}/participant/{idOrEmail}',
  summary: 'Remove a participant',
  description:
    "Removes the participant, its rewards and its counts from the program in one transaction: the campaign's `participantCount`, `loyaltyActionCount` and `winnerCount` follow, the account's quota is freed, and its loyalty actions still QUEUED are REJECTED (`reason: PARTICIPANT_DELETED`). A segment that contains `@` is an email; anything else is a participant id.",
  tags: ['Participants'],
  request: { params: participantParams },
  responses: { ...okResponse('`{ success: true }`', ParticipantRemoved), ...errorResponses },
});

export const registerDeleteParticipant = (app: App) =>
  app.openapi(route, async (c) => {
    const ctx = c.get('ctx');
    const { id, idOrEmail } = c.req.valid('param');
    const campaign = await loadCampaignFor(ctx, c.get('principal'), id);
    return c.json(await deleteParticipant(ctx, campaign, idOrEmail), 200);
  });
