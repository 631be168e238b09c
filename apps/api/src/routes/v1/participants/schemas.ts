import { z } from '@hono/zod-openapi';
import { FRAUD_RISK_LEVELS } from '@stampcard/db';
import {
  campaignIdParam,
  emailSchema,
  ipAddressSchema,
  metadataSchema,
  nameSchema,
  notesSchema,
  pageLimit,
} from '../../../lib/schemas';
import { Participant } from '../../../lib/views';

/** Shared by the participant routes that change or list participants. */

export const participantParams = z.object({
  id: campaignIdParam,
  idOrEmail: z
    .string()
    .min(1)
    .max(254)
    .openapi({
      param: { name: 'idOrEmail', in: 'path' },
      example: 'ada@example.com',
      description: 'A segment that contains `@` is an email; anything else is a participant id',
    }),
});

export const AddParticipantBody = z
  .strictObject({
    email: emailSchema,
    firstName: nameSchema.optional(),
    lastName: nameSchema.optional(),
    ipAddress: ipAddressSchema.optional(),
    fingerprint: z.string().max(255).optional(),
    metadata: metadataSchema.optional(),
    notes: notesSchema.optional(),
  })
  .openapi('AddParticipant');

/** A form body sends every value as a string: a numeric one is read as its number. */
const increment = z.union([
  z.number(),
  z.string().regex(/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/, { message: 'must be a number' }),
]);

export const metadataIncrementSchema = z
  .record(z.string().min(1).max(255), increment)
  .refine((m) => Object.keys(m).length <= 100, { message: 'metadataIncrement has at most 100 keys' })
  .openapi({
    description:
      'Numbers to add to metadata values, atomically (e.g. `{ "points": 25 }`; negative ones subtract). A key absent or null counts from 0; a stored value that is not a number is a 400.',
  });

export const UpdateParticipantBody = z
  .strictObject({
    firstName: nameSchema.nullable().optional(),
    lastName: nameSchema.nullable().optional(),
    email: emailSchema.optional().openapi({
      description: 'A new email; one another participant of the campaign has is a 400 naming `email`',
    }),
    notes: notesSchema.nullable().optional(),
    metadata: metadataSchema.optional().openapi({
      description:
        'Merged into the stored metadata, key by key; a `null` value deletes its key. The result is held to the same limits (100 keys, 16 KiB).',
    }),
    metadataIncrement: metadataIncrementSchema.optional(),
  })
  .refine((v) => Object.keys(v).length > 0, { message: 'nothing to change' })
  .openapi('UpdateParticipant');

export const participantListQuery = z.strictObject({
  limit: pageLimit,
  nextId: z.string().min(1).max(64).optional().openapi({ description: 'The `nextId` of the previous page' }),
  fraudRiskLevel: z.enum(FRAUD_RISK_LEVELS).optional(),
  isWinner: z
    .enum(['true', 'false'])
    .optional()
    .openapi({ description: 'true: only participants with an approved reward; false: only those without' }),
});

/** `listParticipants`. */
export const ParticipantPage = z
  .strictObject({
    participants: z.array(Participant),
    limit: z.number().int().openapi({
      description:
        'The `limit` asked for: the most items a page holds. A page may hold fewer (its byte budget) while `more` is true',
    }),
    nextId: z.string().nullable().openapi({
      description: 'The `nextId` of the next page: the id of its first participant (null on the last page)',
    }),
    more: z.boolean().openapi({ description: 'Whether another page follows' }),
  })
  .openapi('ParticipantPage');

/** `deleteParticipant`. */
export const ParticipantRemoved = z.strictObject({ success: z.literal(true) });
