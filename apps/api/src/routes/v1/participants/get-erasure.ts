import { createRoute, z } from '@hono/zod-openapi';
import { loadCampaignFor, showErasure } from '@stampcard/core';
import type { App } from '../../../env';
import { campaignIdParam, errorResponses, okResponse } from '../../../lib/schemas';

const Erasure = z
  .strictObject({
    participantId: z.string(),
    status: z.enum(['PENDING', 'DONE']),
    erasedEventCount: z.number().int(),
    erasedAnswerCount: z.number().int(),
    batches: z.number().int(),
    startedAt: z.number().int(),
    updatedAt: z.number().int(),
    finishedAt: z.number().int().nullable(),
  })
  .openapi('Erasure');

const route = createRoute({
  method: 'get',
  operationId: 'getErasure',
  path: '/v1/campaign/{id}/participant/{participantId}/erasure',
  summary: "A deleted participant's erasure",
  description:
    "The progress of the erasure a participant's deletion started (README, Right to erasure): `PENDING` while its stored events (newest first) and stored `Idempotency-Key` answers are still being scrubbed in the background, `DONE` once nothing of the person is left; the counts of what was scrubbed so far. By participant id only: the email is erased too. 404 for a participant that was not deleted.",
  tags: ['Participants'],
  request: {
    params: z.object({
      id: campaignIdParam,
      participantId: z
        .string()
        .min(1)
        .max(64)
        .openapi({ param: { name: 'participantId', in: 'path' }, example: 'k3q9az7xy2bc' }),
    }),
  },
  responses: { ...okResponse('The Erasure object', Erasure), ...errorResponses },
});

export const registerGetErasure = (app: App) =>
  app.openapi(route, async (c) => {
    const ctx = c.get('ctx');
    const { id, participantId } = c.req.valid('param');
    const campaign = await loadCampaignFor(ctx, c.get('principal'), id);
    return c.json(await showErasure(ctx, campaign.id, participantId), 200);
  });
