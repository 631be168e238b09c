/**
 * A Participant object carries each per-reward map under two spellings (`…CountsPerReward`, `…CountPerReward`:
 * the seed uses both). An event keeps one of each pair (`storedEventData`) and is sent, and shown in the feed,
 * with both again (`sentEventData`): the same body a receiver always got, 10 % less of every event stored.
 */
const ALIASES = [
  ['loyaltyActionCountsPerReward', 'loyaltyActionCountPerReward'],
  ['monthlyLoyaltyActionCountsPerReward', 'monthlyLoyaltyActionCountPerReward'],
] as const;

type Data = Record<string, unknown>;

const participantOf = (data: Data): Data | null => {
  const p = data.participant;
  return typeof p === 'object' && p !== null && !Array.isArray(p) ? (p as Data) : null;
};

/** The event data as it is stored: the participant's second spelling of each map left out. */
export function storedEventData<T extends Data>(data: T): T {
  const p = participantOf(data);
  if (!p || !ALIASES.some(([, alias]) => alias in p)) return data;
  const kept = { ...p };
  for (const [name, alias] of ALIASES) if (name in kept) delete kept[alias];
  return { ...data, participant: kept };
}

/** The event data as it is sent: each of the participant's maps under both spellings. */
export function sentEventData<T extends Data>(data: T): T {
  const p = participantOf(data);
  if (!p || !ALIASES.some(([name, alias]) => name in p && !(alias in p))) return data;
  const whole = { ...p };
  for (const [name, alias] of ALIASES) if (name in whole && !(alias in whole)) whole[alias] = whole[name];
  return { ...data, participant: whole };
}
