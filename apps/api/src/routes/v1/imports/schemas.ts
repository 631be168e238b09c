import { z } from '@hono/zod-openapi';
import { IMPORT_MAX_CARRIED_COUNT } from '@stampcard/core';
import { ImportJsonBody, importQuery } from '../../../lib/imports';
import { campaignIdParam } from '../../../lib/schemas';
import { ParticipantImport } from '../../../lib/views';

export const importParams = z.object({
  id: campaignIdParam,
  importId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'importId', in: 'path' }, example: 'imp_3kQ9aZ7xY2bCdE4fG5hJ' }),
});

/** What the upload routes say of the file, the rows and the rules, once. */
export const IMPORT_TERMS = `A CSV file (\`Content-Type: text/csv\`, up to 50 MiB, streamed: it is never held whole in memory) whose header names its columns, in any order: \`email\` (required), \`firstName\`, \`lastName\`, \`notes\`, \`ipAddress\`, \`fingerprint\`, \`metadata.<key>\` (one per metadata key: a cell that reads as a number is stored as a number, \`true\`/\`false\` as a boolean, anything else as text) and \`loyaltyActionCount.<rewardId>\` (a count to carry over, 0 to ${IMPORT_MAX_CARRIED_COUNT}); or a JSON array of rows (\`application/json\`, up to 1 MiB and 10,000 rows). An empty cell leaves its field as it is. A header with an unknown column, no \`email\`, or a reward that is not the campaign's is a 400 with nothing stored.

The import runs in the background (202, \`status\` \`QUEUED\`; follow it at \`Location\`): the file is read through once to count its rows (\`rowsTotal\`; a file that is not valid CSV makes the import \`FAILED\` with the line, before any row is imported), then taken 500 rows at a time, each batch committed with its progress. A row whose email is new creates a participant (source \`IMPORT\`) exactly as an add would: anti-fraud, the lists and the IP throttle apply (by its \`ipAddress\` and \`fingerprint\`), and the participant quota is exact. A row whose email is the campaign's already changes that participant as an update would (\`PARTICIPANT_UPDATED\` naming the fields that changed). Carried-over counts become loyalty actions (their \`metadata\` says \`source: IMPORT\` and the import's id) that unlock rewards by the same rule and send the same events as any. A row that cannot be imported is refused with its reason (\`VALIDATION_ERROR\`, \`DUPLICATE_ROW\` for an email on an earlier row, \`PARTICIPANT_BLOCKED\`, \`USAGE_LIMIT\`) and the rest go on.

Nothing is imported twice: the same file with the same options, imported into the campaign again, answers the first import (200, \`Idempotent-Replayed: true\`) unless that one FAILED; so does the same \`Idempotency-Key\` (with another file it is a 400). A worker that dies mid-import resumes at the batch it was in, without doubling a row.`;

/** The upload's request, on the public and the operator route alike: the campaign, the options, the file. */
export const importUploadRequest = {
  params: z.object({ id: campaignIdParam }),
  query: importQuery,
  body: {
    required: false,
    description: 'The file: CSV, or a JSON array of rows',
    content: {
      'text/csv': {
        schema: z.string().openapi({ format: 'binary', description: 'A header line, then a row a line' }),
      },
      'application/json': { schema: ImportJsonBody },
    },
  },
};

/** The upload's answers but its errors: 202 with a new import, 200 with the one the same file made. */
export const importUploadResponses = {
  202: {
    description: 'The import, QUEUED',
    headers: z.object({ Location: z.string().openapi({ description: 'The import, on the public API' }) }),
    content: { 'application/json': { schema: ParticipantImport } },
  },
  200: {
    description: 'The import of the same file (or `Idempotency-Key`) already there',
    headers: z.object({
      Location: z.string().openapi({ description: 'The import, on the public API' }),
      'Idempotent-Replayed': z.literal('true'),
    }),
    content: { 'application/json': { schema: ParticipantImport } },
  },
};
