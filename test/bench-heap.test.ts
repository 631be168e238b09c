import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HeapSampler } from '../bench/heap';
import { freePort } from '../bench/service';

/**
 * `BENCH_HEAP_PROF`'s sampler against a real Node process with its inspector on loopback: a process that
 * allocates all the time, as a service under load does.
 */
describe("npm run bench's heap sampler", () => {
  let child: ChildProcess;
  let port: number;
  let dir: string;

  beforeAll(async () => {
    port = await freePort();
    dir = await mkdtemp(join(tmpdir(), 'stampcard-heap-'));
    child = spawn(
      process.execPath,
      [
        `--inspect=127.0.0.1:${port}`,
        '-e',
        'setInterval(() => { globalThis.kept = Array.from({ length: 2000 }, (_, i) => ({ i })); }, 2);',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    // The inspector says it listens on stderr.
    await new Promise<void>((resolve, reject) => {
      let said = '';
      child.stderr!.on('data', (chunk: Buffer) => {
        said += chunk.toString();
        if (said.includes('Debugger listening')) resolve();
      });
      child.once('exit', () => reject(new Error(`the process exited: ${said}`)));
    });
  });

  afterAll(async () => {
    child.kill();
    await rm(dir, { recursive: true, force: true });
  });

  it('counts what a process allocates, garbage included, phase by phase, and writes each phase its profile', async () => {
    const sampler = new HeapSampler(port, dir);
    await sampler.start();
    await new Promise((r) => setTimeout(r, 300));
    // About 2,000 small objects every 2 ms: megabytes in 300 ms, nearly all of it collected young.
    const first = await sampler.rotate('first phase');
    expect(first).toBeGreaterThan(1024 * 1024);
    const profile = JSON.parse(await readFile(join(dir, 'first-phase.heapprofile'), 'utf8'));
    expect(profile.head.children.length).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 100));
    expect(await sampler.stop('second')).toBeGreaterThan(0);
    await readFile(join(dir, 'second.heapprofile'), 'utf8');
    // Stopped, it is disconnected: another phase is refused, not left waiting.
    await expect(sampler.rotate('third')).rejects.toThrow('the heap sampler is not connected');
  });

  it('refuses to start where no inspector listens', async () => {
    const sampler = new HeapSampler(await freePort(), dir);
    await expect(sampler.start()).rejects.toThrow();
  });
});
