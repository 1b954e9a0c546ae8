// Roles: the list by scope, creating one from the permissions this
// deployment knows, and one role: its permissions, who holds it (by name),
// deleting it (saying how many hold it, asking why).
import { useState } from 'preact/hooks';

import { ok, type Schemas } from '../api';
import { useCan } from '../can';
import { go, href } from '../route';
import { useSession } from '../session';
import {
  Copy,
  DeleteWithReason,
  ErrorNote,
  Field,
  Named,
  Outcome,
  Paged,
  PermissionPicker,
  PrefixSearch,
  ReasonField,
  Section,
  reasonHeader,
  useAction,
  useLoad,
  useTitle,
} from '../ui';

type Scope = 'tenant' | 'global';

/**
 * Permissions as a role body takes them: the document's type lists the
 * shipped rules' permissions; this deployment's own are those
 * `GET /permissions` offered, and the API checks each.
 */
function held(permissions: string[]): Schemas['CreateRole']['permissions'] {
  return permissions as Schemas['CreateRole']['permissions'];
}

export function Roles() {
  useTitle('Roles');
  const { api } = useSession();
  const can = useCan(['role:create']);
  const [scope, setScope] = useState<Scope>('tenant');
  const [search, setSearch] = useState('');
  const [name, setName] = useState('');
  const [newScope, setNewScope] = useState<Scope>('tenant');
  const [permissions, setPermissions] = useState<string[]>([]);
  const [reason, setReason] = useState('');
  const create = useAction();
  return (
    <>
      <h1>Roles</h1>
      {can['role:create'] ? (
        <Section title="Create a role">
          <form
            ref={create.scope}
            onSubmit={(e) => {
              e.preventDefault();
              void create.run(async () => {
                const role = await ok(
                  api.POST('/roles', { body: { name, scope: newScope, permissions: held(permissions) }, headers: reasonHeader(reason) }),
                );
                go('roles', role.roleId);
              });
            }}
          >
            <Field label="Name" name="role-name" field="name" value={name} onInput={setName} required />
            <label>
              <span>Scope</span>
              <select value={newScope} onChange={(e) => setNewScope((e.target as HTMLSelectElement).value as Scope)}>
                <option value="tenant">tenant (given in one tenant)</option>
                <option value="global">global (held everywhere)</option>
              </select>
            </label>
            <PermissionPicker value={permissions} onChange={setPermissions} />
            <ReasonField value={reason} onInput={setReason} />
            <button type="submit" disabled={create.busy}>
              Create role
            </button>
            <Outcome action={create} />
          </form>
        </Section>
      ) : null}
      <Section title="All roles">
        <PrefixSearch label="Name starts with" onSearch={setSearch}>
          <label>
            <span>Scope</span>
            <select value={scope} onChange={(e) => setScope((e.target as HTMLSelectElement).value as Scope)}>
              <option value="tenant">tenant</option>
              <option value="global">global</option>
            </select>
          </label>
        </PrefixSearch>
        <Paged<Schemas['RoleView']>
          label="Roles"
          deps={[scope, search]}
          load={(cursor) =>
            ok(api.GET('/roles', { params: { query: { scope, namePrefix: search || undefined, cursor, limit: 25 } } }))
          }
          head={['Name', 'Permissions']}
          empty={search ? 'No role in this scope matches.' : 'No role in this scope.'}
          row={(r) => (
            <tr>
              <td>
                <Named id={r.roleId} names={{ [r.roleId]: r.name }} href={href('roles', r.roleId)} what="role" />
              </td>
              <td>{r.permissions.join(', ')}</td>
            </tr>
          )}
        />
      </Section>
    </>
  );
}

/** How many hold a role: its holders counted a page at a time, to 1,000. */
async function holders(api: ReturnType<typeof useSession>['api'], roleId: string): Promise<string> {
  let count = 0;
  let cursor: string | undefined;
  for (let page = 0; page < 10; page++) {
    const found = await ok(api.GET('/roles/{roleId}/members', { params: { path: { roleId }, query: { cursor, limit: 100 } } }));
    count += found.items.length;
    if (!found.nextCursor) return String(count);
    cursor = found.nextCursor;
  }
  return `more than ${count}`;
}

export function Role({ roleId }: { roleId: string }) {
  const { api } = useSession();
  const can = useCan(['role:update', 'role:delete']);
  const role = useLoad(() => ok(api.GET('/roles/{roleId}', { params: { path: { roleId } } })), [roleId]);
  const held = useLoad(() => holders(api, roleId), [roleId]);
  const r = role.data;
  useTitle(r ? `Role ${r.name}` : 'Role');
  return (
    <>
      <h1>{r ? `Role ${r.name}` : 'Role'}</h1>
      <p class="id">
        {roleId} <Copy text={roleId} what="role" />
      </p>
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
          row={(h, named) => (
            <tr>
              <td>
                <Named id={h.userId} names={named} href={href('users', h.userId)} what="user" />
              </td>
              <td>
                {h.tenantId ? (
                  <Named id={h.tenantId} names={named} href={href('tenants', h.tenantId, 'members', h.userId)} what="tenant" />
                ) : (
                  'everywhere'
                )}
              </td>
            </tr>
          )}
        />
      </Section>
      {r && can['role:delete'] ? (
        <DeleteWithReason
          what="role"
          warning={`${held.data ?? 'Some'} holder(s) lose what it gives, within seconds of its deletion.`}
          remove={async (reason) => {
            await ok(api.DELETE('/roles/{roleId}', { params: { path: { roleId } }, headers: reasonHeader(reason) }));
            go('roles');
          }}
        />
      ) : null}
    </>
  );
}

function EditPermissions({ role, onDone }: { role: Schemas['RoleView']; onDone: () => void }) {
  const { api } = useSession();
  const [permissions, setPermissions] = useState<string[]>(role.permissions);
  const [reason, setReason] = useState('');
  const action = useAction();
  return (
    <form
      ref={action.scope}
      onSubmit={(e) => {
        e.preventDefault();
        void action.run(async () => {
          await ok(
            api.PATCH('/roles/{roleId}', {
              params: { path: { roleId: role.roleId } },
              body: { permissions: held(permissions), version: role.version },
              headers: reasonHeader(reason),
            }),
          );
          onDone();
          return 'Permissions saved; holders are updated within seconds.';
        });
      }}
    >
      <PermissionPicker value={permissions} onChange={setPermissions} />
      <ReasonField value={reason} onInput={setReason} />
      <button type="submit" disabled={action.busy}>
        Save permissions
      </button>
      <Outcome action={action} />
    </form>
  );
}
