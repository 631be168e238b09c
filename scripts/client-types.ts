/**
 * `npm run client:generate`: builds the API's OpenAPI document in this process, from the same `createApp` the
 * service runs (no server, no store), and writes the typed client's types from it
 * (`packages/client/src/openapi.ts`). `packages/client/test/types.test.ts` fails when the committed file
 * differs from what this writes.
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { createApp, type Deps, OPENAPI_PATH } from '@stampcard/api';
import { createLogger } from '@stampcard/config';
import { systemClock } from '@stampcard/core';
import { TYPES_FILE, typesFromDocument } from '../packages/client/scripts/types';

export const CLIENT_TYPES_PATH = fileURLToPath(new URL(`../packages/client/${TYPES_FILE}`, import.meta.url));

/**
 * A store the document never reads (`known` holds what building the app reads of it): reading anything else
 * is a bug of this script, said as such.
 */
function absent(name: string, known: Record<string, unknown> = {}): never {
  return new Proxy(known as never, {
    get(target, prop) {
      if (Object.hasOwn(target, prop)) return target[prop];
      throw new Error(`the OpenAPI document was built without ${name}, yet it read ${String(prop)}`);
    },
  });
}

/** The document `GET /v1/openapi.json` answers, built without PostgreSQL, Redis or a listening port. */
export async function servedDocument(): Promise<object> {
  const deps: Deps = {
    db: absent('PostgreSQL'),
    redis: absent('Redis'),
    // The queue dashboard is mounted over the list of queues: an empty one.
    queues: absent('the queues', { all: [] }),
    clock: systemClock,
    logger: createLogger({ level: 'silent', name: 'client-types' }),
    operatorToken: 'op_unused_for_the_document',
  };
  const res = await createApp(deps).request(OPENAPI_PATH);
  if (res.status !== 200) throw new Error(`${OPENAPI_PATH} answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as object;
}

/** The content `packages/client/src/openapi.ts` must have. */
export async function clientTypes(): Promise<string> {
  return typesFromDocument(await servedDocument());
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await writeFile(CLIENT_TYPES_PATH, await clientTypes());
  console.log(`wrote ${CLIENT_TYPES_PATH}`);
}
