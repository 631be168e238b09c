import { createRoute, z } from '@hono/zod-openapi';
import { listParticipantsByRisk } from '@stampcard/core';
import type { App } from '../../../env';
import { campaignIdParam, okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { ParticipantRiskPage, RiskListQuery } from './schemas';

const route = createRoute({
  method: 'get',
  operationId: 'adminListParticipantsByRisk',
  path: '/admin/v1/campaigns/{id}/participants',
  summary: "Manual review: a campaign's participants, riskiest first",
  description:
    'HIGH, then MEDIUM, then LOW, by participant id within a level; each participant with its `fraudRiskLevel`, `fraudReasonCode` and `rewards`. Page with `nextId` (the `nextId` of the previous page) while `more` is true; `limit` 1..100 (20) is the most a page holds: it holds fewer when it reaches its byte budget of 1 MiB. Paging sees each participant once while others join. Filter: `fraudRiskLevel`. Any campaign status but DELETED.',
  tags: ['Operator: participants'],
  request: { params: z.object({ id: campaignIdParam }), query: RiskListQuery },
  responses: {
    ...okResponse('`{ participants, limit, nextId, more }`', ParticipantRiskPage),
    ...operatorErrorResponses,
  },
});

export const registerListParticipantsByRisk = (app: App) =>
  app.openapi(route, async (c) =>
    c.json(await listParticipantsByRisk(c.get('ctx'), c.req.valid('param').id, c.req.valid('query')), 200),
  );
