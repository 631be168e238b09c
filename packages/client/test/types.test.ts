import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { CLIENT_TYPES_PATH, clientTypes, servedDocument } from '../../../scripts/client-types';
import { GENERATE_COMMAND, typesFromDocument } from '../scripts/types';

/** The first line where two texts differ, for a message that shows where to look. */
function firstDifference(a: string, b: string): string {
  const x = a.split('\n');
  const y = b.split('\n');
  const i = x.findIndex((line, n) => line !== y[n]);
  const at = i === -1 ? x.length : i;
  return `line ${at + 1}: committed ${JSON.stringify(x[at] ?? '(end)')}, served ${JSON.stringify(y[at] ?? '(end)')}`;
}

describe('the generated types', () => {
  it('are those of the document the API serves', async () => {
    const committed = await readFile(CLIENT_TYPES_PATH, 'utf8');
    const served = await clientTypes();
    if (committed !== served) {
      expect.fail(
        `packages/client/src/openapi.ts is not what the served OpenAPI document generates (${firstDifference(committed, served)}): run \`${GENERATE_COMMAND}\` and commit the file`,
      );
    }
  });

  it('change with the document: an operation added there is a path here', async () => {
    const doc = (await servedDocument()) as { paths: Record<string, unknown> };
    doc.paths['/v1/not-served-yet'] = {
      get: {
        responses: {
          '200': { description: 'ok', content: { 'application/json': { schema: { type: 'object' } } } },
        },
      },
    };
    const types = await typesFromDocument(doc);
    expect(types).toContain('"/v1/not-served-yet"');
    expect(types).not.toBe(await clientTypes());
  });
});
