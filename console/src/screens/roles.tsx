// Roles: the list by scope, creating one, and one role: its permissions,
// who holds it, deleting it.
import { useState } from 'preact/hooks';

import { ok, type Schemas } from '../api';
import { useCan } from '../can';
import { go, href } from '../route';
import { useSession } from '../session';
import { Done, ErrorNote, Field, Paged, RemoveButton, Section, useAction, useLoad } from '../ui';

type Scope = 'tenant' | 'global';

const words = (text: string) =>
  text
    .split(/[\s,]+/)
    .map((p) => p.trim())
    .filter(Boolean);

export function Roles() {
  const { api } = useSession();
  const can = useCan(['role:create']);
  const [scope, setScope] = useState<Scope>('tenant');
  const [name, setName] = useState('');
  const [newScope, setNewScope] = useState<Scope>('tenant');
  const [permissions, setPermissions] = useState('');
  const create = useAction();
  return (
    <>
      <h1>Roles</h1>
      {can['role:create'] ? (
        <Section title="Create a role">
          <form
            onSubmit={(e) => {
              e.preventDefault();
              void create.run(async () => {
                const role = await ok(
                  api.POST('/roles', { body: { name, scope: newScope, permissions: words(permissions) } }),
                );
                go('roles', role.roleId);
              });
            }}
          >
            <Field label="Name" name="role-name" value={name} onInput={setName} required />
            <label>
              <span>Scope</span>
              <select value={newScope} onChange={(e) => setNewScope((e.target as HTMLSelectElement).value as Scope)}>
                <option value="tenant">tenant (given in one tenant)</option>
                <option value="global">global (held everywhere)</option>
              </select>
            </label>
            <Field
              label="Permissions (space- or comma-separated, such as member:read ticket:*)"
              name="role-permissions"
              value={permissions}
              onInput={setPermissions}
            />
            <button type="submit" disabled={create.busy}>
              Create role
            </button>
            <ErrorNote error={create.error} />
          </form>
        </Section>
      ) : null}
      <Section title="All roles">
        <label>
          <span>Scope</span>
          <select value={scope} onChange={(e) => setScope((e.target as HTMLSelectElement).value as Scope)}>
            <option value="tenant">tenant</option>
            <option value="global">global</option>
          </select>
        </label>
        <Paged<Schemas['RoleView']>
          label="Roles"
          deps={[scope]}
          load={(cursor) => ok(api.GET('/roles', { params: { query: { scope, cursor, limit: 25 } } }))}
          head={['Name', 'Permissions', 'Id']}
          empty="No role in this scope."
          row={(r) => (
            <tr>
              <td>
                <a href={href('roles', r.roleId)}>{r.name}</a>
              </td>
              <td>{r.permissions.join(', ')}</td>
              <td class="id">{r.roleId}</td>
            </tr>
          )}
        />
      </Section>
    </>
  );
}

export function Role({ roleId }: { roleId: string }) {
  const { api } = useSession();
  const can = useCan(['role:update', 'role:delete']);
  const role = useLoad(() => ok(api.GET('/roles/{roleId}', { params: { path: { roleId } } })), [roleId]);
  const r = role.data;
  return (
    <>
      <h1>{r ? `Role ${r.name}` : 'Role'}</h1>
      <p class="id">{roleId}</p>
      <p>
        <a href={href('history', 'role', roleId)}>History of this role</a>
      </p>
      <ErrorNote error={role.error} />
      {r ? (
        <Section title="Permissions">
          <p>
            Scope <strong>{r.scope}</strong>: {r.permissions.join(', ') || 'none'}
          </p>
          {r.description ? <p>{r.description}</p> : null}
          {can['role:update'] ? <EditPermissions role={r} onDone={role.reload} /> : null}
        </Section>
      ) : null}
      <Section title="Who holds it">
        <Paged<Schemas['RoleHolderView']>
          label="Holders"
          deps={[roleId]}
          load={(cursor) =>
            ok(api.GET('/roles/{roleId}/members', { params: { path: { roleId }, query: { cursor, limit: 25 } } }))
          }
          head={['User', 'Where']}
          empty="Nobody holds it."
          row={(h) => (
            <tr>
              <td>
                <a href={href('users', h.userId)}>{h.userId}</a>
              </td>
              <td>
                {h.tenantId ? <a href={href('tenants', h.tenantId, 'members', h.userId)}>{h.tenantId}</a> : 'everywhere'}
              </td>
            </tr>
          )}
        />
      </Section>
      {can['role:delete'] ? (
        <Section title="Delete this role">
          <RemoveButton
            label="Delete role"
            remove={async () => {
              await ok(api.DELETE('/roles/{roleId}', { params: { path: { roleId } } }));
              go('roles');
            }}
          />
        </Section>
      ) : null}
    </>
  );
}

function EditPermissions({ role, onDone }: { role: Schemas['RoleView']; onDone: () => void }) {
  const { api } = useSession();
  const [permissions, setPermissions] = useState(role.permissions.join(' '));
  const action = useAction();
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        void action.run(async () => {
          await ok(
            api.PATCH('/roles/{roleId}', {
              params: { path: { roleId: role.roleId } },
              body: { permissions: words(permissions), version: role.version },
            }),
          );
          onDone();
          return 'Permissions saved; holders are updated within seconds.';
        });
      }}
    >
      <Field label="Permissions" value={permissions} onInput={setPermissions} />
      <button type="submit" disabled={action.busy}>
        Save permissions
      </button>
      <ErrorNote error={action.error} />
      <Done text={action.done} />
    </form>
  );
}
