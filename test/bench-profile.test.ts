import { describe, expect, it } from 'vitest';
import { origin, summarize, summarizeHeap } from '../bench/profile-summary';

/** A CPU profile as V8 writes it: a tree of call frames, and which one each sample (1 ms apart) was in. */
function profile(samples: string[]) {
  const frame = (id: number, functionName: string, url: string, children: number[] = []) => ({
    id,
    callFrame: { functionName, url, lineNumber: 0 },
    children,
  });
  const nodes = [
    frame(1, '(root)', '', [2, 3, 4, 5]),
    frame(2, '(idle)', ''),
    frame(3, '(garbage collector)', ''),
    frame(4, 'deliver', 'file:///srv/apps/dispatcher/src/deliver.ts', [6]),
    frame(5, 'moveToActive', 'file:///srv/node_modules/bullmq/dist/cjs/classes/worker.js'),
    frame(6, 'send', 'file:///srv/node_modules/undici/lib/client.js'),
  ];
  const ids: Record<string, number> = { idle: 2, gc: 3, ours: 4, bullmq: 5, undici: 6 };
  return {
    nodes,
    samples: samples.map((s) => ids[s]!),
    timeDeltas: samples.map(() => 1000),
  };
}

describe('npm run bench:profile', () => {
  it("names where a frame's code comes from: a package, Node, V8, or the project", () => {
    expect(origin({ functionName: 'x', url: 'file:///a/node_modules/@scope/pkg/i.js', lineNumber: 0 })).toBe(
      '@scope/pkg',
    );
    expect(origin({ functionName: 'x', url: 'node:net', lineNumber: 0 })).toBe('node');
    expect(origin({ functionName: '(program)', url: '', lineNumber: 0 })).toBe('(program)');
    expect(origin({ functionName: 'writeBuffer', url: '', lineNumber: 0 })).toBe('(native)');
    expect(origin({ functionName: 'x', url: 'file:///srv/apps/api/src/app.ts', lineNumber: 0 })).toBe(
      'stampcard',
    );
  });

  it('shares the busy time out by origin and by function, self and inclusive, leaving idle time out', () => {
    // A sample's time is the delta to the next one: the last sample counts nothing.
    const out = summarize(
      profile(['ours', 'undici', 'undici', 'bullmq', 'gc', 'idle', 'idle', 'ours', 'ours']),
    );
    expect(out).toMatch(/^0\.01 s of profile, 0\.01 s busy \(75 %\)/);
    expect(out).toContain(' 33.3 %       2 ms  undici');
    expect(out).toContain(' 16.7 %       1 ms  (garbage collector)');
    // Inclusive: the project's `deliver` ran itself twice (its last sample counts nothing) and called undici twice.
    expect(out).toMatch(
      /functions, inclusive time[\s\S]* 66\.7 %\s+4 ms {2}deliver apps\/dispatcher\/src\/deliver\.ts:1/,
    );
  });

  it('counts only the busiest N seconds after the first S when asked', () => {
    const busyLate = [
      ...Array(3000).fill('idle'),
      ...Array(2000).fill('bullmq'),
      ...Array(3000).fill('ours'),
    ];
    const all = summarize(profile(busyLate));
    expect(all).toMatch(/^8\.00 s of profile, 5\.00 s busy/);
    const window = summarize(profile(busyLate), { after: 4, seconds: 2 });
    expect(window).toMatch(/^2\.00 s of profile, 2\.00 s busy \(100 %\)/);
    const late = summarize(profile(busyLate), { after: 5.5, seconds: 1 });
    expect(late).toContain('100.0 %    1000 ms  stampcard');
  });

  it("shares a heap profile's bytes by the function that allocated them and by the nearest one of ours", () => {
    const node = (functionName: string, url: string, selfSize: number, children: unknown[] = []) => ({
      callFrame: { functionName, url, lineNumber: 0 },
      selfSize,
      children,
    });
    const out = summarizeHeap({
      head: node('(root)', '', 0, [
        node('deadline', 'file:///srv/apps/api/src/middleware/deadline.ts', 300, [
          node('pipeline', 'file:///srv/node_modules/ioredis/built/Pipeline.js', 500, [
            node('Command', 'file:///srv/node_modules/ioredis/built/Command.js', 100),
          ]),
        ]),
        node('stringify', 'file:///srv/node_modules/postgres/src/types.js', 100),
      ]),
    } as never);
    expect(out).toMatch(/^0\.0 MB sampled/);
    expect(out).toMatch(/by origin:\n\s+60\.0 % .* ioredis\n\s+30\.0 % .* stampcard\n\s+10\.0 % .* postgres/);
    expect(out).toMatch(/functions that allocated[\s\S]* 50\.0 % .* pipeline ioredis\/built\/Pipeline\.js:1/);
    // ioredis's bytes under our frame count for it; postgres's, with none of ours above, for none.
    expect(out).toMatch(
      /nearest function of the project's own[^\n]*\n\s+90\.0 % .* deadline apps\/api\/src\/middleware\/deadline\.ts:1\n?$/,
    );
  });
});
