import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { request, WebSocket } from 'undici';

/** Bytes between two samples of V8's sampling heap profiler: a sample stands for about this much allocated. */
const SAMPLING_INTERVAL = 32 * 1024;

type ProfileNode = { selfSize: number; children: ProfileNode[] };

/**
 * `BENCH_HEAP_PROF_PROMOTED=1`: count only what outlives a young-generation collection (promoted to the old
 * generation, whether a full collection takes it back later or not), which is what makes full collections come
 * often. Read with the report's row and the `.heapprofile`s in that light.
 */
export const promotedOnly = () => process.env.BENCH_HEAP_PROF_PROMOTED === '1';

/** Bytes a sampling heap profile counts: every sample's allocation, whether it was collected since or not. */
const sampledBytes = (node: ProfileNode): number =>
  node.selfSize + node.children.reduce((sum, child) => sum + sampledBytes(child), 0);

/**
 * What a process allocates, phase by phase, from V8's sampling heap profiler driven over the inspector
 * protocol (the process runs with `--inspect` on a loopback port of its own). Unlike `--heap-prof`, which keeps
 * only what is still alive when it stops, this counts objects the garbage collector took back too: what a
 * request allocates, most of which dies young. Each phase's profile goes to `dir/<phase>.heapprofile` (Chrome
 * DevTools' Memory tab opens it).
 */
export class HeapSampler {
  private ws: WebSocket | null = null;
  private next = 1;
  private readonly pending = new Map<number, (result: unknown) => void>();

  constructor(
    private readonly port: number,
    private readonly dir: string,
  ) {}

  private call<T>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const ws = this.ws;
    if (!ws) return Promise.reject(new Error('the heap sampler is not connected'));
    const id = this.next++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${method} got no answer in 30 s`));
      }, 30_000);
      this.pending.set(id, (result) => {
        clearTimeout(timer);
        resolve(result as T);
      });
      ws.send(JSON.stringify({ id, method, params }));
    });
  }

  /** Connects to the process's inspector and starts sampling. */
  async start(): Promise<void> {
    const res = await request(`http://127.0.0.1:${this.port}/json/list`);
    const [target] = (await res.body.json()) as { webSocketDebuggerUrl: string }[];
    if (!target) throw new Error(`no inspector target on port ${this.port}`);
    const ws = new WebSocket(target.webSocketDebuggerUrl);
    await new Promise<void>((resolve, reject) => {
      ws.addEventListener('open', () => resolve(), { once: true });
      ws.addEventListener('error', () => reject(new Error('the inspector refused the connection')), {
        once: true,
      });
    });
    ws.addEventListener('message', (event) => {
      const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown };
      if (message.id === undefined) return;
      this.pending.get(message.id)?.(message.result);
      this.pending.delete(message.id);
    });
    this.ws = ws;
    await this.call('HeapProfiler.enable');
    await this.sample();
  }

  private sample() {
    return this.call('HeapProfiler.startSampling', {
      samplingInterval: SAMPLING_INTERVAL,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: !promotedOnly(),
    });
  }

  /** Ends `phase`'s profile (written to its file) and starts the next one's. Answers the bytes it counted. */
  async rotate(phase: string, again = true): Promise<number> {
    const { profile } = await this.call<{ profile: { head: ProfileNode } }>('HeapProfiler.stopSampling');
    if (again) await this.sample();
    await mkdir(this.dir, { recursive: true });
    await writeFile(join(this.dir, `${phase.replace(/\W+/g, '-')}.heapprofile`), JSON.stringify(profile));
    return sampledBytes(profile.head);
  }

  /** Ends the last phase's profile and disconnects. */
  async stop(phase: string): Promise<number> {
    try {
      return await this.rotate(phase, false);
    } finally {
      this.ws?.close();
      this.ws = null;
    }
  }
}
