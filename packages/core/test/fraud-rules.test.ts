import { describe, expect, it } from 'vitest';
import {
  emailKey,
  type FraudCandidate,
  listEntryKind,
  listVerdict,
  looksAlike,
  rewardNeedsReview,
  scoreParticipant,
} from '../src/rules/fraud';

const other = (o: Partial<FraudCandidate> & { id: string }): FraudCandidate => ({
  emailKey: null,
  firstName: null,
  lastName: null,
  ipAddress: null,
  fingerprint: null,
  ...o,
});

describe('emailKey', () => {
  it('folds case, +tags, gmail dots, googlemail and Unicode compatibility forms', () => {
    expect(emailKey(' J.Smith+promo@GoogleMail.com ')).toBe('jsmith@gmail.com');
    expect(emailKey('j.smith@example.com')).toBe('j.smith@example.com');
    expect(emailKey('bob+x+y@example.com')).toBe('bob@example.com');
    // Full-width letters (NFKC) and the ﬁ ligature.
    expect(emailKey('ｊａｎｅ@example.com')).toBe('jane@example.com');
    expect(emailKey('ﬁona@example.com')).toBe('fiona@example.com');
    // A leading + is part of the name.
    expect(emailKey('+1@example.com')).toBe('+1@example.com');
  });
});

describe('looksAlike (Jaro-Winkler ≥ 0.88)', () => {
  it('matches typos and small changes, not other names', () => {
    expect(looksAlike('Martha', 'Marhta')).toBe(true);
    expect(looksAlike('Jonathan', 'Jonathon')).toBe(true);
    expect(looksAlike('Smith', 'Smyth')).toBe(true);
    expect(looksAlike('Alice', 'Alina')).toBe(false);
    expect(looksAlike('Bob', 'Rob')).toBe(false);
    expect(looksAlike('Al', 'Ali')).toBe(false);
    expect(looksAlike('Al', 'al')).toBe(true);
    expect(looksAlike(null, 'x')).toBe(false);
    expect(looksAlike('', '')).toBe(false);
  });
});

describe('listEntryKind', () => {
  it('knows emails, *@domains, domains, addresses and ranges, and nothing else', () => {
    expect(listEntryKind('a@b.com')).toBe('email');
    expect(listEntryKind('*@b.com')).toBe('domain');
    expect(listEntryKind('b.com')).toBe('domain');
    expect(listEntryKind('10.0.0.1')).toBe('ip');
    expect(listEntryKind('2001:db8::1')).toBe('ip');
    expect(listEntryKind('10.0.0.0/8')).toBe('cidr');
    expect(listEntryKind('10.0.0.0/33')).toBeNull();
    expect(listEntryKind('not a thing')).toBeNull();
    expect(listEntryKind('*@')).toBeNull();
  });
});

describe('listVerdict', () => {
  it('lets the whitelist win, refuses the blacklist, and is silent otherwise', () => {
    const both = { whitelist: ['10.0.0.0/8'], blacklist: ['10.1.2.3', '*@x.com'] };
    expect(listVerdict(both, { email: 'a@y.com', ipAddress: '10.1.2.3' })?.fraudReasonCode).toBe(
      'WHITELISTED',
    );
    expect(listVerdict(both, { email: 'a@x.com', ipAddress: '192.0.2.1' })).toMatchObject({
      fraudReasonCode: 'BLACKLIST_MATCH',
      refused: true,
    });
    expect(listVerdict(both, { email: 'a@y.com', ipAddress: '::ffff:10.9.9.9' })?.fraudReasonCode).toBe(
      'WHITELISTED',
    );
    expect(listVerdict(both, { email: 'a@y.com' })).toBeNull();
    expect(listVerdict(null, { email: 'a@y.com' })).toBeNull();
  });
});

describe('scoreParticipant', () => {
  const subject = {
    email: 'J.Doe+1@gmail.com',
    firstName: 'Jane',
    fingerprint: 'fp',
    ipAddress: '192.0.2.1',
  };

  it('takes the contract order: duplicate email, duplicate identity, then similar email, first and last name', () => {
    const dupEmail = other({ id: 'p1', emailKey: 'jdoe@gmail.com' });
    const dupIdentity = other({ id: 'p2', emailKey: 'x@y.com', fingerprint: 'fp', ipAddress: '192.0.2.1' });
    const similarFirst = other({ id: 'p3', emailKey: 'z@y.com', fingerprint: 'fp', firstName: 'Jayne' });
    expect(scoreParticipant('STANDARD', subject, [similarFirst, dupIdentity, dupEmail])).toEqual({
      fraudRiskLevel: 'HIGH',
      fraudReasonCode: 'DUPLICATE_EMAIL',
      matchedParticipantIds: ['p1'],
      refused: false,
    });
    expect(scoreParticipant('STANDARD', subject, [similarFirst, dupIdentity]).fraudReasonCode).toBe(
      'DUPLICATE_IDENTITY',
    );
    expect(scoreParticipant('STANDARD', subject, [similarFirst])).toMatchObject({
      fraudRiskLevel: 'MEDIUM',
      fraudReasonCode: 'SIMILAR_FIRST_NAME',
      matchedParticipantIds: ['p3'],
    });
    expect(scoreParticipant('STANDARD', subject, []).fraudReasonCode).toBe('UNIQUE_IDENTITY');
  });

  it('refuses HIGH only under STRICT, and scores nothing under OFF', () => {
    const dup = [other({ id: 'p1', emailKey: 'jdoe@gmail.com' })];
    expect(scoreParticipant('STRICT', subject, dup).refused).toBe(true);
    expect(scoreParticipant('STANDARD', subject, dup).refused).toBe(false);
    expect(scoreParticipant('OFF', subject, dup).fraudReasonCode).toBe('UNIQUE_IDENTITY');
    const medium = [other({ id: 'p3', fingerprint: 'fp', firstName: 'Jane', emailKey: 'q@y.com' })];
    expect(scoreParticipant('STRICT', subject, medium)).toMatchObject({
      fraudRiskLevel: 'MEDIUM',
      refused: false,
    });
  });

  it('needs the fingerprint for identity and similarity', () => {
    const noFp = { email: 'a@y.com', firstName: 'Jane', ipAddress: '192.0.2.1' };
    const same = [
      other({ id: 'p1', emailKey: 'b@y.com', firstName: 'Jane', ipAddress: '192.0.2.1', fingerprint: 'fp' }),
    ];
    expect(scoreParticipant('STANDARD', noFp, same).fraudReasonCode).toBe('UNIQUE_IDENTITY');
  });
});

describe('rewardNeedsReview', () => {
  it('holds the rewards of MEDIUM and HIGH participants, unless anti-fraud is OFF', () => {
    expect(rewardNeedsReview(null, 'MEDIUM')).toBe(true);
    expect(rewardNeedsReview({ level: 'STRICT' }, 'HIGH')).toBe(true);
    expect(rewardNeedsReview(null, 'LOW')).toBe(false);
    expect(rewardNeedsReview({ level: 'OFF' }, 'HIGH')).toBe(false);
  });
});
