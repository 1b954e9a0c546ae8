// Check access: may this user do this action in this tenant (or on the
// platform)? The decision the authorizer would give, with what decided
// it: the roles that give the permission and the policies that applied.
import { useId, useState } from 'preact/hooks';

import { ok, type Action, type Schemas } from '../api';
import { href } from '../route';
import { useSession } from '../session';
import { ErrorNote, Named, PermissionSources, Section, TenantPicker, UserPicker, useAction, useKnownPermissions, useTitle } from '../ui';

export function Check() {
  const { api, me } = useSession();
  useTitle('Check access');
  const known = useKnownPermissions();
  const [principal, setPrincipal] = useState(me.user.userId);
  const [tenantId, setTenantId] = useState(me.tenants[0]?.tenantId ?? '');
  const [who, setWho] = useState('you');
  const [where, setWhere] = useState(me.tenants[0]?.name ?? me.tenants[0]?.tenantId ?? '');
  const [action, setAction] = useState('member:read');
  const [decision, setDecision] = useState<Schemas['DecisionView'] | null>(null);
  const [sources, setSources] = useState<Schemas['PermissionView'][] | null>(null);
  const check = useAction();
  // What the chosen action lets its holder do, when the deployment says.
  const described = known.data?.items.find((k) => k.permission === action)?.description;
  const describedId = useId();
  return (
    <>
      <h1>Check access</h1>
      <Section title="Question">
        <form
          class="stack"
          ref={check.scope}
          onSubmit={(e) => {
            e.preventDefault();
            void check.run(async () => {
              setDecision(null);
              setSources(null);
              const tenant = tenantId.trim();
              const decided = await ok(
                api.POST('/authorize', {
                  body: { principal: principal.trim(), action: action.trim() as Action, ...(tenant ? { resource: { tenantId: tenant } } : {}) },
                }),
              );
              setDecision(decided);
              if (tenant) {
                // The roles behind each permission (the grant may be absent).
                const found = await ok(
                  api.GET('/tenants/{tenantId}/members/{userId}/permissions', {
                    params: { path: { tenantId: tenant, userId: principal.trim() } },
                  }),
                ).catch(() => null);
                setSources(found?.permissions ?? []);
              }
              // The decision is the result: the focus moves to it (it carries the result's id).
              return `${decided.decision === 'allow' ? 'Allowed' : 'Denied'}: ${decided.reason}`;
            });
          }}
        >
          <p>
            May <strong>{who}</strong> do <code>{action}</code>{' '}
            {tenantId ? (
              <>
                in <strong>{where}</strong>
              </>
            ) : (
              'on the platform'
            )}
            ?
          </p>
          <UserPicker label="Who (you unless you choose)" name="principal" value={principal} onChange={(id, text) => (setPrincipal(id), setWho(text))} />
          <TenantPicker label="Where (the platform unless you choose)" value={tenantId} onChange={(id, name) => (setTenantId(id), setWhere(name))} />
          {tenantId ? (
            <button type="button" class="quiet" onClick={() => setTenantId('')}>
              Ask about the platform instead
            </button>
          ) : null}
          <label>
            <span>Action</span>
            <select
              name="check-action"
              data-field="action"
              aria-describedby={described ? describedId : undefined}
              value={action}
              onChange={(e) => setAction((e.target as HTMLSelectElement).value)}
            >
              {(known.data?.items ?? [{ permission: action, routes: [] }]).map((k) => (
                <option value={k.permission}>{k.permission}</option>
              ))}
            </select>
          </label>
          {described ? (
            <span class="hint" id={describedId}>
              {described}
            </span>
          ) : null}
          <button type="submit" disabled={check.busy}>
            Check
          </button>
          <ErrorNote error={check.error} id={check.errorId} />
        </form>
      </Section>
      {decision ? (
        <Section title="Decision">
          <p class={`decision ${decision.decision}`} role="status" id={check.doneId} tabIndex={-1}>
            {decision.decision === 'allow' ? 'Allowed' : 'Denied'}: {decision.reason}
          </p>
          {decision.error ? <p class="error">{decision.error}</p> : null}
          {decision.unknownFacts?.length ? (
            <p class="hint">
              Decided without {decision.unknownFacts.join(', ')}: a policy that applies reads them, so a
              real request may be decided otherwise.
            </p>
          ) : null}
          <h3>Policies that decided</h3>
          {decision.determiningPolicies.length ? (
            <ul>
              {decision.determiningPolicies.map((p) => (
                <li>
                  <Named names={{ [p.policyId]: p.name }} id={p.policyId} href={href('policies', p.policyId)} what="policy" />
                </li>
              ))}
            </ul>
          ) : (
            <p class="empty">No policy: the roles decided.</p>
          )}
          {sources ? (
            <>
              <h3>What the user holds in the tenant, and the roles that give it</h3>
              <PermissionSources permissions={sources} />
            </>
          ) : null}
        </Section>
      ) : null}
    </>
  );
}
