import { createLogger } from '@stampcard/config';
import { systemClock } from '@stampcard/core';
import { createApp } from '../app';
import type { Deps } from '../env';
import { OPENAPI_PATH } from '../lib/docs-paths';

/**
 * A store the document never reads. `known` holds what building the app reads of it; reading anything else
 * means the document came to depend on a store, which is a bug, said as such.
 */
function absent(name: string, known: Record<string, unknown> = {}): never {
  return new Proxy(known as never, {
    get(target, prop) {
      if (Object.hasOwn(target, prop)) return target[prop];
      throw new Error(`the OpenAPI document was built without ${name}, yet it read ${String(prop)}`);
    },
  });
}

/**
 * The document `GET /v1/openapi.json` answers, exactly: asked of the app `createApp` builds, in this process,
 * with no PostgreSQL, Redis or listening port (for the linter and client generation; `openApiDocument` is the
 * same for an app you built).
 */
export async function servedOpenApiDocument(): Promise<Record<string, unknown>> {
  const deps: Deps = {
    db: absent('PostgreSQL'),
    redis: absent('Redis'),
    // The queue dashboard is mounted over the list of queues: an empty one.
    queues: absent('the queues', { all: [] }),
    clock: systemClock,
    logger: createLogger({ level: 'silent', name: 'openapi' }),
    operatorToken: 'unused-by-the-document',
  };
  const res = await createApp(deps).request(OPENAPI_PATH);
  if (res.status !== 200) throw new Error(`${OPENAPI_PATH} answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as Record<string, unknown>;
}
