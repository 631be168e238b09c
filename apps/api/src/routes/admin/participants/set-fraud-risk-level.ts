import { serializeParticipant, setFraudRiskLevel, showParticipant } from '@stampcard/core';
import type { App } from '../../../env';
import { createBodyRoute } from '../../../lib/body';
import { jsonBody, okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { Participant } from '../../../lib/views';
import { participantParams } from '../../v1/participants/schemas';
import { FraudRiskLevelBody } from './schemas';

const route = createBodyRoute({
  method: 'patch',
  operationId: 'adminSetFraudRiskLevel',
  path: '/admin/v1/campaigns/{id}/participants/{idOrEmail}',
  summary: "Manual review: set a participant's fraud risk level (reason `MANUAL_UPDATE`)",
  description:
    'Sets `fraudRiskLevel` and the reason code `MANUAL_UPDATE` in one transaction, and records `PARTICIPANT_FRAUD_STATUS_UPDATED` (the participant, its `previous` level and reason) when either changed; setting what is already stored changes nothing. Any campaign status but DELETED. A segment that contains `@` is an email; anything else is a participant id.',
  tags: ['Operator: participants'],
  request: { params: participantParams, body: jsonBody(FraudRiskLevelBody) },
  responses: { ...okResponse('The Participant object', Participant), ...operatorErrorResponses },
});

export const registerSetFraudRiskLevel = (app: App) =>
  app.openapi(route, async (c) => {
    const ctx = c.get('ctx');
    const { id, idOrEmail } = c.req.valid('param');
    const { participant } = await setFraudRiskLevel(ctx, id, idOrEmail, c.req.valid('json').fraudRiskLevel);
    // Committed: past the deadline from here on, the participant as stored is the answer.
    c.set('lateReply', () => c.json(serializeParticipant(participant, { now: ctx.clock.now() }), 200));
    return c.json(await showParticipant(ctx, participant), 200);
  });
