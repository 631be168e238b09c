import { createRoute, z } from '@hono/zod-openapi';
import { deleteParticipant, loadCampaignFor } from '@stampcard/core';
import type { App } from '../../../env';
import { errorResponses } from '../../../lib/schemas';
import { ParticipantRemoved, participantParams } from './schemas';

/** The erasure's status, in a header: the answer's body is the seed's `{ success: true }`. */
export const ERASURE_HEADER = 'Stampcard-Erasure';

const route = createRoute({
  method: 'delete',
  operationId: 'deleteParticipant',
  path: '/v1/campaign/{id}/participant/{idOrEmail}',
  summary: 'Remove a participant',
  description:
    "Removes the participant, its rewards and its counts from the program in one transaction: the campaign's `participantCount`, `loyaltyActionCount` and `winnerCount` follow, the account's quota is freed, and its loyalty actions still QUEUED are REJECTED (`reason: PARTICIPANT_DELETED`), and `PARTICIPANT_DELETED` is sent (ids and counts only). Deletion is an erasure: the person's email, names, notes, metadata and form answers are scrubbed from every stored event (and so from webhook messages sent or replayed later), from what receivers answered to them, and from stored `Idempotency-Key` answers; ids and counts stay. The deletion's transaction scrubs the newest 2,000 events; a longer history is erased after the answer, in the background, 2,000 events a batch: `Stampcard-Erasure` says `DONE` (nothing of the person is left) or `PENDING`, and `GET …/participant/{participantId}/erasure` shows the progress. A segment that contains `@` is an email; anything else is a participant id.",
  tags: ['Participants'],
  request: { params: participantParams },
  responses: {
    200: {
      description: '`{ success: true }`',
      headers: z.object({
        [ERASURE_HEADER]: z.enum(['DONE', 'PENDING']).openapi({
          description:
            '`DONE`: the person is erased everywhere already; `PENDING`: the rest of a long history is being erased in the background',
        }),
      }),
      content: { 'application/json': { schema: ParticipantRemoved } },
    },
    ...errorResponses,
  },
});

export const registerDeleteParticipant = (app: App) =>
  app.openapi(route, async (c) => {
    const ctx = c.get('ctx');
    const { id, idOrEmail } = c.req.valid('param');
    const campaign = await loadCampaignFor(ctx, c.get('principal'), id);
    // One bounded transaction whatever the history: the rest of a long one is erased by the worker, its next
    // batch queued by the after-commit hand-off (or resumed by the relay).
    const { erasure, ...removed } = await deleteParticipant(ctx, campaign, idOrEmail);
    c.header(ERASURE_HEADER, erasure.status);
    c.set('lateReply', () => c.json(removed, 200));
    return c.json(removed, 200);
  });
