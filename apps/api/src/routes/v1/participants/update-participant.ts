import {
  loadCampaignFor,
  MAX_POINTS_CONVERSIONS,
  serializeParticipant,
  showParticipant,
  updateParticipant,
} from '@stampcard/core';
import type { App } from '../../../env';
import { createBodyRoute } from '../../../lib/body';
import { errorResponses, jsonBody, okResponse } from '../../../lib/schemas';
import { Participant } from '../../../lib/views';
import { participantParams, UpdateParticipantBody } from './schemas';

/** Names the loyalty actions a points conversion of this update recorded. */
const ACTION_IDS_HEADER = 'Stampcard-Loyalty-Action-Ids';

const description = `Changes \`firstName\`, \`lastName\`, \`email\`, \`notes\`; merges \`metadata\` (a \`null\` value deletes its key) and adds \`metadataIncrement\` atomically (concurrent increments all count). Records \`PARTICIPANT_UPDATED\` with the fields whose value changed. POST and PATCH do the same. A segment that contains \`@\` is an email; anything else is a participant id.

Points: when the campaign has a \`pointsConversion\` and is IN_PROGRESS, an increment of its \`metadataKey\` that makes the value reach the \`threshold\` converts it in the same transaction: the threshold is subtracted as many times as it fits (at most ${MAX_POINTS_CONVERSIONS} per update; the rest stays and converts on the next increment) and a loyalty action is recorded for its \`rewardId\` each time, applied by the worker like a trigger's. Their ids are in the \`${ACTION_IDS_HEADER}\` header. A plain \`metadata\` set of the key never converts.`;

/** POST and PATCH are the same operation. */
const routeFor = <M extends 'post' | 'patch'>(method: M) =>
  createBodyRoute({
    method,
    // The seed's POST is the update; PATCH is its twin under the HTTP verb's name.
    operationId: method === 'post' ? 'updateParticipant' : 'patchParticipant',
    path: '/v1/campaign/{id}/participant/{idOrEmail}',
    summary: method === 'post' ? 'Update a participant' : 'Update a participant (PATCH)',
    description,
    tags: ['Participants'],
    request: { params: participantParams, body: jsonBody(UpdateParticipantBody) },
    responses: {
      200: {
        ...okResponse('The updated Participant object', Participant)[200],
        headers: {
          [ACTION_IDS_HEADER]: {
            description: `The loyalty actions (\`act_…\`, comma-separated, oldest first) a points conversion of this update recorded, QUEUED; absent when it converted nothing`,
            schema: { type: 'string' },
          },
        },
      },
      ...errorResponses,
    },
  });

export const registerUpdateParticipant = (app: App) => {
  for (const route of [routeFor('post'), routeFor('patch')]) {
    app.openapi(route, async (c) => {
      const ctx = c.get('ctx');
      const { id, idOrEmail } = c.req.valid('param');
      const { metadataIncrement, ...patch } = c.req.valid('json');
      const campaign = await loadCampaignFor(ctx, c.get('principal'), id);
      const { participant, loyaltyActionIds } = await updateParticipant(ctx, campaign, idOrEmail, {
        ...patch,
        ...(metadataIncrement
          ? {
              metadataIncrement: Object.fromEntries(
                Object.entries(metadataIncrement).map(([k, v]) => [k, Number(v)]),
              ),
            }
          : {}),
      });
      if (loyaltyActionIds.length > 0) c.header(ACTION_IDS_HEADER, loyaltyActionIds.join(','));
      c.set('lateReply', () => c.json(serializeParticipant(participant, { now: ctx.clock.now() }), 200));
      return c.json(await showParticipant(ctx, participant), 200);
    });
  }
};
