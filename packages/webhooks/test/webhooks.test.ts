import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import {
  generateSecret,
  sign,
  signatureHeaders,
  type VerificationFailure,
  verify,
  WebhookVerificationError,
} from '../src/index';

/**
 * The wire format is Standard Webhooks: what we sign, the reference library (`standardwebhooks`) verifies,
 * and what it signs, we verify. Then every refusal.
 */
const body = JSON.stringify({ type: 'LOYALTY_ACTION_APPLIED', timestamp: 1795363780100, data: { ok: true } });
const id = 'msg_2b1c9d';
const nowMs = 1_795_363_780_000;
const ts = Math.floor(nowMs / 1000);

function refusal(run: () => unknown): VerificationFailure {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(WebhookVerificationError);
    return (err as WebhookVerificationError).reason;
  }
  throw new Error('expected a WebhookVerificationError');
}

describe('interoperability with the standardwebhooks library', () => {
  it('what sign produces, the library verifies', () => {
    const secret = generateSecret();
    const headers = signatureHeaders({
      id,
      timestamp: Math.floor(Date.now() / 1000),
      body,
      secrets: [secret],
    });
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  });

  it('what the library signs, verify accepts', () => {
    const secret = generateSecret();
    const at = new Date(nowMs);
    const headers = {
      'webhook-id': id,
      'webhook-timestamp': String(ts),
      'webhook-signature': new Webhook(secret).sign(id, at, body),
    };
    expect(verify({ headers, body, secret, now: nowMs })).toEqual(JSON.parse(body));
    // Same bytes as a Buffer, and headers as a Headers object with other casing.
    const h = new Headers({
      'Webhook-Id': id,
      'Webhook-Timestamp': String(ts),
      'Webhook-Signature': headers['webhook-signature'],
    });
    expect(verify({ headers: h, body: Buffer.from(body), secret, now: nowMs })).toEqual(JSON.parse(body));
  });

  it('the same signature for the same input as the library, byte for byte', () => {
    const secret = generateSecret();
    expect(sign({ id, timestamp: ts, body, secrets: [secret] })).toBe(
      new Webhook(secret).sign(id, new Date(nowMs), body),
    );
  });

  it('signs from decoded keys it keeps, by secret: the same bytes past the bound, a bad secret refused each time', () => {
    // Not ASCII: the body is fed to the HMAC as a string, whose UTF-8 bytes must be the ones signed.
    const text = JSON.stringify({ type: 'X', timestamp: 1, data: { name: 'Zoë 🎉' } });
    const secrets = Array.from({ length: 1_050 }, () => generateSecret());
    for (const secret of [...secrets, secrets[0]!, secrets[1_049]!]) {
      expect(sign({ id, timestamp: ts, body: text, secrets: [secret] })).toBe(
        new Webhook(secret).sign(id, new Date(nowMs), text),
      );
    }
    const bytes = new TextEncoder().encode(text);
    expect(sign({ id, timestamp: ts, body: bytes, secrets: [secrets[0]!] })).toBe(
      sign({ id, timestamp: ts, body: text, secrets: [secrets[0]!] }),
    );
    for (let i = 0; i < 2; i += 1) {
      expect(refusal(() => sign({ id, timestamp: ts, body, secrets: ['whsec_not base64!'] }))).toBe(
        'INVALID_SECRET',
      );
    }
  });
});

describe('rotation', () => {
  it('two secrets sign; a receiver holding either one verifies, a third does not', () => {
    const [oldSecret, newSecret, other] = [generateSecret(), generateSecret(), generateSecret()];
    const headers = signatureHeaders({ id, timestamp: ts, body, secrets: [oldSecret, newSecret] });
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    for (const s of [oldSecret, newSecret])
      expect(verify({ headers, body, secret: s, now: nowMs })).toBeTruthy();
    // The reference library, holding either secret, accepts the same delivery.
    const live = signatureHeaders({
      id,
      timestamp: Math.floor(Date.now() / 1000),
      body,
      secrets: [oldSecret, newSecret],
    });
    for (const s of [oldSecret, newSecret])
      expect(new Webhook(s).verify(body, live)).toEqual(JSON.parse(body));
    expect(refusal(() => verify({ headers, body, secret: other, now: nowMs }))).toBe('NO_MATCHING_SIGNATURE');
  });
});

