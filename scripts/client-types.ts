/**
 * `npm run client:generate`: builds the API's OpenAPI document in this process, from the same `createApp` the
 * service runs (no server, no store), and writes the typed client's types from it
 * (`packages/client/src/openapi.ts`). `packages/client/test/types.test.ts` fails when the committed file
 * differs from what this writes.
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { servedOpenApiDocument } from '@stampcard/api';
import { TYPES_FILE, typesFromDocument } from '../packages/client/scripts/types';

export const CLIENT_TYPES_PATH = fileURLToPath(new URL(`../packages/client/${TYPES_FILE}`, import.meta.url));

/** The document `GET /v1/openapi.json` answers, built without PostgreSQL, Redis or a listening port. */
export const servedDocument = servedOpenApiDocument;

/** The content `packages/client/src/openapi.ts` must have. */
export async function clientTypes(): Promise<string> {
  return typesFromDocument(await servedDocument());
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await writeFile(CLIENT_TYPES_PATH, await clientTypes());
  console.log(`wrote ${CLIENT_TYPES_PATH}`);
}
