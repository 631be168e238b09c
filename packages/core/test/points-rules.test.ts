import { describe, expect, it } from 'vitest';
import { dueConversion, pointsActionMetadata } from '../src/index';

const conversion = { metadataKey: 'points', threshold: 10, rewardId: 'crew_x' };
const running = { status: 'IN_PROGRESS', pointsConversion: conversion };

describe('dueConversion', () => {
  it('is due when an increment of the key leaves a number at or past the threshold', () => {
    expect(dueConversion(running, ['points'], { points: 10 })).toEqual(conversion);
    expect(dueConversion(running, ['visits', 'points'], { points: 2500, visits: 1 })).toEqual(conversion);
  });

  it('is not due below the threshold, for a value that is not a number, or without the key', () => {
    expect(dueConversion(running, ['points'], { points: 9.999 })).toBeNull();
    expect(dueConversion(running, ['points'], { points: -20 })).toBeNull();
    expect(dueConversion(running, ['points'], { points: '20' })).toBeNull();
    expect(dueConversion(running, ['points'], { points: null })).toBeNull();
    expect(dueConversion(running, ['points'], {})).toBeNull();
    expect(dueConversion(running, ['points'], null)).toBeNull();
  });

  it('is not due when the update did not increment the key (a plain metadata set)', () => {
    expect(dueConversion(running, [], { points: 50 })).toBeNull();
    expect(dueConversion(running, ['visits'], { points: 50, visits: 1 })).toBeNull();
  });

  it('is not due in a campaign that is not IN_PROGRESS or has no pointsConversion', () => {
    for (const status of ['DRAFT', 'COMPLETE', 'DELETED']) {
      expect(dueConversion({ ...running, status }, ['points'], { points: 50 })).toBeNull();
    }
    expect(dueConversion({ ...running, pointsConversion: null }, ['points'], { points: 50 })).toBeNull();
  });

  it('reads only own keys: an inherited name is no value', () => {
    const c = { ...running, pointsConversion: { ...conversion, metadataKey: 'toString', threshold: 0.5 } };
    expect(dueConversion(c, ['toString'], {})).toBeNull();
  });
});

describe('pointsActionMetadata', () => {
  it('says where the action came from', () => {
    expect(pointsActionMetadata(conversion)).toEqual({
      source: 'POINTS_CONVERSION',
      metadataKey: 'points',
      threshold: 10,
    });
  });
});
