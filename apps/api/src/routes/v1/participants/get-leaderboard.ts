import { createRoute, z } from '@hono/zod-openapi';
import { LEADERBOARD_TYPES, leaderboardPage, loadCampaignFor } from '@stampcard/core';
import type { App } from '../../../env';
import { readLagging } from '../../../lib/replica';
import { campaignIdParam, errorResponses, okResponse, pageLimit } from '../../../lib/schemas';
import { LeaderboardPage } from '../responses';

const route = createRoute({
  method: 'get',
  operationId: 'getLeaderboard',
  path: '/v1/campaign/{id}/leaderboard',
  summary: "A campaign's participants in rank order",
  description:
    "Count descending, ties by earlier join. `ALL_TIME` (default) lists every participant by its all-time count; `CURRENT_MONTH` and `PREV_MONTH` list those with an action in that UTC month, by that month's count. Each participant carries its `rewards` and the rank of this leaderboard (`rank`, `monthlyRank` or `prevMonthlyRank`), the same its own read answers. Page with `nextId` (the `nextId` of the previous page: the id of the first participant of the next one) while `more` is true; `limit` 1..100 (20) is the most a page holds: it holds fewer when it reaches its byte budget of 1 MiB. A `nextId` that is not on this leaderboard is a 404.",
  tags: ['Participants'],
  request: {
    params: z.object({ id: campaignIdParam }),
    query: z.strictObject({
      leaderboardType: z.enum(LEADERBOARD_TYPES).default('ALL_TIME'),
      limit: pageLimit,
      nextId: z
        .string()
        .min(1)
        .max(64)
        .optional()
        .openapi({ description: 'The `nextId` of the previous page' }),
    }),
  },
  responses: { ...okResponse('`{ participants, limit, nextId, more }`', LeaderboardPage), ...errorResponses },
});

export const registerGetLeaderboard = (app: App) =>
  app.openapi(route, async (c) => {
    const ctx = c.get('ctx');
    const campaign = await loadCampaignFor(ctx, c.get('principal'), c.req.valid('param').id);
    const { leaderboardType, limit, nextId } = c.req.valid('query');
    const page = await readLagging(c, (reads) =>
      leaderboardPage(reads, campaign.id, { type: leaderboardType, limit, nextId }),
    );
    return c.json(page, 200);
  });
