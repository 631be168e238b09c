/**
 * Reads a `.cpuprofile` (what `BENCH_CPU_PROF` leaves in `bench/results/profiles/<process>/`) and prints where
 * the busy time went: garbage collection, the program, each package (`node_modules/<name>`), Node's own code and
 * ours; then the functions with the most self time and with the most inclusive time. With `--seconds N`, only
 * the busiest N seconds of the profile count (a bench phase is a busy stretch between idle ones); with `--after S`,
 * only what came S seconds or more after the process started (its start-up is a busy stretch too).
 *
 * npm run bench:profile -- bench/results/profiles/dispatcher1/CPU….cpuprofile [--after 10] [--seconds 2] [--top 25]
 *
 * A `.heapprofile` (`BENCH_HEAP_PROF`) is read by {@link summarizeHeap} instead: `--top` only.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

type CallFrame = { functionName: string; url: string; lineNumber: number };
type ProfileNode = { id: number; callFrame: CallFrame; children?: number[] };
type Profile = { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] };

/** The share of one sample's time, named. */
type Tally = Map<string, number>;

const add = (tally: Tally, key: string, us: number) => tally.set(key, (tally.get(key) ?? 0) + us);

/** Where a frame's code comes from: a package, Node itself, V8's pseudo-frames, or the project. */
export function origin(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith('node:')) return 'node';
  return 'stampcard';
}

const label = (frame: CallFrame) => {
  const file = frame.url.replace(/^.*node_modules\//, '').replace(/^.*\/(apps|packages)\//, '$1/');
  return `${frame.functionName || '(anonymous)'} ${file}:${frame.lineNumber + 1}`;
};

/** The samples' times, and the first and last sample index of the busiest `seconds` (all when not given). */
function window(
  profile: Profile,
  idle: Set<number>,
  seconds: number | undefined,
  after: number,
): [number, number] {
  const n = profile.samples.length;
  let start = 0;
  for (let t = 0; start < n && t < after * 1e6; start++) t += profile.timeDeltas[start]!;
  if (!seconds) return [start, n];
  const span = seconds * 1e6;
  let best: [number, number] = [start, n];
  let bestBusy = -1;
  let busy = 0;
  let from = start;
  let elapsedFrom = 0;
  let elapsed = 0;
  for (let to = start; to < n; to++) {
    elapsed += profile.timeDeltas[to]!;
    if (!idle.has(profile.samples[to]!)) busy += profile.timeDeltas[to]!;
    while (elapsed - elapsedFrom > span) {
      elapsedFrom += profile.timeDeltas[from]!;
      if (!idle.has(profile.samples[from]!)) busy -= profile.timeDeltas[from]!;
      from++;
    }
    if (busy > bestBusy) {
      bestBusy = busy;
      best = [from, to + 1];
    }
  }
  return best;
}

export function summarize(
  profile: Profile,
  opts: { seconds?: number; after?: number; top?: number } = {},
): string {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const idle = new Set(profile.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
  const [from, to] = window(profile, idle, opts.seconds, opts.after ?? 0);

  const origins: Tally = new Map();
  const selfTime: Tally = new Map();
  const inclusive: Tally = new Map();
  let wall = 0;
  let busy = 0;
  for (let i = from; i < to; i++) {
    // A sample's time is the delta to the next one.
    const us = profile.timeDeltas[i + 1] ?? 0;
    wall += us;
    const id = profile.samples[i]!;
    if (idle.has(id)) continue;
    busy += us;
    const frame = byId.get(id)!.callFrame;
    add(origins, origin(frame), us);
    add(selfTime, label(frame), us);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const name = label(byId.get(at)!.callFrame);
      if (byId.get(at)!.callFrame.functionName === '(root)' || seen.has(name)) continue;
      seen.add(name);
      add(inclusive, name, us);
    }
  }
  const top = opts.top ?? 20;
  const pct = (us: number) => `${((100 * us) / Math.max(busy, 1)).toFixed(1).padStart(5)} %`;
  const rows = (tally: Tally, n: number) =>
    [...tally]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, us]) => `  ${pct(us)}  ${(us / 1000).toFixed(0).padStart(6)} ms  ${name}`);
  return [
    `${(wall / 1e6).toFixed(2)} s of profile, ${(busy / 1e6).toFixed(2)} s busy (${((100 * busy) / Math.max(wall, 1)).toFixed(0)} %); shares of the busy time:`,
    'by origin (self time):',
    ...rows(origins, 30),
    `functions, self time (top ${top}):`,
    ...rows(selfTime, top),
    `functions, inclusive time (top ${top}):`,
    ...rows(inclusive, top),
  ].join('\n');
}

/** A sampling heap profile as V8 writes it (`BENCH_HEAP_PROF`): a tree of call frames, each with its sampled bytes. */
type HeapNode = { callFrame: CallFrame; selfSize: number; children: HeapNode[] };

/**
 * Reads a `.heapprofile` (`BENCH_HEAP_PROF`, and with `BENCH_HEAP_PROF_PROMOTED=1` only what outlived a young
 * collection): the sampled bytes by origin, by the function that allocated them, and by the nearest function of
 * the project's own on the stack (a package's allocation on behalf of our code counts there too).
 */
export function summarizeHeap(profile: { head: HeapNode }, opts: { top?: number } = {}): string {
  const origins: Tally = new Map();
  const self: Tally = new Map();
  const ours: Tally = new Map();
  let total = 0;
  const walk = (node: HeapNode, nearestOurs: string | undefined) => {
    const own = origin(node.callFrame) === 'stampcard' ? label(node.callFrame) : nearestOurs;
    if (node.selfSize > 0) {
      total += node.selfSize;
      add(origins, origin(node.callFrame), node.selfSize);
      add(self, label(node.callFrame), node.selfSize);
      if (own) add(ours, own, node.selfSize);
    }
    for (const child of node.children) walk(child, own);
  };
  walk(profile.head, undefined);
  const top = opts.top ?? 20;
  const rows = (tally: Tally, n: number) =>
    [...tally]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(
        ([name, bytes]) =>
          `  ${((100 * bytes) / Math.max(total, 1)).toFixed(1).padStart(5)} %  ${(bytes / 1e6).toFixed(1).padStart(7)} MB  ${name}`,
      );
  return [
    `${(total / 1e6).toFixed(1)} MB sampled; shares:`,
    'by origin:',
    ...rows(origins, 30),
    `functions that allocated (top ${top}):`,
    ...rows(self, top),
    `nearest function of the project's own (top ${top}):`,
    ...rows(ours, top),
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { seconds: { type: 'string' }, after: { type: 'string' }, top: { type: 'string' } },
  });
  if (positionals.length === 0) {
    console.error(
      'usage: npm run bench:profile -- <file.cpuprofile | file.heapprofile>… [--after S] [--seconds N] [--top N]',
    );
    process.exit(2);
  }
  for (const file of positionals) {
    console.log(`== ${file}`);
    if (file.endsWith('.heapprofile')) {
      const top = values.top ? Number(values.top) : undefined;
      console.log(summarizeHeap(JSON.parse(readFileSync(file, 'utf8')), { top }));
      continue;
    }
    const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
    console.log(
      summarize(profile, {
        seconds: values.seconds ? Number(values.seconds) : undefined,
        after: values.after ? Number(values.after) : undefined,
        top: values.top ? Number(values.top) : undefined,
      }),
    );
  }
}
