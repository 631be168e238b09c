/**
 * The OpenAPI part of `npm run lint`: the document the API serves, built in this process from the app
 * (`servedOpenApiDocument`: no server, no PostgreSQL, no Redis), written to a temporary file and linted by
 * Redocly CLI under `redocly.yaml`. Any error or warning fails: a rule is kept, or turned off there with its
 * reason.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { servedOpenApiDocument } from '../apps/api/src/docs/served';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

type Problem = {
  ruleId: string;
  severity: 'error' | 'warn';
  message: string;
  location: { pointer?: string }[];
};

const dir = await mkdtemp(join(tmpdir(), 'stampcard-openapi-'));
try {
  const file = join(dir, 'openapi.json');
  await writeFile(file, JSON.stringify(await servedOpenApiDocument(), null, 2));
  const output = await new Promise<string>((resolve, reject) => {
    execFile(
      join(ROOT, 'node_modules/.bin/redocly'),
      ['lint', file, '--config', join(ROOT, 'redocly.yaml'), '--format', 'json'],
      {
        cwd: ROOT,
        maxBuffer: 64 * 1024 * 1024,
        // No telemetry and no update check: a lint sends nothing anywhere.
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      },
      // Redocly exits 1 when it finds an error: the JSON on stdout says what, either way.
      (err, stdout) =>
        stdout.trim() ? resolve(stdout) : reject(err ?? new Error('redocly printed nothing')),
    );
  });
  const { problems } = JSON.parse(output.slice(output.indexOf('{'))) as { problems: Problem[] };
  for (const p of problems) {
    console.error(`${p.severity} ${p.ruleId} at ${p.location[0]?.pointer ?? '#'}: ${p.message}`);
  }
  if (problems.length > 0) {
    console.error(`OpenAPI document: ${problems.length} problem(s) (redocly.yaml)`);
    process.exitCode = 1;
  } else {
    console.log('OpenAPI document: no problems (Redocly, redocly.yaml)');
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
