import { createRoute, z } from '@hono/zod-openapi';
import { listCampaignEvents, loadCampaignFor } from '@stampcard/core';
import type { App } from '../../../env';
import { readLagging } from '../../../lib/replica';
import { campaignIdParam, errorResponses, okResponse, pageLimit } from '../../../lib/schemas';
import { EventPage } from '../responses';

const route = createRoute({
  method: 'get',
  operationId: 'listEvents',
  path: '/v1/campaign/{id}/events',
  summary: "A campaign's events, oldest first, to reconcile what webhooks missed",
  description:
    'Each event is `{ id, type, timestamp, data }`, as its webhook carries it. Page with `after` (the `nextAfter` of the previous page) while `more` is true; `limit` 1..100 (20) is the most a page holds: it holds fewer when it reaches its byte budget of 1 MiB.',
  tags: ['Events'],
  request: {
    params: z.object({ id: campaignIdParam }),
    query: z.strictObject({
      after: z.string().min(1).max(64).optional(),
      limit: pageLimit,
    }),
  },
  responses: { ...okResponse('`{ events, more, nextAfter }`', EventPage), ...errorResponses },
});

export const registerListEvents = (app: App) =>
  app.openapi(route, async (c) => {
    const ctx = c.get('ctx');
    const campaign = await loadCampaignFor(ctx, c.get('principal'), c.req.valid('param').id);
    const query = c.req.valid('query');
    return c.json(await readLagging(c, (reads) => listCampaignEvents(reads, campaign.id, query)), 200);
  });
