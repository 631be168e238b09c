import { z } from '@hono/zod-openapi';
import type { App } from '../../../env';
import { createBodyRoute } from '../../../lib/body';
import {
  campaignIdParam,
  emailSchema,
  ipAddressSchema,
  jsonBody,
  metadataSchema,
  nameSchema,
  okResponse,
} from '../../../lib/schemas';
import { TriggerAnswer } from '../responses';
import { triggerAction, triggerErrors, waitQuery } from './shared';

const Body = z
  .strictObject({
    participantEmail: emailSchema,
    rewardId: z.string().min(1).max(64),
    addParticipantIfNoneExists: z.boolean().optional().default(true),
    firstName: nameSchema.optional(),
    lastName: nameSchema.optional(),
    ipAddress: ipAddressSchema.optional(),
    fingerprint: z.string().max(255).optional(),
    metadata: metadataSchema.optional(),
  })
  .openapi('TriggerLoyaltyActionByEmail');

const route = createBodyRoute({
  method: 'post',
  operationId: 'triggerLoyaltyAction',
  path: '/v1/campaign/{id}/loyalty-action',
  summary: 'Trigger a loyalty action by email',
  description:
    'Counts a loyalty action for a person, adding the participant if needed (source `DIRECT`). The action is recorded and queued; the answer comes at once with `status: QUEUED`, or with `?wait=true` once applied.',
  tags: ['Loyalty actions'],
  request: { params: z.object({ id: campaignIdParam }), query: waitQuery, body: jsonBody(Body) },
  responses: { ...okResponse('`{ success, message, action }`', TriggerAnswer), ...triggerErrors.byEmail },
});

export const registerTriggerLoyaltyAction = (app: App) =>
  app.openapi(route, async (c) => {
    const body = c.req.valid('json');
    return triggerAction(
      c,
      c.req.valid('param').id,
      body,
      {
        rewardId: body.rewardId,
        metadata: body.metadata,
        participant: {
          email: body.participantEmail,
          addIfNoneExists: body.addParticipantIfNoneExists,
          profile: {
            firstName: body.firstName,
            lastName: body.lastName,
            ipAddress: body.ipAddress,
            fingerprint: body.fingerprint,
          },
        },
      },
      c.req.valid('query').wait === 'true',
    );
  });
