import { z } from '@hono/zod-openapi';
import { PLANS, ROLES } from '@stampcard/db';
import { operatorCampaign } from '../../lib/views';
import { antiFraudSchema, pointsConversionSchema, rateLimitsSchema } from './schemas';

/** What the operator API answers: the shapes `packages/core/src/services/operator/` returns. */

const ms = (description: string) =>
  z
    .number()
    .int()
    .openapi({ description: `${description} (UTC ms)` });

/** `serializeAccount`. */
export const Account = z
  .strictObject({
    id: z.string(),
    name: z.string(),
    plan: z.enum(PLANS),
    participantQuota: z.number().int().nullable().openapi({ description: 'null: no quota' }),
    participantCount: z
      .number()
      .int()
      .openapi({ description: "Participants across the account's campaigns" }),
    rateLimits: rateLimitsSchema.nullable().openapi({ description: 'null: the defaults' }),
    createdAt: ms('When it was made'),
  })
  .openapi('Account', { description: 'A business, with its plan, quota and rate limits' });

/** `createUser`. */
export const User = z
  .strictObject({
    id: z.string(),
    accountId: z.string(),
    email: z.string(),
    role: z.enum(ROLES),
    campaignIds: z.array(z.string()).openapi({ description: "A MEMBER's API access" }),
    createdAt: ms('When it was made'),
  })
  .openapi('User', { description: 'A team member of an account' });

/** `createApiKey`. */
export const NewApiKey = z
  .strictObject({
    id: z.string(),
    userId: z.string(),
    key: z.string().nullable().openapi({
      description:
        'The key: shown in this answer only, only its hash is kept; null in a replay of it (`Idempotent-Withheld: key`)',
    }),
    keyPrefix: z.string(),
    createdAt: ms('When it was made'),
  })
  .openapi('NewApiKey', { description: 'An API key just issued' });

/** `revokeApiKey`. */
export const RevokedApiKey = z.strictObject({ id: z.string(), revoked: z.boolean() });

export const OperatorCampaign = operatorCampaign({
  antiFraud: antiFraudSchema.nullable(),
  pointsConversion: pointsConversionSchema.nullable(),
});

/** `GET /admin/v1/queues`. */
export const QueueList = z.strictObject({
  queues: z.array(
    z.strictObject({
      name: z.string(),
      waiting: z.number().int(),
      active: z.number().int(),
      delayed: z.number().int(),
      failed: z.number().int(),
      completed: z.number().int(),
    }),
  ),
});
