import { createRoute } from '@hono/zod-openapi';
import { deleteParticipant, loadCampaignFor } from '@stampcard/core';
import type { App } from '../../../env';
import { errorResponses, okResponse } from '../../../lib/schemas';
import { committed } from '../rewards/shared';
import { ParticipantRemoved, participantParams } from './schemas';

const route = createRoute({
  method: 'delete',
  path: '/v1/campaign/{id}/participant/{idOrEmail}',
  summary: 'Remove a participant',
  description:
    "Removes the participant, its rewards and its counts from the program in one transaction: the campaign's `participantCount`, `loyaltyActionCount` and `winnerCount` follow, the account's quota is freed, and its loyalty actions still QUEUED are REJECTED (`reason: PARTICIPANT_DELETED`), and `PARTICIPANT_DELETED` is sent (ids and counts only). Deletion is an erasure: the person's email, names, notes, metadata and form answers are scrubbed from every stored event (and so from webhook messages still to send or replayed later), from what receivers answered to them, and from stored `Idempotency-Key` answers; ids and counts stay. A segment that contains `@` is an email; anything else is a participant id.",
  tags: ['Participants'],
  request: { params: participantParams },
  responses: { ...okResponse('`{ success: true }`', ParticipantRemoved), ...errorResponses },
});

export const registerDeleteParticipant = (app: App) =>
  app.openapi(route, async (c) => {
    const ctx = c.get('ctx');
    const { id, idOrEmail } = c.req.valid('param');
    const campaign = await loadCampaignFor(ctx, c.get('principal'), id);
    // Erasing a long history takes several bounded statements: the time they take is added to the budget (the
    // request is making progress, not waiting on a stalled store), so no participant is too old to delete.
    const extend = c.get('extendDeadline');
    // The first batch runs on the request's own budget; each later one gets the time it took.
    let since: number | undefined;
    const onErasureBatch = () => {
      const now = performance.now();
      if (since !== undefined) extend?.(now - since);
      since = now;
    };
    const { eventIds, ...removed } = await deleteParticipant(ctx, campaign, idOrEmail, { onErasureBatch });
    await committed(c, eventIds, () => c.json(removed, 200));
    return c.json(removed, 200);
  });
