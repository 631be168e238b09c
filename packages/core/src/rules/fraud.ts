import { jaroWinkler } from '@skyra/jaro-winkler';
import type { AntiFraudSettings, FraudReasonCode, FraudRiskLevel } from '@stampcard/db';
import ipaddr from 'ipaddr.js';

export { FRAUD_REASON_CODES, type FraudReasonCode } from '@stampcard/db';

export type AntiFraudLevel = NonNullable<AntiFraudSettings['level']>;

/** New participants one IP address may bring to a campaign in an hour, unless the campaign says otherwise. */
export const DEFAULT_IP_THROTTLE = 10;
/** How long an address that passed the throttle is refused. */
export const IP_BLOCK_MS = 24 * 60 * 60 * 1000;
/** The throttle's window. */
export const IP_THROTTLE_WINDOW_MS = 60 * 60 * 1000;
/**
 * Two names, or two email local parts, look alike at this Jaro-Winkler similarity or above (1 is equal):
 * `marhta`/`martha` 0.96, `jon`/`john` 0.93, `jsmith1`/`jsmith` 0.97; `smith`/`smyth` 0.89; `alice`/`alina` 0.85 does not.
 */
export const SIMILARITY_THRESHOLD = 0.88;
/** Shorter strings are compared for equality only: two letters say nothing about a person. */
export const SIMILARITY_MIN_LENGTH = 3;

const GMAIL_DOMAINS = new Set(['gmail.com', 'googlemail.com']);

/**
 * The email as duplicates are compared: Unicode NFKC, trimmed, lower case, without a `+tag`, and for
 * gmail.com and googlemail.com (one mailbox) without dots in the local part and on gmail.com:
 * `J.Smith+promo@GoogleMail.com` → `jsmith@gmail.com`.
 */
export function emailKey(email: string): string {
  const e = email.normalize('NFKC').trim().toLowerCase();
  const at = e.lastIndexOf('@');
  if (at < 0) return e;
  let local = e.slice(0, at);
  let domain = e.slice(at + 1);
  const plus = local.indexOf('+');
  if (plus > 0) local = local.slice(0, plus);
  if (GMAIL_DOMAINS.has(domain)) {
    local = local.replaceAll('.', '');
    domain = 'gmail.com';
  }
  return `${local}@${domain}`;
}

/** `a` and `b` look alike (see `SIMILARITY_THRESHOLD`); absent values never do. */
export function looksAlike(a: string | null | undefined, b: string | null | undefined): boolean {
  if (!a || !b) return false;
  const x = a.normalize('NFKC').trim().toLowerCase();
  const y = b.normalize('NFKC').trim().toLowerCase();
  if (x === '' || y === '') return false;
  if (x === y) return true;
  if (x.length < SIMILARITY_MIN_LENGTH || y.length < SIMILARITY_MIN_LENGTH) return false;
  return jaroWinkler(x, y) >= SIMILARITY_THRESHOLD;
}

type Parsed = ipaddr.IPv4 | ipaddr.IPv6;

/** An address as one family: `::ffff:1.2.3.4` is 1.2.3.4. Null when it is not an address. */
function parseIp(ip: string): Parsed | null {
  try {
    return ipaddr.process(ip.trim());
  } catch {
    return null;
  }
}

/** A whitelist or blacklist, compiled once per campaign settings. */
export type CompiledList = {
  emails: Set<string>;
  domains: Set<string>;
  ips: Set<string>;
  ranges: [Parsed, number][];
};

/**
 * What an entry of a list is: an email (compared after `emailKey`), `*@domain` or a bare domain (the email's
 * domain, exactly), an IP address, or a CIDR range. Null for anything else (the operator API refuses it).
 */
export function listEntryKind(entry: string): 'email' | 'domain' | 'ip' | 'cidr' | null {
  const e = entry.trim();
  if (e.startsWith('*@')) return /^\*@[^\s@]+\.[^\s@]+$/.test(e) ? 'domain' : null;
  if (e.includes('@')) return /^[^\s@]+@[^\s@]+$/.test(e) ? 'email' : null;
  if (e.includes('/')) return ipaddr.isValidCIDR(e) ? 'cidr' : null;
  if (ipaddr.isValid(e)) return 'ip';
  return /^[a-z0-9-]+(\.[a-z0-9-]+)+$/i.test(e) ? 'domain' : null;
}

const compiled = new WeakMap<readonly string[], CompiledList>();

export function compileList(entries: readonly string[]): CompiledList {
  const known = compiled.get(entries);
  if (known) return known;
  const list: CompiledList = { emails: new Set(), domains: new Set(), ips: new Set(), ranges: [] };
  for (const raw of entries) {
    const e = raw.trim().toLowerCase();
    const kind = listEntryKind(e);
    if (kind === 'email') list.emails.add(emailKey(e));
    else if (kind === 'domain') list.domains.add(e.startsWith('*@') ? e.slice(2) : e);
    else if (kind === 'ip') list.ips.add(parseIp(e)!.toNormalizedString());
    else if (kind === 'cidr') {
      const [range, bits] = ipaddr.parseCIDR(e);
      const r =
        range.kind() === 'ipv6' && (range as ipaddr.IPv6).isIPv4MappedAddress()
          ? (range as ipaddr.IPv6).toIPv4Address()
          : range;
      list.ranges.push([r, r.kind() === range.kind() ? bits : bits - 96]);
    }
  }
  compiled.set(entries, list);
  return list;
}

/** The participant's email or address is on the list. */
export function listMatches(list: CompiledList, email: string, ip: string | null | undefined): boolean {
  const key = emailKey(email);
  if (list.emails.has(key)) return true;
  const domain = email.trim().toLowerCase().split('@').pop() ?? '';
  if (list.domains.has(domain) || list.domains.has(key.split('@').pop() ?? '')) return true;
  const addr = ip ? parseIp(ip) : null;
  if (!addr) return false;
  if (list.ips.has(addr.toNormalizedString())) return true;
  return list.ranges.some(([range, bits]) => range.kind() === addr.kind() && addr.match(range, bits));
}

