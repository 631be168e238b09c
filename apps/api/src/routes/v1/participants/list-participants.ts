import { createRoute, z } from '@hono/zod-openapi';
import { listParticipants, loadCampaignFor } from '@stampcard/core';
import type { App } from '../../../env';
import { readLagging } from '../../../lib/replica';
import { campaignIdParam, errorResponses, okResponse } from '../../../lib/schemas';
import { ParticipantPage, participantListQuery } from './schemas';

const route = createRoute({
  method: 'get',
  operationId: 'listParticipants',
  path: '/v1/campaign/{id}/participants',
  summary: "A campaign's participants, by id",
  description:
    'Ordered by participant id, so paging sees each participant once even while others join. Page with `nextId` (the `nextId` of the previous page: the id of the first participant of the next one) while `more` is true; `limit` 1..100 (20) is the most a page holds: it holds fewer when it reaches its byte budget of 1 MiB. Filters: `fraudRiskLevel`, `isWinner`. Each participant has its `rewards` but no ranks (the leaderboard ranks).',
  tags: ['Participants'],
  request: { params: z.object({ id: campaignIdParam }), query: participantListQuery },
  responses: { ...okResponse('`{ participants, limit, nextId, more }`', ParticipantPage), ...errorResponses },
});

export const registerListParticipants = (app: App) =>
  app.openapi(route, async (c) => {
    const ctx = c.get('ctx');
    const campaign = await loadCampaignFor(ctx, c.get('principal'), c.req.valid('param').id);
    const { limit, nextId, fraudRiskLevel, isWinner } = c.req.valid('query');
    const page = await readLagging(c, (reads) =>
      listParticipants(reads, campaign.id, {
        limit,
        nextId,
        fraudRiskLevel,
        isWinner: isWinner === undefined ? undefined : isWinner === 'true',
      }),
    );
    return c.json(page, 200);
  });
