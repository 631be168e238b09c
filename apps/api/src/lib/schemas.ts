import { z } from '@hono/zod-openapi';
import {
  emailSchema as coreEmailSchema,
  metadataSchema as coreMetadataSchema,
  nameSchema as coreNameSchema,
  notesSchema as coreNotesSchema,
  IP_ADDRESS_MESSAGE,
  ipv4Schema,
  ipv6Schema,
  METADATA_MAX_KEYS,
  PAGE_BUDGET_BYTES,
} from '@stampcard/core';
import { IDEMPOTENT_WITHHELD_HEADER } from '../middleware/idempotency';
import { errorResponsesFor, OPERATOR_ERRORS, PUBLIC_ERRORS } from './error-schema';

/** Bounds of a PostgreSQL `integer` column: every integer input is held to what its column stores. */
export const PG_INT_MIN = -2_147_483_648;
export const PG_INT_MAX = 2_147_483_647;

/** An integer in `[min, max]`, `max` at most what an `integer` column holds. */
export const int = (min: number, max: number = PG_INT_MAX) => z.number().int().min(min).max(max);

/** Shared input pieces, with the limits of contract section 1 (core's, which an import's rows are held to too). */
export const emailSchema = coreEmailSchema;
export const nameSchema = coreNameSchema;
export const notesSchema = coreNotesSchema;

/**
 * `schema.openapi(metadata)` for a schema core made: one made before `@hono/zod-openapi` added `.openapi()` to
 * zod has no such method of its own, and the prototype's works on any schema (as `named` in `./views`).
 */
const documented = <T extends z.ZodType>(schema: T, metadata: object): T =>
  (z.ZodType.prototype.openapi as (this: T, m: object) => T).call(schema, metadata);

export const metadataSchema = documented(coreMetadataSchema, {
  description:
    'Shallow object of custom key-value pairs: at most 100 keys of 1 to 255 characters, 16 KiB as JSON',
  // The refinements of core's schema, where JSON Schema can say them (the byte bound it cannot).
  maxProperties: METADATA_MAX_KEYS,
  // OpenAPI 3.1's JSON Schema has it; the metadata type of zod-to-openapi does not name it.
  ...({ propertyNames: { type: 'string', minLength: 1, maxLength: 255 } } as object),
});

/**
 * A participant's IP address, as anti-fraud checks it, in the standard formats. The two are disjoint, so `anyOf`
 * says what `oneOf` would (a linter cannot tell formats apart, and would take a `oneOf` for overlapping).
 */
export const ipAddressSchema = z
  .union([documented(ipv4Schema, { format: 'ipv4' }), documented(ipv6Schema, { format: 'ipv6' })], {
    message: IP_ADDRESS_MESSAGE,
  })
  .openapi({ description: 'An IPv4 or IPv6 address' });

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

/** The 200 answer of an export: a file, CSV (the default) or NDJSON (`Accept: application/x-ndjson`). */
export function exportFileResponse(description: string) {
  return {
    200: {
      description,
      content: {
        'text/csv': { schema: z.string().openapi({ description: 'A header line, then one record a row' }) },
        'application/x-ndjson': { schema: z.string().openapi({ description: 'One JSON object a line' }) },
      },
    },
  };
}

/** What every export's description says of its format, its failures and its bounds. */
export const EXPORT_TERMS =
  'Streamed: its memory does not grow with the rows. CSV (RFC 4180, a header line, `\\r\\n` between records) by default; NDJSON (one JSON object a line) with `Accept: application/x-ndjson`. JSON objects and arrays are JSON text in a CSV cell, booleans `true`/`false`, null an empty cell. Values are as stored: a spreadsheet may read a cell that starts with `=`, `+`, `-` or `@` as a formula, so import the file as text. A download that fails midway is cut off (the connection breaks, the body does not end): never take a partial file for a whole one. At most `EXPORT_CONCURRENCY` (2 by default) run at once on an API process (429 `RATE_LIMIT`, `policyName` `CONCURRENCY`, with `Retry-After`); a reader that stops reading for 10 s loses its export.';

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
