import { loadCampaignFor, serializeParticipant, showParticipant, updateParticipant } from '@stampcard/core';
import type { App } from '../../../env';
import { createBodyRoute } from '../../../lib/body';
import { errorResponses, jsonBody, okResponse } from '../../../lib/schemas';
import { Participant } from '../../../lib/views';
import { participantParams, UpdateParticipantBody } from './schemas';

const description =
  'Changes `firstName`, `lastName`, `email`, `notes`; merges `metadata` (a `null` value deletes its key) and adds `metadataIncrement` atomically (concurrent increments all count). Records `PARTICIPANT_UPDATED` with the fields whose value changed. POST and PATCH do the same. A segment that contains `@` is an email; anything else is a participant id.';

/** POST and PATCH are the same operation. */
const routeFor = <M extends 'post' | 'patch'>(method: M) =>
  createBodyRoute({
    method,
    path: '/v1/campaign/{id}/participant/{idOrEmail}',
    summary: method === 'post' ? 'Update a participant' : 'Update a participant (PATCH)',
    description,
    tags: ['Participants'],
    request: { params: participantParams, body: jsonBody(UpdateParticipantBody) },
    responses: { ...okResponse('The updated Participant object', Participant), ...errorResponses },
  });

export const registerUpdateParticipant = (app: App) => {
  for (const route of [routeFor('post'), routeFor('patch')]) {
    app.openapi(route, async (c) => {
      const ctx = c.get('ctx');
      const { id, idOrEmail } = c.req.valid('param');
      const { metadataIncrement, ...patch } = c.req.valid('json');
      const campaign = await loadCampaignFor(ctx, c.get('principal'), id);
      const participant = await updateParticipant(ctx, campaign, idOrEmail, {
        ...patch,
        ...(metadataIncrement
          ? {
              metadataIncrement: Object.fromEntries(
                Object.entries(metadataIncrement).map(([k, v]) => [k, Number(v)]),
              ),
            }
          : {}),
      });
      c.set('lateReply', () => c.json(serializeParticipant(participant, { now: ctx.clock.now() }), 200));
      return c.json(await showParticipant(ctx, participant), 200);
    });
  }
};
