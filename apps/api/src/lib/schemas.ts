import { z } from '@hono/zod-openapi';
import { PAGE_BUDGET_BYTES } from '@stampcard/core';
import { IDEMPOTENT_WITHHELD_HEADER } from '../middleware/idempotency';
import { errorResponsesFor, OPERATOR_ERRORS, PUBLIC_ERRORS } from './error-schema';

/** Bounds of a PostgreSQL `integer` column: every integer input is held to what its column stores. */
export const PG_INT_MIN = -2_147_483_648;
export const PG_INT_MAX = 2_147_483_647;

/** An integer in `[min, max]`, `max` at most what an `integer` column holds. */
export const int = (min: number, max: number = PG_INT_MAX) => z.number().int().min(min).max(max);

/** Shared input pieces, with the limits of contract section 1. */
export const emailSchema = z.email({ message: 'must be an email address' }).max(254);
export const nameSchema = z.string().max(255);
export const notesSchema = z.string().max(10_000);

const metadataValue = z.union([z.string(), z.number(), z.boolean(), z.null()], {
  message: 'metadata is shallow: values are strings, numbers, booleans or null',
});

export const metadataSchema = z
  .record(z.string().min(1).max(255), metadataValue)
  .refine((m) => Object.keys(m).length <= 100, { message: 'metadata has at most 100 keys' })
  .refine((m) => Buffer.byteLength(JSON.stringify(m)) <= 16 * 1024, {
    message: 'metadata is at most 16 KiB as JSON',
  })
  .openapi({ description: 'Shallow object of custom key-value pairs (at most 100 keys, 16 KiB)' });

export const campaignIdParam = z
  .string()
  .min(1)
  .max(64)
  .openapi({ param: { name: 'id', in: 'path' }, example: 'a1b2c3d4' });

/**
 * The `limit` of every list: at most this many items. A page also ends before its JSON passes
 * `PAGE_BUDGET_BYTES`, so it may hold fewer while `more` is true; the cursor carries on from there.
 */
export const pageLimit = z.coerce
  .number()
  .int()
  .min(1)
  .max(100)
  .default(20)
  .openapi({
    description: `At most this many items, 1 to 100 (default 20). A page also ends before its JSON passes ${PAGE_BUDGET_BYTES / (1024 * 1024)} MiB (a single larger item is answered alone), so it may hold fewer items while \`more\` is true: keep paging with the cursor until \`more\` is false.`,
  });

/** An untyped JSON object: what a route answered before it had a schema. The OpenAPI test refuses it. */
export const jsonObject = z.record(z.string(), z.unknown());

/** The errors of a `/v1` route (see `errorResponsesFor` for a route that answers others too). */
export const errorResponses = errorResponsesFor(PUBLIC_ERRORS);

/** The errors of an operator route (`/admin/v1`). */
export const operatorErrorResponses = errorResponsesFor(OPERATOR_ERRORS);

/** The 200 answer of a route: `schema` is what the handler returns (the compiler holds it to it). */
export function okResponse<T extends z.ZodType = typeof jsonObject>(description: string, schema?: T) {
  return {
    200: { description, content: { 'application/json': { schema: (schema ?? jsonObject) as T } } },
  };
}

/**
 * The 200 answer of a route that shows a secret once (see `withholdSecrets`): a replay of it for a repeated
 * `Idempotency-Key` has the secret's field `null` and names it in `Idempotent-Withheld`.
 */
export function okSecretResponse<T extends z.ZodType>(description: string, schema: T) {
  return {
    200: {
      description,
      headers: z.object({
        [IDEMPOTENT_WITHHELD_HEADER]: z.string().optional().openapi({
          description:
            'Only on a replay: the fields that held a secret in the first answer, `null` here (the secret is never stored)',
        }),
      }),
      content: { 'application/json': { schema } },
    },
  };
}

export function jsonBody<T extends z.ZodType>(schema: T) {
  return { required: true, content: { 'application/json': { schema } } } as const;
}
