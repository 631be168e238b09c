import { describe, expect, it } from 'vitest';
import { createBatchLanes, createInFlight } from '../src/throttle';

describe("an endpoint's share of a dispatcher", () => {
  it('starts at its maximum, halves with each delivery that got no answer, widens by one per answer', async () => {
    const slots = createInFlight(8);
    const taken = await Promise.all(Array.from({ length: 8 }, () => slots.acquire('ep', 0)));
    expect(taken.every(Boolean)).toBe(true);
    expect(await slots.acquire('ep', 0)).toBe(false);
    // Busy, not slow: the window is whole.
    expect(slots.narrowed('ep')).toBe(false);
    // Other endpoints are not affected.
    expect(await slots.acquire('other', 0)).toBe(true);
    // Three timeouts: 8 → 4 → 2 → 1, and with 5 still in flight nothing new gets in.
    for (let i = 0; i < 3; i++) slots.release('ep', false);
    expect(await slots.acquire('ep', 0)).toBe(false);
    expect(slots.narrowed('ep')).toBe(true);
    expect(slots.narrowed('other')).toBe(false);
    for (let i = 0; i < 4; i++) slots.release('ep', false);
    // One left in flight, the window is 1.
    expect(await slots.acquire('ep', 0)).toBe(false);
    slots.release('ep', true);
    // Nothing in flight, window 2.
    expect(await slots.acquire('ep', 0)).toBe(true);
    expect(await slots.acquire('ep', 0)).toBe(true);
    expect(await slots.acquire('ep', 0)).toBe(false);
  });

  it('a throttle drops the window to one; a delivery that sent nothing leaves it as it was', async () => {
    const slots = createInFlight(8);
    expect(await slots.acquire('ep', 0)).toBe(true);
    expect(await slots.acquire('ep', 0)).toBe(true);
    // One stepped aside (the endpoint was paused): no answer came, and nothing is learnt from it.
    slots.release('ep', null);
    expect(slots.narrowed('ep')).toBe(false);
    // The other was throttled: once its slot is back, one delivery at a time.
    slots.throttled('ep');
    slots.release('ep', null);
    expect(slots.narrowed('ep')).toBe(true);
    expect(await slots.acquire('ep', 0)).toBe(true);
    expect(await slots.acquire('ep', 0)).toBe(false);
    // Answers widen it again.
    slots.release('ep', true);
    expect(await slots.acquire('ep', 0)).toBe(true);
    expect(await slots.acquire('ep', 0)).toBe(true);
    expect(await slots.acquire('ep', 0)).toBe(false);
  });

  it('a waiter gets the slot a finishing delivery frees, and gives up after its wait', async () => {
    const slots = createInFlight(1);
    expect(await slots.acquire('ep', 0)).toBe(true);
    const waiting = slots.acquire('ep', 1000);
    slots.release('ep', true);
    expect(await waiting).toBe(true);
    expect(await slots.acquire('ep', 10)).toBe(false);
  });

  it("bounds the messages an endpoint's batch jobs hold at once, handed back one by one, and tells a job turned away to come back as long as none was", () => {
    let now = 1000;
    const lanes = createBatchLanes(128, () => now);
    const first = lanes.enter('ep', 64)!;
    const second = lanes.enter('ep', 64)!;
    expect(first).not.toBeNull();
    expect(second).not.toBeNull();
    // Full: neither a batch nor a single message gets in.
    expect(lanes.enter('ep', 64)).toBeNull();
    expect(lanes.enter('ep', 1)).toBeNull();
    // Another endpoint has lanes of its own; a job larger than the bound runs when it is alone.
    expect(lanes.enter('other', 200)).not.toBeNull();
    expect(lanes.enter('other', 1)).toBeNull();
    // At least 50 ms, however fresh the lanes.
    expect(lanes.comeBackMs('ep')).toBe(50);
    now += 400;
    expect(lanes.comeBackMs('ep')).toBe(400);
    // Messages handed back as their attempts end make room, a message at a time.
    first.free();
    expect(lanes.comeBackMs('ep')).toBe(50);
    expect(lanes.enter('ep', 2)).toBeNull();
    const single = lanes.enter('ep', 1)!;
    expect(single).not.toBeNull();
    // A job's end hands back what it still holds, once.
    first.close();
    first.close();
    first.free();
    const third = lanes.enter('ep', 63)!;
    expect(lanes.enter('ep', 1)).toBeNull();
    // A lane that hands nothing back (a hanging endpoint): jobs turned away come back every 2 s at most.
    now += 60_000;
    expect(lanes.comeBackMs('ep')).toBe(2000);
    for (const room of [second, single, third]) room.close();
    expect(lanes.comeBackMs('ep')).toBe(50);
    expect(lanes.enter('ep', 128)).not.toBeNull();
  });
});
