// Tenants: the list (search by name, create) and one tenant: rename,
// delete with a reason, its members and their roles, invitations, the
// policies confined to it.
import { useState } from 'preact/hooks';

import { ok, type Schemas } from '../api';
import { useCan } from '../can';
import { go, href } from '../route';
import { useSession } from '../session';
import { DeleteWithReason, Done, ErrorNote, Field, Paged, PrefixSearch, Section, When, useAction, useLoad } from '../ui';

export function Tenants() {
  const { api } = useSession();
  const can = useCan(['tenant:create', 'tenant:list']);
  const [search, setSearch] = useState('');
  const [name, setName] = useState('');
  const create = useAction();
  return (
    <>
      <h1>Tenants</h1>
      {can['tenant:create'] ? (
        <Section title="Create a tenant">
          <form
            onSubmit={(e) => {
              e.preventDefault();
              void create.run(async () => {
                const tenant = await ok(api.POST('/tenants', { body: { name } }));
                go('tenants', tenant.tenantId);
              });
            }}
          >
            <Field label="Name" name="tenant-name" value={name} onInput={setName} required />
            <button type="submit" disabled={create.busy}>
              Create tenant
            </button>
            <ErrorNote error={create.error} />
          </form>
        </Section>
      ) : null}
      <Section title="All tenants">
        <PrefixSearch label="Name starts with" onSearch={setSearch} />
        {can['tenant:list'] === false ? (
          <p class="empty">You may not list tenants.</p>
        ) : (
          <Paged<Schemas['TenantView']>
            label="Tenants"
            deps={[search]}
            load={(cursor) =>
              ok(api.GET('/tenants', { params: { query: { namePrefix: search || undefined, cursor, limit: 25 } } }))
            }
            head={['Name', 'Id', 'Created']}
            empty="No tenant matches."
            row={(t) => (
              <tr>
                <td>
                  <a href={href('tenants', t.tenantId)}>{t.name}</a>
                </td>
                <td class="id">{t.tenantId}</td>
                <td>
                  <When at={t.createdAt} />
                </td>
              </tr>
            )}
          />
        )}
      </Section>
    </>
  );
}

export function Tenant({ tenantId }: { tenantId: string }) {
  const { api } = useSession();
  const can = useCan(
    ['tenant:update', 'tenant:delete', 'member:read', 'member:write', 'policy:read', 'tenant:read'],
    tenantId,
  );
  const tenant = useLoad(() => ok(api.GET('/tenants/{tenantId}', { params: { path: { tenantId } } })), [tenantId]);
  const [invited, setInvited] = useState(0);
  return (
    <>
      <h1>{tenant.data ? `Tenant ${tenant.data.name}` : 'Tenant'}</h1>
      <ErrorNote error={tenant.error} />
      <p class="id">{tenantId}</p>
      <p>
        <a href={href('history', 'tenant', tenantId)}>History of this tenant</a>
      </p>
      {tenant.data && can['tenant:update'] ? <Rename tenant={tenant.data} onDone={tenant.reload} /> : null}
      {can['member:read'] ? <Members tenantId={tenantId} canWrite={!!can['member:write']} /> : null}
      {can['member:write'] ? <Invite tenantId={tenantId} onDone={() => setInvited((n) => n + 1)} /> : null}
      {can['member:read'] ? <Invitations tenantId={tenantId} canWrite={!!can['member:write']} round={invited} /> : null}
      {can['policy:read'] ? <TenantPolicies tenantId={tenantId} /> : null}
      {tenant.data && can['tenant:delete'] ? (
        <DeleteWithReason
          what="tenant"
          warning="Its members lose access at once. The reason is kept in its history."
          remove={async (reason) => {
            await ok(
              api.DELETE('/tenants/{tenantId}', {
                params: { path: { tenantId }, header: { 'X-Change-Reason': reason } },
              }),
            );
            go('tenants');
          }}
        />
      ) : null}
    </>
  );
}

