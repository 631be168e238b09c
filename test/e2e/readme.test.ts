import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { accounts } from '@stampcard/db';
import { describe, expect, it } from 'vitest';
import { makeWorld } from '../support/factories';
import { runToEnd } from '../support/processes';
import { OPERATOR_TOKEN } from '../support/stack';
import { useTestStack } from '../support/use';

const README = fileURLToPath(new URL('../../README.md', import.meta.url));
const WEBHOOKS_DOC = fileURLToPath(new URL('../../docs/webhooks.md', import.meta.url));
const PLACEHOLDER = 'export OPERATOR_TOKEN=$(cat .stampcard/operator-token)';

/** The shell blocks of the README's "Try it" section, as a user pastes them: the set-up first. */
function walkthroughBlocks(): string[] {
  const text = readFileSync(README, 'utf8');
  const section = text.slice(text.indexOf('## Try it'), text.indexOf('## How it works'));
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
  expect(blocks.length).toBeGreaterThanOrEqual(2);
  expect(blocks.join('\n').split(PLACEHOLDER)).toHaveLength(2);
  expect(blocks[0]).toContain(PLACEHOLDER);
  return blocks;
}

const walkthrough = () => walkthroughBlocks().join('\n');

const runBash = (script: string, env: Record<string, string>) => runToEnd('bash', ['-c', script], env);

const stack = useTestStack({ http: true });

describe("the README's walkthrough", () => {
  it('runs as written against a running service, and the second action unlocks the reward', async () => {
    const script = walkthrough().replace(PLACEHOLDER, `export OPERATOR_TOKEN=${OPERATOR_TOKEN}`);
    const run = await runBash(script, { STAMPCARD_URL: stack.baseUrl! });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('"message":"Participant added and loyalty action accepted"');
    expect(run.stdout).toMatch(/"status":"APPLIED".*"unlockedRewards":\[\{/s);
    expect(run.stdout).toContain('"loyaltyActionCount":2');
    expect(run.stdout).toMatch(/^Ready: campaign \w+, reward crew_\w+, API key in \$API_KEY$/m);
  });

  it('registers a webhook endpoint as docs/webhooks.md shows (operator, then ADMIN key), and the answer carries its secret once', async () => {
    const section = readFileSync(WEBHOOKS_DOC, 'utf8');
    // The operator's call, then the same with the account's ADMIN key.
    const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].slice(0, 2).map((m) => m[1]!);
    expect(blocks[1]).toContain('$API_KEY');
    const w = await makeWorld(stack.ctx);
    for (const block of blocks) {
      const run = await runBash(`set -euo pipefail\n${block}`, {
        B: stack.baseUrl!,
        CAMPAIGN_ID: w.campaign.id,
        OPERATOR_TOKEN,
        API_KEY: w.key,
      });
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      const endpoint = JSON.parse(run.stdout);
      expect(endpoint).toMatchObject({
        id: expect.stringMatching(/^ep_/),
        kind: 'NOTIFY',
        eventTypes: ['PARTICIPANT_REACHED_A_GOAL'],
        secret: expect.stringMatching(/^whsec_/),
      });
    }
  });

  it('is safe to paste: nothing in it can close the shell it is pasted into', () => {
    // `set -e` (or an `exit`) in an interactive shell closes it at the first failing command.
    expect(walkthrough()).not.toMatch(/^\s*(set\s+-\w*e|set\s+-o\s+errexit|exit)\b/m);
  });

  it('stops at the first step that fails, shows its error body, and leaves the shell running', async () => {
    const before = await stack.ctx.db.$count(accounts);
    const [setup] = walkthroughBlocks();
    const script = setup!.replace(PLACEHOLDER, 'export OPERATOR_TOKEN=op_not_the_right_token_000');
    // As pasted into a shell that goes on: the next line runs and sees the set-up's status.
    const run = await runBash(`${script}\necho "set-up status $?"`, { STAMPCARD_URL: stack.baseUrl! });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('set-up status 1');
    expect(run.stdout).not.toContain('Ready:');
    expect(run.stderr).toContain('"code":"NOT_AUTHORIZED"');
    // Only the first request was made: its error is shown once, and nothing was created.
    expect(run.stderr.match(/NOT_AUTHORIZED/g)).toHaveLength(1);
    expect(await stack.ctx.db.$count(accounts)).toBe(before);
  });
});