describe('refusals', () => {
  const secret = generateSecret();
  const good = signatureHeaders({ id, timestamp: ts, body, secrets: [secret] });

  it('missing headers, malformed timestamps, tampering, a bad secret and a non-JSON body', () => {
    expect(refusal(() => verify({ headers: {}, body, secret, now: nowMs }))).toBe('MISSING_HEADERS');
    expect(
      refusal(() => verify({ headers: { ...good, 'webhook-signature': '' }, body, secret, now: nowMs })),
    ).toBe('MISSING_HEADERS');
    for (const bad of ['abc', '1.5', '-1', '1e9'])
      expect(
        refusal(() => verify({ headers: { ...good, 'webhook-timestamp': bad }, body, secret, now: nowMs })),
      ).toBe('INVALID_TIMESTAMP');
    expect(refusal(() => verify({ headers: good, body: `${body} `, secret, now: nowMs }))).toBe(
      'NO_MATCHING_SIGNATURE',
    );
    expect(
      refusal(() => verify({ headers: { ...good, 'webhook-id': 'msg_other' }, body, secret, now: nowMs })),
    ).toBe('NO_MATCHING_SIGNATURE');
    expect(
      refusal(() =>
        verify({ headers: { ...good, 'webhook-timestamp': String(ts + 1) }, body, secret, now: nowMs }),
      ),
    ).toBe('NO_MATCHING_SIGNATURE');
    expect(
      refusal(() =>
        verify({
          headers: { ...good, 'webhook-signature': `v2,${good['webhook-signature'].slice(3)}` },
          body,
          secret,
          now: nowMs,
        }),
      ),
    ).toBe('NO_MATCHING_SIGNATURE');
    for (const bad of ['whsec_not base64!', 'whsec_', 'whsec_A'])
      expect(refusal(() => verify({ headers: good, body, secret: bad, now: nowMs }))).toBe('INVALID_SECRET');
    // A bad secret is named as such even when the request is also bad.
    expect(refusal(() => verify({ headers: {}, body, secret: 'whsec_A', now: nowMs }))).toBe(
      'INVALID_SECRET',
    );
    const text = 'not json';
    const signed = signatureHeaders({ id, timestamp: ts, body: text, secrets: [secret] });
    expect(refusal(() => verify({ headers: signed, body: text, secret, now: nowMs }))).toBe('INVALID_BODY');
  });

  it('the timestamp tolerance is 5 minutes either way, exactly', () => {
    const at = (offsetSeconds: number) =>
      signatureHeaders({ id, timestamp: ts + offsetSeconds, body, secrets: [secret] });
    expect(verify({ headers: at(-300), body, secret, now: nowMs })).toBeTruthy();
    expect(verify({ headers: at(300), body, secret, now: nowMs })).toBeTruthy();
    expect(refusal(() => verify({ headers: at(-301), body, secret, now: nowMs }))).toBe('TIMESTAMP_TOO_OLD');
    expect(refusal(() => verify({ headers: at(301), body, secret, now: nowMs }))).toBe('TIMESTAMP_TOO_NEW');
    expect(verify({ headers: at(-301), body, secret, now: nowMs, toleranceSeconds: 600 })).toBeTruthy();
  });

  it('a header record with prototype keys is read only through its own keys', () => {
    const hostile = JSON.parse(
      `{"__proto__":{"webhook-id":"x"},"constructor":"y","webhook-id":"${id}","webhook-timestamp":"${ts}","webhook-signature":"${good['webhook-signature']}"}`,
    );
    expect(verify({ headers: hostile, body, secret, now: nowMs })).toEqual(JSON.parse(body));
    const onlyProto = JSON.parse(
      '{"__proto__":{"webhook-id":"x","webhook-timestamp":"1","webhook-signature":"v1,a"}}',
    );
    expect(refusal(() => verify({ headers: onlyProto, body, secret, now: nowMs }))).toBe('MISSING_HEADERS');
  });
});
