import { z } from '@hono/zod-openapi';
import { PLANS, ROLES } from '@stampcard/db';
import { operatorCampaign, Reward } from '../../lib/views';
import { antiFraudSchema, pointsConversionSchema, rateLimitsSchema } from './schemas';

/** What the operator API answers: the shapes `packages/core/src/services/operator/` returns. */

const ms = (description: string) =>
  z
    .number()
    .int()
    .openapi({ description: `${description} (UTC ms)` });

/** `serializeAccount`: `createAccount`, `showAccount`, the items of `listAccounts`. */
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
    frameAncestors: z
      .array(z.string())
      .openapi({ description: "The origins whose pages may frame the account's portal (none: no page may)" }),
    createdAt: ms('When it was made'),
  })
  .openapi('Account', { description: 'A business, with its plan, quota and rate limits' });

/** `createUser`, `showUser`, `updateUser`, the items of `listUsers`. */
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

/** `serializeApiKey`: `showApiKey`, the items of `listApiKeys`. Never the key, nor its hash. */
export const ApiKey = z
  .strictObject({
    id: z.string(),
    userId: z.string(),
    keyPrefix: z.string().openapi({ description: 'The first 9 characters of the key, to recognise it' }),
    createdAt: ms('When it was issued'),
    revokedAt: ms('When it was revoked').nullable().openapi({ description: 'null: in use' }),
  })
  .openapi('ApiKey', { description: 'An API key as lists show it: its prefix, never the key' });

/**
 * The page of an operator list (`pageById`): `{ <items>, limit, nextId, more }`, by id; `what` names one item
 * in the descriptions.
 */
function page<K extends string, T extends z.ZodType>(items: K, schema: T, what: string, refId: string) {
  return z
    .strictObject({
      [items]: z.array(schema).openapi({ description: `By id, byte by byte` }),
      limit: z.number().int().openapi({
        description:
          'The `limit` asked for: the most items a page holds. A page may hold fewer (its byte budget) while `more` is true',
      }),
      nextId: z
        .string()
        .nullable()
        .openapi({
          description: `The \`nextId\` of the next page: the id of its first ${what} (null on the last page)`,
        }),
      more: z.boolean().openapi({ description: 'Whether another page follows' }),
    } as { [key in K]: z.ZodArray<T> } & {
      limit: z.ZodNumber;
      nextId: z.ZodNullable<z.ZodString>;
      more: z.ZodBoolean;
    })
    .openapi(refId);
}

export const AccountPage = page('accounts', Account, 'account', 'AccountPage');
export const UserPage = page('users', User, 'user', 'UserPage');
export const ApiKeyPage = page('apiKeys', ApiKey, 'key', 'ApiKeyPage');
export const RewardPage = page('rewards', Reward, 'reward', 'RewardPage');

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

export const OperatorCampaignPage = page('campaigns', OperatorCampaign, 'campaign', 'OperatorCampaignPage');