function Rename({ tenant, onDone }: { tenant: Schemas['TenantView']; onDone: () => void }) {
  const { api } = useSession();
  const [name, setName] = useState(tenant.name);
  const action = useAction();
  return (
    <Section title="Rename">
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void action.run(async () => {
            await ok(
              api.PATCH('/tenants/{tenantId}', {
                params: { path: { tenantId: tenant.tenantId } },
                body: { name, version: tenant.version },
              }),
            );
            onDone();
            return `Renamed to ${name}.`;
          });
        }}
      >
        <Field label="New name" value={name} onInput={setName} required />
        <button type="submit" disabled={action.busy}>
          Rename
        </button>
        <ErrorNote error={action.error} />
        <Done text={action.done} />
      </form>
    </Section>
  );
}

function Members({ tenantId, canWrite }: { tenantId: string; canWrite: boolean }) {
  const { api } = useSession();
  const [round, setRound] = useState(0);
  return (
    <Section title="Members">
      <Paged<Schemas['GrantView']>
        label="Members"
        deps={[tenantId, round]}
        load={(cursor) =>
          ok(api.GET('/tenants/{tenantId}/members', { params: { path: { tenantId }, query: { cursor, limit: 25 } } }))
        }
        head={['User', 'Roles', 'Ends', 'Permissions']}
        empty="No members yet."
        row={(g) => (
          <tr>
            <td>
              <a href={href('tenants', tenantId, 'members', g.userId)}>{g.userId}</a>
            </td>
            <td>{g.roles.join(', ') || 'none'}</td>
            <td>
              <When at={g.expiresAt} />
            </td>
            <td>{g.effectivePermissions.join(', ')}</td>
          </tr>
        )}
      />
      {canWrite ? <GiveRoles tenantId={tenantId} onDone={() => setRound((r) => r + 1)} /> : null}
    </Section>
  );
}

/** Gives a user tenant roles (creates or replaces their grant). */
export function GiveRoles(props: {
  tenantId: string;
  userId?: string;
  roles?: string[];
  expiresAt?: string | null;
  onDone: () => void;
}) {
  const { api } = useSession();
  const [userId, setUserId] = useState(props.userId ?? '');
  const [roles, setRoles] = useState<string[]>(props.roles ?? []);
  // A grant that ends keeps its end unless it is cleared here.
  const [expiresAt, setExpiresAt] = useState(props.expiresAt ? localInput(props.expiresAt) : '');
  const action = useAction();
  return (
    <form
      aria-label="Give roles"
      onSubmit={(e) => {
        e.preventDefault();
        void action.run(async () => {
          await ok(
            api.PUT('/tenants/{tenantId}/members/{userId}', {
              params: { path: { tenantId: props.tenantId, userId } },
              body: { roles, expiresAt: expiresAt ? new Date(expiresAt).toISOString() : undefined },
            }),
          );
          props.onDone();
          return `Saved the roles of ${userId}.`;
        });
      }}
    >
      <h3>{props.userId ? 'Change roles' : 'Give roles to a user'}</h3>
      {props.userId ? null : <Field label="User id" name="member-user" value={userId} onInput={setUserId} required />}
      <RolePicker scope="tenant" value={roles} onChange={setRoles} />
      <Field label="Ends at (empty: never)" type="datetime-local" value={expiresAt} onInput={setExpiresAt} />
      <button type="submit" disabled={action.busy}>
        Save roles
      </button>
      <ErrorNote error={action.error} />
      <Done text={action.done} />
    </form>
  );
}

