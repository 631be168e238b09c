import { sentEventData, storedEventData } from '@stampcard/core';
import { describe, expect, it } from 'vitest';

describe('event data, stored once and sent whole', () => {
  const counts = { crew_a: 3 };
  const monthly = { crew_a: 1 };
  const sent = {
    action: { id: 'act_1' },
    participant: {
      id: 'p1',
      loyaltyActionCountsPerReward: counts,
      loyaltyActionCountPerReward: counts,
      monthlyLoyaltyActionCountsPerReward: monthly,
      monthlyLoyaltyActionCountPerReward: monthly,
    },
  };

  it('stores each per-reward map once, and sends both spellings again, equal to what was given', () => {
    const stored = storedEventData(sent);
    expect(Object.keys(stored.participant).sort()).toEqual([
      'id',
      'loyaltyActionCountsPerReward',
      'monthlyLoyaltyActionCountsPerReward',
    ]);
    expect(sentEventData(JSON.parse(JSON.stringify(stored)))).toEqual(sent);
    expect(sent.participant.loyaltyActionCountPerReward).toBe(counts);
  });

  it('leaves alone data without a participant, a participant without maps, and an event stored whole before', () => {
    const bare = { campaign: { id: 'c1' } };
    expect(storedEventData(bare)).toBe(bare);
    expect(sentEventData(bare)).toBe(bare);
    const none = { participant: { id: 'p1' } };
    expect(storedEventData(none)).toBe(none);
    expect(sentEventData(none)).toBe(none);
    expect(sentEventData(sent)).toBe(sent);
  });
});
