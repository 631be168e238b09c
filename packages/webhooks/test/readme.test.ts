import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../test/support/processes';
import { generateSecret } from '../src/index';

/**
 * The package as a receiver outside this repository gets it: its build (the global setup runs `npm run
 * build`), installed by folder into a project of its own (a link under node_modules, as `npm install <dir>`
 * makes), used from plain `node` and from TypeScript with `"moduleResolution": "nodenext"`.
 */
const PACKAGE = fileURLToPath(new URL('..', import.meta.url));
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/** The README's receiver, as written there. */
function readmeReceiver(): string {
  const readme = readFileSync(join(PACKAGE, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## A receiver'));
  const code = section.match(/```js\n([\s\S]*?)```/)?.[1];
  expect(code).toBeDefined();
  expect(code).toContain("from '@stampcard/webhooks'");
  return code!;
}

let project: string;

beforeAll(() => {
  project = mkdtempSync(join(tmpdir(), 'stampcard-receiver-'));
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'receiver', private: true }));
  mkdirSync(join(project, 'node_modules/@stampcard'), { recursive: true });
  symlinkSync(PACKAGE, join(project, 'node_modules/@stampcard/webhooks'));
});
afterAll(() => rmSync(project, { recursive: true, force: true }));

describe("the README's receiver", () => {
  let receiver: ChildProcess;
  let output = '';
  let url: string;
  const secret = generateSecret();

  beforeAll(async () => {
    const code = readmeReceiver();
    // Its port, and only that, is this test's: 8080 may be taken.
    expect(code.match(/\.listen\(8080\)/g)).toHaveLength(1);
    const port = await freePort();
    writeFileSync(join(project, 'receiver.mjs'), code.replace('.listen(8080)', `.listen(${port})`));
    const { NODE_OPTIONS: _, ...env } = process.env;
    // Plain node, no loader or flag: `WEBHOOK_SECRET=… node receiver.mjs`, as the README runs it.
    receiver = spawn(process.execPath, ['receiver.mjs'], {
      cwd: project,
      env: { ...env, WEBHOOK_SECRET: secret },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    receiver.stdout?.on('data', (d) => (output += d));
    receiver.stderr?.on('data', (d) => (output += d));
    url = `http://127.0.0.1:${port}/`;
    const deadline = Date.now() + 15_000;
    for (;;) {
      if (receiver.exitCode !== null) throw new Error(`the receiver exited:\n${output}`);
      const up = await fetch(url, { method: 'POST' }).then(
        () => true,
        () => false,
      );
      if (up) break;
      if (Date.now() > deadline) throw new Error(`the receiver never listened:\n${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  });
  afterAll(() => {
    receiver?.kill();
  });

  /** A delivery signed by the reference library, not by this package. */
  function delivery(body: string, signingSecret = secret) {
    const id = `msg_${Date.now()}`;
    const at = new Date();
    return {
      body,
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': new Webhook(signingSecret).sign(id, at, body),
      },
    };
  }

  it('accepts a signed delivery with 204 and hands on the verified event', async () => {
    const body = JSON.stringify({ type: 'PARTICIPANT_REACHED_A_GOAL', timestamp: Date.now(), data: {} });
    const res = await fetch(url, { method: 'POST', ...delivery(body) });
    expect(res.status).toBe(204);
    await expect.poll(() => output).toContain('PARTICIPANT_REACHED_A_GOAL');
  });

  it('refuses with 400 a delivery signed with another secret, or changed after signing', async () => {
    const body = JSON.stringify({ type: 'LOYALTY_ACTION_APPLIED', timestamp: Date.now(), data: {} });
    const forged = await fetch(url, { method: 'POST', ...delivery(body, generateSecret()) });
    expect(forged.status).toBe(400);
    const signed = delivery(body);
    const tampered = await fetch(url, {
      method: 'POST',
      headers: signed.headers,
      body: body.replace('LOYALTY_ACTION_APPLIED', 'PARTICIPANT_REACHED_A_GOAL'),
    });
    expect(tampered.status).toBe(400);
    const unsigned = await fetch(url, { method: 'POST', body });
    expect(unsigned.status).toBe(400);
    expect(output).not.toContain('LOYALTY_ACTION_APPLIED');
  });
});

describe('its declarations', () => {
  it('type a TypeScript receiver compiled with "moduleResolution": "nodenext"', async () => {
    const dir = join(project, 'typed');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          noEmit: true,
          types: ['node'],
          typeRoots: [join(ROOT, 'node_modules/@types')],
        },
        files: ['receiver.ts'],
      }),
    );
    writeFileSync(
      join(dir, 'receiver.ts'),
      [
        "import { verify, WebhookVerificationError, type VerifyInput } from '@stampcard/webhooks';",
        "const input: VerifyInput = { headers: {}, body: '', secret: 'whsec_x' };",
        'try { verify(input); } catch (err) { if (err instanceof WebhookVerificationError) console.log(err.reason); }',
        '// @ts-expect-error: the secret is required',
        "verify({ headers: {}, body: '' });",
      ].join('\n'),
    );
    const tsc = join(ROOT, 'node_modules/.bin/tsc');
    const run = await promisify(execFile)(tsc, ['-p', dir]).then(
      () => ({ code: 0, out: '' }),
      (err: { code: number; stdout: string }) => ({ code: err.code, out: err.stdout }),
    );
    expect(run.out).toBe('');
    expect(run.code).toBe(0);
  });
});
