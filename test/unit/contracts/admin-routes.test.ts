import { describe, expect, it } from 'vitest';
import { AdminRefusal, parseParams, pathFor } from '../../../core/contracts/admin-routes.js';
import { matchAdminRoute } from '../../../core/admin/route-match.js';

describe('a parameter the path does not name travels in the query', () => {
  it('pathFor writes the given ones, encoded, and leaves out the absent ones', () => {
    expect(pathFor('getActivity')).toBe('/api/activity');
    expect(pathFor('getActivity', {})).toBe('/api/activity');
    expect(pathFor('getActivity', { model: 'qwen 7b/q4', status: '4xx' })).toBe('/api/activity?model=qwen%207b%2Fq4&status=4xx');
    expect(pathFor('getLogs', { id: 'a/b' })).toBe('/api/models/a%2Fb/logs');
  });

  it('the query does not change which call a path is', () => {
    expect(matchAdminRoute('GET', '/api/activity')).toEqual({ kind: 'call', name: 'getActivity', raw: {} });
  });

  it('parseParams takes each filter absent or well formed, and refuses the rest by name', () => {
    expect(parseParams('getActivity', {})).toEqual({});
    expect(parseParams('getActivity', { model: 'demo-tiny', status: '429', client: 'local' })).toEqual({ model: 'demo-tiny', status: '429', client: 'local' });
    expect(parseParams('getActivity', { status: '5xx' })).toEqual({ status: '5xx' });
    const refusal = (raw: unknown): string => {
      try {
        parseParams('getActivity', raw);
      } catch (error) {
        expect(error).toBeInstanceOf(AdminRefusal);
        return (error as AdminRefusal).message;
      }
      throw new Error('not refused');
    };
    expect(refusal({ status: '42' })).toBe("getActivity: status: expected an HTTP status (429) or a class of them (4xx), got '42'");
    expect(refusal({ status: '6xx' })).toBe("getActivity: status: expected an HTTP status (429) or a class of them (4xx), got '6xx'");
    expect(refusal({ model: '' })).toBe("getActivity: model: expected a model id (the one asked for or the one that answered), got ''");
    expect(refusal({ colour: 'red' })).toBe("getActivity has no parameter 'colour'; it takes model, status, client");
  });
});
