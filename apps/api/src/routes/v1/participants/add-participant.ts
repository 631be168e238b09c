import { z } from '@hono/zod-openapi';
import { addParticipant, loadCampaignFor, serializeParticipant, showParticipant } from '@stampcard/core';
import type { App } from '../../../env';
import { createBodyRoute } from '../../../lib/body';
import { errorResponsesFor, PUBLIC_ERRORS } from '../../../lib/error-schema';
import { campaignIdParam, jsonBody, okResponse } from '../../../lib/schemas';
import { Participant } from '../../../lib/views';
import { AddParticipantBody } from './schemas';

const route = createBodyRoute({
  method: 'post',
  operationId: 'addParticipant',
  path: '/v1/campaign/{id}/participant',
  summary: 'Add a participant',
  description:
    "Adds a participant (source `DIRECT`) to a DRAFT or IN_PROGRESS campaign and answers it. Idempotent by email: when the campaign already has a participant with this email (any case), that participant is answered unchanged. A new participant is checked by anti-fraud first (422 PARTICIPANT_BLOCKED when refused; see the README's Anti-fraud) and counts against the account's participant quota (402).",
  tags: ['Participants'],
  request: { params: z.object({ id: campaignIdParam }), body: jsonBody(AddParticipantBody) },
  responses: {
    ...okResponse('The Participant object', Participant),
    ...errorResponsesFor([...PUBLIC_ERRORS, 'INVALID_STATE', 'USAGE_LIMIT', 'PARTICIPANT_BLOCKED']),
  },
});

export const registerAddParticipant = (app: App) =>
  app.openapi(route, async (c) => {
    const ctx = c.get('ctx');
    const campaign = await loadCampaignFor(ctx, c.get('principal'), c.req.valid('param').id);
    const { participant } = await addParticipant(ctx, campaign, c.req.valid('json'));
    // Committed: past the deadline from here on, the participant as stored is the answer.
    c.set('lateReply', () => c.json(serializeParticipant(participant, { now: ctx.clock.now() }), 200));
    return c.json(await showParticipant(ctx, participant), 200);
  });
