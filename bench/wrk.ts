import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A request body numbered per request: `{n}` in `text` becomes the request's number, `{i}` that number modulo
 * `modulo` (which participant it is for). The same template drives wrk (in Lua) and the Node.js loads.
 */
export type BodyTemplate = { text: string; modulo: number };

/** The n-th body of `template`. */
export const renderBody = (template: BodyTemplate, n: number): string =>
  template.text.replaceAll('{n}', String(n)).replaceAll('{i}', String(n % template.modulo));

/** Whether wrk is installed (Debian's `wrk`). */
export function hasWrk(): boolean {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return true;
  } catch (err) {
    // wrk --version prints its version and exits 1: it is there when it could be run at all.
    return (err as NodeJS.ErrnoException).code !== 'ENOENT' && (err as { status?: number }).status === 1;
  }
}

export type WrkResult = {
  requests: number;
  durationS: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  /** ms */
  latencyMs: { p50: number; p90: number; p99: number; max: number };
};

const lua = (s: string) => JSON.stringify(s);

/**
 * The script: each thread numbers its requests so that across `instances` wrk processes (instance `instance`)
 * and their threads no two bodies are the same (`first` + instance + instances × (thread + threads × k)); each
 * thread counts answers by status; the run ends with one `WRK_RESULT {json}` line.
 */
function script(opts: Omit<WrkRun, 'url' | 'connections' | 'durationS'> & { threads: number }): string {
  const headers = Object.entries(opts.headers)
    .map(([k, v]) => `wrk.headers[${lua(k)}] = ${lua(v)}`)
    .join('\n');
  return `
wrk.method = "POST"
${headers}
local template = ${lua(opts.body.text)}
local modulo = ${opts.body.modulo}
local threads = {}
function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end
function init(args)
  counter = 0
  codes = {}
end
function request()
  local n = ${opts.first} + ${opts.instance} + ${opts.instances} * (id + ${opts.threads} * counter)
  counter = counter + 1
  local body = string.gsub(string.gsub(template, "{n}", tostring(n)), "{i}", tostring(n % modulo))
  return wrk.format(nil, ${lua(opts.path)}, nil, body)
end
function response(status, headers, body)
  codes[status] = (codes[status] or 0) + 1
end
function done(summary, latency, requests)
  local all = {}
  for _, t in ipairs(threads) do
    for k, v in pairs(t:get("codes")) do all[k] = (all[k] or 0) + v end
  end
  local parts = {}
  for k, v in pairs(all) do table.insert(parts, string.format('"%d":%d', k, v)) end
  local e = summary.errors
  io.write(string.format(
    'WRK_RESULT {"requests":%d,"durationUs":%d,"errors":%d,"timeouts":%d,"p50":%d,"p90":%d,"p99":%d,"max":%d,"codes":{%s}}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    table.concat(parts, ",")))
end
`;
}

/** One wrk process's run: `connections` keep-alive connections to `url` for `durationS`. */
export type WrkRun = {
  url: string;
  connections: number;
  durationS: number;
  path: string;
  headers: Record<string, string>;
  body: BodyTemplate;
  /** Numbers the bodies from here (a warm-up uses numbers the measured run does not). */
  first: number;
  /** This process's place among `instances` run at once (one per target URL). */
  instance: number;
  instances: number;
};

/** One wrk process, every body distinct. */
export function runWrk(opts: WrkRun): Promise<WrkResult> {
  // Two threads: the machine's two cores are shared with the server it drives, and one wrk thread keeps up
  // with tens of thousands of requests a second.
  const threads = Math.min(2, opts.connections);
  const dir = mkdtempSync(join(tmpdir(), 'stampcard-wrk-'));
  const file = join(dir, 'load.lua');
  writeFileSync(file, script({ ...opts, threads }));
  const args = [
    `-t${threads}`,
    `-c${opts.connections}`,
    `-d${opts.durationS}s`,
    '--timeout',
    '10s',
    '-s',
    file,
    opts.url,
  ];
  return new Promise<WrkResult>((resolve, reject) => {
    execFile('wrk', args, { maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      rmSync(dir, { recursive: true, force: true });
      const line = stdout.split('\n').find((l) => l.startsWith('WRK_RESULT '));
      if (err || !line) {
        reject(new Error(`wrk failed: ${err?.message ?? 'no result line'} ${stderr.slice(0, 500)}`));
        return;
      }
      const r = JSON.parse(line.slice('WRK_RESULT '.length));
      const ms = (us: number) => Math.round(us / 10) / 100;
      resolve({
        requests: r.requests,
        durationS: r.durationUs / 1e6,
        errors: r.errors,
        timeouts: r.timeouts,
        statusCodes: r.codes,
        latencyMs: { p50: ms(r.p50), p90: ms(r.p90), p99: ms(r.p99), max: ms(r.max) },
      });
    });
  });
}
