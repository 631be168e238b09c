import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';

/** At most this much of an answer is read, and kept with the attempt. */
export const MAX_ANSWER_BYTES = 4096;

/**
 * Longest the excerpt of an answer whose status is in is read, in ms (or half the delivery's timeout, if less):
 * the status decides, so a receiver that trickles its body holds the delivery's slot this long, not until the
 * timeout.
 */
export const EXCERPT_WAIT_MS = 500;

/** What came back from one POST, or why nothing did. */
export type SendResult = {
  statusCode: number | null;
  retryAfter: string | null;
  /** The first 4 KiB of the answer, as text; null when no answer came, or its body broke off or ran late. */
  responseExcerpt: string | null;
  latencyMs: number;
  /** Null when an answer came; else `TIMEOUT`, `REFUSED_ADDRESS`, `DNS`, `TLS` or `CONNECTION`. */
  errorClass: string | null;
};

/** Why a request failed, as an attempt records it (`SendResult.errorClass`). */
export type Classify = (err: unknown) => string;

/** The reason a delivery's request is aborted with when its deadline passes. */
const timedOut = () => new DOMException('delivery timed out', 'TimeoutError');

/**
 * One delivery's request, read as undici hands it over (a dispatch handler): its status, its `Retry-After`, and
 * what came of its body, at most `MAX_ANSWER_BYTES`, until it ended or `excerptWaitMs` after the status. No
 * stream, abort signal or promise of its own: undici's `request` made all three for each delivery (they and the
 * timers were most of the sender's cost). One timer at a time: the whole delivery's deadline, then, once the
 * status is in, the excerpt's wait (or what is left of the deadline, if less). It settles once, with
 * `settle`; whatever undici says after that (the error of an abort it asked for) is dropped.
 */
export class AnswerReader implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | null = null;
  private statusCode: number | null = null;
  private retryAfter: string | null = null;
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private done = false;
  private readonly started = performance.now();
  private timer: NodeJS.Timeout;
  /** The excerpt's wait runs: when it ends, what came is the excerpt. */
  private excerptWait = false;

  constructor(
    private readonly settle: (result: SendResult) => void,
    private readonly timeoutMs: number,
    private readonly excerptWaitMs: number,
    private readonly classify: Classify,
  ) {
    this.timer = setTimeout(expire, timeoutMs, this);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    // The deadline passed while the connection was being made: the request goes no further.
    if (this.done) controller.abort(timedOut());
    else this.controller = controller;
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    // An informational answer (1xx) is not the answer.
    if (this.done || statusCode < 200) return;
    this.controller = controller;
    this.statusCode = statusCode;
    const retryAfter = headers['retry-after'];
    this.retryAfter = (Array.isArray(retryAfter) ? retryAfter[0] : retryAfter) ?? null;
    // Most bodies are in already (undici hands over what one read brought, synchronously): the excerpt's timer
    // is armed on the next tick, only for one that is not.
    process.nextTick(armExcerptWait, this);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.done) return;
    this.chunks.push(chunk);
    this.size += chunk.length;
    // The excerpt is full: the rest is not read, and the connection is dropped with it.
    if (this.size >= MAX_ANSWER_BYTES) {
      this.answer(true);
      controller.abort(new Error('answer excerpt taken'));
    }
  }

  onResponseEnd(): void {
    this.answer(true);
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.failed(err);
  }

  /** The request failed (or could not be made): why, or, after its status, only the excerpt is lost. */
  failed(err: unknown): void {
    if (this.done) return;
    // The status decides: a body that breaks off only loses its excerpt.
    if (this.statusCode !== null) this.answer(false);
    else this.finish({ ...NO_ANSWER, latencyMs: this.elapsed(), errorClass: this.classify(err) });
  }

  /** The deadline, or the excerpt's wait, ended before the answer did. */
  expired(): void {
    if (this.done) return;
    if (this.statusCode === null) {
      this.finish({ ...NO_ANSWER, latencyMs: this.elapsed(), errorClass: 'TIMEOUT' });
    } else this.answer(this.excerptWait);
    // Before its request started, there is nothing to abort yet: `onRequestStart` aborts it.
    this.controller?.abort(timedOut());
  }

  /** Arms the excerpt's wait, for an answer whose body had not ended with its status (see `onResponseStart`). */
  armExcerptWait(): void {
    if (this.done) return;
    const left = this.timeoutMs - (performance.now() - this.started);
    if (this.excerptWaitMs >= left) return;
    clearTimeout(this.timer);
    this.excerptWait = true;
    this.timer = setTimeout(expire, this.excerptWaitMs, this);
  }

  private elapsed(): number {
    return Math.round(performance.now() - this.started);
  }

  /** The answer, with what came of its body as its excerpt (`withExcerpt`), or none. */
  private answer(withExcerpt: boolean): void {
    if (this.done) return;
    this.finish({
      statusCode: this.statusCode,
      retryAfter: this.retryAfter,
      responseExcerpt: withExcerpt ? excerptOf(this.chunks) : null,
      latencyMs: this.elapsed(),
      errorClass: null,
    });
  }

  private finish(result: SendResult): void {
    this.done = true;
    clearTimeout(this.timer);
    this.settle(result);
  }
}

const NO_ANSWER = { statusCode: null, retryAfter: null, responseExcerpt: null } as const;

// Module functions with the reader as the timer's argument: no closure per delivery.
function expire(reader: AnswerReader) {
  reader.expired();
}
function armExcerptWait(reader: AnswerReader) {
  reader.armExcerptWait();
}

/**
 * The first `MAX_ANSWER_BYTES` of what came, as text. Invalid UTF-8 becomes U+FFFD, and so does NUL, which
 * PostgreSQL's text refuses.
 */
export function excerptOf(chunks: readonly Buffer[]): string {
  const bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
  const text = bytes.subarray(0, MAX_ANSWER_BYTES).toString('utf8');
  return text.includes('\0') ? text.replaceAll('\0', '\uFFFD') : text;
}
