// What the signed-in person may do, as the API decides it: one
// `POST /authorize/batch` about themselves for the actions a screen offers
// (in a tenant, or on the platform). Nothing here copies a rule.
import { useEffect, useState } from 'preact/hooks';

import { ok, type Action } from './api';
import { useSession } from './session';

/** Each action's answer (`undefined` while asking: treat as not allowed). */
export type Allowed = Record<string, boolean | undefined>;

export function useCan(actions: Action[], tenantId?: string): Allowed {
  return useCanOrError(actions, tenantId)[0];
}

/** As `useCan`, with why the API could not answer, if it could not. */
export function useCanOrError(actions: Action[], tenantId?: string): [Allowed, Error | null] {
  const { api, me } = useSession();
  const [allowed, setAllowed] = useState<Allowed>({});
  const [error, setError] = useState<Error | null>(null);
  const key = `${tenantId ?? ''}|${actions.join(',')}|${me.user.version}`;
  useEffect(() => {
    let live = true;
    const principal = me.user.userId;
    const requests = actions.map((action) => ({
      principal,
      action,
      ...(tenantId ? { resource: { tenantId } } : {}),
    }));
    ok(api.POST('/authorize/batch', { body: { requests } }))
      .then(({ results }) => {
        if (!live) return;
        setError(null);
        const next: Allowed = {};
        actions.forEach((action, i) => (next[action] = results[i]?.decision === 'allow'));
        setAllowed(next);
      })
      .catch((e) => {
        if (!live) return;
        setAllowed({});
        setError(e as Error);
      });
    return () => {
      live = false;
    };
  }, [key]);
  return [allowed, error];
}

/**
 * Whether `action` is allowed in each of `tenantIds`, as the API decides
 * it: one question a tenant, 30 a batch (the check API's most).
 * `undefined` while asking; nothing allowed if the API could not answer.
 */
export function useCanIn(action: Action, tenantIds: string[]): Allowed | undefined {
  const { api, me } = useSession();
  const [allowed, setAllowed] = useState<Allowed | undefined>(undefined);
  const key = `${action}|${tenantIds.join(',')}|${me.user.version}`;
  useEffect(() => {
    let live = true;
    (async () => {
      const next: Allowed = {};
      for (let i = 0; i < tenantIds.length; i += 30) {
        const some = tenantIds.slice(i, i + 30);
        const requests = some.map((tenantId) => ({ principal: me.user.userId, action, resource: { tenantId } }));
        const { results } = await ok(api.POST('/authorize/batch', { body: { requests } }));
        some.forEach((tenantId, j) => (next[tenantId] = results[j]?.decision === 'allow'));
      }
      if (live) setAllowed(next);
    })().catch(() => live && setAllowed({}));
    return () => {
      live = false;
    };
  }, [key]);
  return allowed;
}
