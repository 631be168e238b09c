import { describe, expect, it } from 'vitest';
import { laneWaitersMax } from '../src/processors/deliver-batch';
import { createBatchLanes, createInFlight, rememberAtMost } from '../src/throttle';

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
    const lanes = createBatchLanes(128, { now: () => now, random: () => 0 });
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
    // Before the lane has a pace: at least 50 ms, however fresh the lanes, and as long as none was handed back.
    expect(lanes.comeBackMs('ep', 64)).toBe(50);
    now += 400;
    expect(lanes.comeBackMs('ep', 64)).toBe(400);
    // Messages handed back as their attempts end make room, a message at a time.
    first.free();
    expect(lanes.enter('ep', 2)).toBeNull();
    const single = lanes.enter('ep', 1)!;
    expect(single).not.toBeNull();
    // A job's end hands back what it still holds, once.
    first.close();
    first.close();
    first.free();
    const third = lanes.enter('ep', 63)!;
    expect(lanes.enter('ep', 1)).toBeNull();
    // A lane that hands nothing back (a hanging endpoint): jobs turned away come back every 2 s at most,
    // spread by up to as much again.
    now += 60_000;
    expect(lanes.comeBackMs('ep', 64)).toBe(2000);
    const spread = createBatchLanes(128, { now: () => now, random: () => 0.5 });
    spread.enter('ep', 128);
    now += 60_000;
    expect(spread.comeBackMs('ep', 64)).toBe(3000);
    for (const room of [second, single, third]) room.close();
    expect(lanes.enter('ep', 128)).not.toBeNull();
  });

  it("books each job turned away a turn from its lane's pace, early and one after another, up to 2 s ahead", async () => {
    let now = 0;
    const lanes = createBatchLanes(128, { now: () => now, random: () => 0, maxWaiting: 1 });
    const running = [lanes.enter('ep', 64)!, lanes.enter('ep', 64)!];
    // Handed back while no job waits, messages say how fast they came, not how fast the lane goes: no pace.
    for (let i = 0; i < 32; i++) {
      now += 10;
      running[0]!.free();
    }
    expect(lanes.comeBackMs('ep', 64)).toBe(50);
    // A job waits in place: 32 messages handed back, one every 10 ms, are a pace of 0.1 a ms.
    const waiter = lanes.admit('ep', 64, 60_000);
    for (let i = 0; i < 32; i++) {
      now += 10;
      running[0]!.free();
    }
    // The waiting job got in with the last message handed back: 128 held ahead, then its own 64, at 0.1 a ms
    // counted as 0.1 / 0.6 (early): 1,152 ms.
    expect(lanes.comeBackMs('ep', 64)).toBeCloseTo(1152, 6);
    // The next one's turn comes after the first's; a smaller job's sooner after it.
    expect(lanes.comeBackMs('ep', 64)).toBeCloseTo(1536, 6);
    expect(lanes.comeBackMs('ep', 32)).toBeCloseTo(1728, 6);
    // Turns are booked in time, not in ms from each call: 240 ms later, the line is 240 ms shorter.
    now += 240;
    expect(lanes.comeBackMs('ep', 64)).toBeCloseTo(1872, 6);
    // No further than 2 s ahead, however long the line.
    expect(lanes.comeBackMs('ep', 64)).toBe(2000);
    for (let i = 0; i < 30; i++) lanes.comeBackMs('ep', 64);
    expect(lanes.comeBackMs('ep', 64)).toBe(2000);
    // Another endpoint's lane keeps its own pace and turns: none measured yet.
    lanes.enter('other', 64);
    expect(lanes.comeBackMs('other', 64)).toBe(50);
    // The waiting job gets in; the lane stands empty a minute, then a line forms again: the pace is measured
    // from then, not over the minute.
    running[0]!.close();
    running[1]!.close();
    (await waiter)!.close();
    now += 60_000;
    const again = lanes.enter('ep', 128)!;
    const next = lanes.admit('ep', 64, 60_000);
    for (let i = 0; i < 64; i++) {
      now += 8;
      again.free();
    }
    // 0.125 a ms; the waiting job got in (128 held, none waiting): 128 ahead, then its own 64. The old
    // bookings are long past.
    expect(lanes.comeBackMs('ep', 64)).toBeCloseTo((192 * 0.6) / 0.125, 6);
    (await next)!.close();
    again.close();
  });

  it('lets a batch job wait in place for room, behind the jobs of its endpoint that came first, bounded in time and in number', async () => {
    const lanes = createBatchLanes(128, { maxWaiting: 3 });
    const running = [lanes.enter('ep', 64)!, lanes.enter('ep', 64)!];
    // Full: two jobs wait in place, in the order they came; the third of the process to wait may not.
    const first = lanes.admit('ep', 64, 5000);
    const second = lanes.admit('ep', 64, 5000);
    const elsewhere = lanes.admit('other', 64, 5000);
    expect(await elsewhere).not.toBeNull();
    const third = lanes.admit('ep', 64, 5000);
    const fourth = lanes.admit('ep', 64, 5000);
    expect(lanes.waiting()).toBe(3);
    expect(await fourth).toBeNull();
    // A job that comes while others wait goes behind them, even once there is room.
    running[0]!.close();
    expect(lanes.enter('ep', 1)).toBeNull();
    const firstRoom = await first;
    expect(firstRoom).not.toBeNull();
    expect(lanes.waiting()).toBe(2);
    // Room comes back a message at a time: the next waiter gets in once a whole batch fits.
    for (let i = 0; i < 63; i++) running[1]!.free();
    let secondIn = false;
    void second.then(() => {
      secondIn = true;
    });
    await Promise.resolve();
    expect(secondIn).toBe(false);
    running[1]!.free();
    expect(await second).not.toBeNull();
    // Waiting is bounded: a job whose room does not come in time steps aside, and the one behind it goes on.
    const late = lanes.admit('ep', 64, 20);
    expect(await late).toBeNull();
    firstRoom!.close();
    expect(await third).not.toBeNull();
    expect(lanes.waiting()).toBe(0);
  });

  it('lets a smaller job behind in when the first in line leaves without its room', async () => {
    const lanes = createBatchLanes(128, { maxWaiting: 4 });
    const running = lanes.enter('ep', 100)!;
    // 28 messages of room: too little for the first in line (64), enough for the one behind it (10), which
    // waits its turn all the same.
    const first = lanes.admit('ep', 64, 20);
    let behindIn = false;
    const behind = lanes.admit('ep', 10, 5000).then((room) => {
      behindIn = true;
      return room;
    });
    await new Promise((r) => setTimeout(r, 5));
    expect(behindIn).toBe(false);
    expect(lanes.waiting()).toBe(2);
    // The first leaves: the one behind gets in, with nothing else handed back.
    expect(await first).toBeNull();
    expect(await behind).not.toBeNull();
    expect(lanes.waiting()).toBe(0);
    // 110 held: the 18 left take a job of 18, not one of 19.
    expect(lanes.enter('ep', 19)).toBeNull();
    expect(lanes.enter('ep', 18)).not.toBeNull();
    running.close();
  });

  it('lets three quarters of the job slots wait in place at most, and keeps 4 free at least', () => {
    expect(laneWaitersMax(64)).toBe(48);
    expect(laneWaitersMax(8)).toBe(4);
    expect(laneWaitersMax(4)).toBe(0);
    expect(laneWaitersMax(1)).toBe(0);
  });

  it('lets no job wait in place when none may (the default), nor for no time', async () => {
    const lanes = createBatchLanes(128);
    lanes.enter('ep', 128);
    expect(await lanes.admit('ep', 64, 1000)).toBeNull();
    const some = createBatchLanes(128, { maxWaiting: 2 });
    some.enter('ep', 128);
    expect(await some.admit('ep', 64, 0)).toBeNull();
    expect(some.waiting()).toBe(0);
  });

  it("remembers so many endpoints' lane paces, then starts over: a lane it forgot has no pace measured", async () => {
    let now = 0;
    const lanes = createBatchLanes(128, {
      now: () => now,
      random: () => 0,
      maxWaiting: 2,
      rememberedEndpoints: 1,
    });
    const running = [lanes.enter('ep', 64)!, lanes.enter('ep', 64)!];
    for (let i = 0; i < 32; i++) {
      now += 10;
      running[0]!.free();
    }
    const waiter = lanes.admit('ep', 64, 60_000);
    for (let i = 0; i < 32; i++) {
      now += 10;
      running[0]!.free();
    }
    // As in the booking test above: a pace of 0.1 a ms, turns booked from it.
    expect(lanes.comeBackMs('ep', 64)).toBeCloseTo(1152, 6);
    // A line forms at a second endpoint, past the one endpoint remembered: the first's pace is forgotten, and a
    // job turned away from its lane comes back as from a lane whose pace is not known (it handed a message back
    // just now: in 50 ms).
    const other = lanes.enter('other', 128)!;
    const otherWaiter = lanes.admit('other', 64, 60_000);
    expect(lanes.comeBackMs('ep', 64)).toBe(50);
    running[1]!.close();
    running[0]!.close();
    (await waiter)!.close();
    other.close();
    (await otherWaiter)!.close();
  });

  it('keeps a map of endpoints at its bound: a new one past it starts the map over, a known one is updated', () => {
    const map = new Map<string, number>();
    rememberAtMost(map, 'a', 1, 2);
    rememberAtMost(map, 'b', 1, 2);
    rememberAtMost(map, 'a', 2, 2);
    expect([...map]).toEqual([
      ['a', 2],
      ['b', 1],
    ]);
    rememberAtMost(map, 'c', 1, 2);
    expect([...map]).toEqual([['c', 1]]);
  });
});