/** An instant as a `datetime-local` input's value, in local time. */
function localInput(at: string): string {
  const d = new Date(at);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/**
 * Roles of a scope to choose from when the person may list roles; else
 * their ids, typed (a tenant admin may give roles without reading them all).
 */
export function RolePicker(props: { scope: 'tenant' | 'global'; value: string[]; onChange: (roles: string[]) => void }) {
  const { api } = useSession();
  const roles = useLoad(
    () => ok(api.GET('/roles', { params: { query: { scope: props.scope, limit: 100 } } })),
    [props.scope],
  );
  if (!roles.data) {
    return (
      <Field
        label="Role ids (comma-separated)"
        name="role-ids"
        value={props.value.join(', ')}
        onInput={(v) =>
          props.onChange(
            v
              .split(',')
              .map((r) => r.trim())
              .filter(Boolean),
          )
        }
      />
    );
  }
  return (
    <fieldset>
      <legend>Roles</legend>
      {roles.data.items.length ? null : <span class="hint">No {props.scope} role yet.</span>}
      {roles.data.items.map((role) => (
        <label class="check">
          <input
            type="checkbox"
            checked={props.value.includes(role.roleId)}
            onChange={(e) =>
              props.onChange(
                (e.target as HTMLInputElement).checked
                  ? [...props.value, role.roleId]
                  : props.value.filter((r) => r !== role.roleId),
              )
            }
          />
          {role.name} <span class="hint">({role.permissions.join(', ')})</span>
        </label>
      ))}
    </fieldset>
  );
}

function Invite({ tenantId, onDone }: { tenantId: string; onDone: () => void }) {
  const { api } = useSession();
  const [email, setEmail] = useState('');
  const [roles, setRoles] = useState<string[]>([]);
  const [days, setDays] = useState('7');
  const action = useAction();
  return (
    <Section title="Invite by email">
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void action.run(async () => {
            await ok(
              api.POST('/tenants/{tenantId}/invitations', {
                params: { path: { tenantId } },
                body: { email, roles, expiresInDays: Number(days) },
              }),
            );
            onDone();
            return `Invited ${email}.`;
          });
        }}
      >
        <Field label="Email" name="invite-email" type="email" value={email} onInput={setEmail} required />
        <RolePicker scope="tenant" value={roles} onChange={setRoles} />
        <Field label="Valid for days (1-30)" type="number" value={days} onInput={setDays} />
        <button type="submit" disabled={action.busy}>
          Invite
        </button>
        <ErrorNote error={action.error} />
        <Done text={action.done} />
      </form>
    </Section>
  );
}

function Invitations({ tenantId, canWrite, round: invited }: { tenantId: string; canWrite: boolean; round: number }) {
  const { api } = useSession();
  const [round, setRound] = useState(0);
  const revoke = useAction();
  return (
    <Section title="Pending invitations">
      <ErrorNote error={revoke.error} />
      <Paged<Schemas['InvitationView']>
        label="Pending invitations"
        deps={[tenantId, round, invited]}
        load={(cursor) =>
          ok(api.GET('/tenants/{tenantId}/invitations', { params: { path: { tenantId }, query: { cursor } } }))
        }
        head={['Email', 'Roles', 'Expires', '']}
        empty="No pending invitation."
        row={(i) => (
          <tr>
            <td>{i.email}</td>
            <td>{i.roles.join(', ') || 'none'}</td>
            <td>
              <When at={i.expiresAt} />
            </td>
            <td>
              {canWrite ? (
                <button
                  type="button"
                  onClick={() =>
                    revoke.run(async () => {
                      await ok(
                        api.DELETE('/tenants/{tenantId}/invitations/{invitationId}', {
                          params: { path: { tenantId, invitationId: i.invitationId } },
                        }),
                      );
                      setRound((r) => r + 1);
                    })
                  }
                >
                  Revoke
                </button>
              ) : null}
            </td>
          </tr>
        )}
      />
    </Section>
  );
}

function TenantPolicies({ tenantId }: { tenantId: string }) {
  const { api } = useSession();
  const policies = useLoad(
    () => ok(api.GET('/tenants/{tenantId}/policies', { params: { path: { tenantId } } })),
    [tenantId],
  );
  return (
    <Section title="Policies confined to this tenant">
      <ErrorNote error={policies.error} />
      <p class="hint">Global policies apply here too.</p>
      {policies.data?.items.length ? (
        <ul>
          {policies.data.items.map((p) => (
            <li>
              <a href={href('policies', p.policyId)}>{p.name}</a>
            </li>
          ))}
        </ul>
      ) : (
        <p class="empty">None.</p>
      )}
    </Section>
  );
}
