import { z } from '@hono/zod-openapi';
import { parseRiskCursor } from '@stampcard/core';
import { FRAUD_RISK_LEVELS } from '@stampcard/db';
import { pageLimit } from '../../../lib/schemas';
import { Participant } from '../../../lib/views';

/** The manual review routes of the operator API: set a participant's level, list participants by risk. */

export const FraudRiskLevelBody = z
  .strictObject({
    fraudRiskLevel: z.enum(FRAUD_RISK_LEVELS).openapi({
      description: 'The level to set; the reason code becomes `MANUAL_UPDATE`',
    }),
  })
  .openapi('SetFraudRiskLevel');

export const RiskListQuery = z.strictObject({
  fraudRiskLevel: z
    .enum(FRAUD_RISK_LEVELS)
    .optional()
    .openapi({ description: 'Only participants at this level' }),
  limit: pageLimit,
  nextId: z
    .string()
    .min(1)
    .max(80)
    .refine((s) => parseRiskCursor(s) !== null, { message: 'not a nextId this list answered' })
    .optional()
    .openapi({ description: 'The `nextId` of the previous page (`LEVEL:participantId`)' }),
});

/** `listParticipantsByRisk`. */
export const ParticipantRiskPage = z
  .strictObject({
    participants: z.array(Participant).openapi({
      description: 'HIGH, then MEDIUM, then LOW; by id within a level',
    }),
    limit: z.number().int().openapi({
      description:
        'The `limit` asked for: the most items a page holds. A page may hold fewer (its byte budget) while `more` is true',
    }),
    nextId: z.string().nullable().openapi({
      description:
        'The `nextId` of the next page: the level and id of its first participant, `LEVEL:participantId` (null on the last page)',
    }),
    more: z.boolean().openapi({ description: 'Whether another page follows' }),
  })
  .openapi('ParticipantRiskPage');