/** Another participant of the campaign, as scoring sees it. */
export type FraudCandidate = {
  id: string;
  emailKey: string | null;
  firstName: string | null;
  lastName: string | null;
  ipAddress: string | null;
  fingerprint: string | null;
};

/** The new participant, as given in the request body (never the caller's own address). */
export type FraudSubject = {
  email: string;
  firstName?: string | null;
  lastName?: string | null;
  ipAddress?: string | null;
  fingerprint?: string | null;
};

/** What scoring decided. `refused`: 422 PARTICIPANT_BLOCKED, nothing stored. */
export type FraudVerdict = {
  fraudRiskLevel: FraudRiskLevel;
  fraudReasonCode: FraudReasonCode;
  matchedParticipantIds: string[];
  refused: boolean;
};

const verdict = (
  fraudRiskLevel: FraudRiskLevel,
  fraudReasonCode: FraudReasonCode,
  matchedParticipantIds: string[] = [],
  refused = false,
): FraudVerdict => ({ fraudRiskLevel, fraudReasonCode, matchedParticipantIds, refused });

/** The campaign's level (`STANDARD` unless it says otherwise). */
export const antiFraudLevel = (settings: AntiFraudSettings | null | undefined): AntiFraudLevel =>
  settings?.level ?? 'STANDARD';

/** The lists alone, decided before any look-up: the whitelist wins, the blacklist refuses at every level. */
export function listVerdict(
  settings: AntiFraudSettings | null | undefined,
  subject: FraudSubject,
): FraudVerdict | null {
  if (
    settings?.whitelist?.length &&
    listMatches(compileList(settings.whitelist), subject.email, subject.ipAddress)
  ) {
    return verdict('LOW', 'WHITELISTED');
  }
  if (
    settings?.blacklist?.length &&
    listMatches(compileList(settings.blacklist), subject.email, subject.ipAddress)
  ) {
    return verdict('HIGH', 'BLACKLIST_MATCH', [], true);
  }
  return null;
}

/**
 * Scores a new participant against the campaign's others that share its email (after `emailKey`) or its
 * fingerprint, in the contract's order: same email → `HIGH`/`DUPLICATE_EMAIL`; same fingerprint and IP →
 * `HIGH`/`DUPLICATE_IDENTITY`; same fingerprint and a look-alike email, first name or last name →
 * `MEDIUM`/`SIMILAR_…`; otherwise `LOW`/`UNIQUE_IDENTITY`. `STRICT` refuses every `HIGH`. Lists and the IP
 * throttle are decided apart (`listVerdict`, the throttle in the store). Pure.
 */
export function scoreParticipant(
  level: AntiFraudLevel,
  subject: FraudSubject,
  others: readonly FraudCandidate[],
): FraudVerdict {
  if (level === 'OFF') return verdict('LOW', 'UNIQUE_IDENTITY');
  const key = emailKey(subject.email);
  const high = (reason: FraudReasonCode, ids: string[]) => verdict('HIGH', reason, ids, level === 'STRICT');
  const sameEmail = others.filter((o) => o.emailKey === key).map((o) => o.id);
  if (sameEmail.length > 0) return high('DUPLICATE_EMAIL', sameEmail);
  const fp = subject.fingerprint;
  const sameFingerprint = fp ? others.filter((o) => o.fingerprint === fp) : [];
  const ip = subject.ipAddress ? parseIp(subject.ipAddress)?.toNormalizedString() : undefined;
  const sameIdentity = ip
    ? sameFingerprint.filter((o) => o.ipAddress && parseIp(o.ipAddress)?.toNormalizedString() === ip)
    : [];
  if (sameIdentity.length > 0)
    return high(
      'DUPLICATE_IDENTITY',
      sameIdentity.map((o) => o.id),
    );
  const local = (k: string | null) => (k ? k.slice(0, k.lastIndexOf('@')) : null);
  const similar: [FraudReasonCode, (o: FraudCandidate) => boolean][] = [
    ['SIMILAR_EMAIL', (o) => looksAlike(local(o.emailKey), local(key))],
    ['SIMILAR_FIRST_NAME', (o) => looksAlike(o.firstName, subject.firstName)],
    ['SIMILAR_LAST_NAME', (o) => looksAlike(o.lastName, subject.lastName)],
  ];
  for (const [reason, alike] of similar) {
    const ids = sameFingerprint.filter(alike).map((o) => o.id);
    if (ids.length > 0) return verdict('MEDIUM', reason, ids);
  }
  return verdict('LOW', 'UNIQUE_IDENTITY');
}

/**
 * A participant kept at `MEDIUM` or `HIGH` risk earns rewards that wait for manual approval, unless the
 * campaign's anti-fraud is `OFF`.
 */
export function rewardNeedsReview(
  settings: AntiFraudSettings | null | undefined,
  participantRisk: FraudRiskLevel,
): boolean {
  return antiFraudLevel(settings) !== 'OFF' && participantRisk !== 'LOW';
}

/** The IP throttle of a campaign: new participants per address per hour; 0 turns it off. */
export const ipThrottleOf = (settings: AntiFraudSettings | null | undefined): number =>
  settings?.ipThrottle ?? DEFAULT_IP_THROTTLE;

/** An address as the throttle keys it: IPv4-mapped IPv6 as IPv4, IPv6 in its one normalised spelling. */
export function normalizeIp(ip: string): string {
  return parseIp(ip)?.toNormalizedString() ?? ip.trim().toLowerCase();
}
