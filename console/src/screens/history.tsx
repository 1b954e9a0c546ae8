// A resource's change history: who, when, why, and each field before and
// after, newest first, a page at a time.
import { ok, type Schemas } from '../api';
import { useSession } from '../session';
import { Paged, When } from '../ui';

type Kind = 'user' | 'tenant' | 'role' | 'policy' | 'grant';

export function History({ kind, ids }: { kind: Kind; ids: string[] }) {
  const { api } = useSession();
  const load = (cursor?: string) => {
    const query = { cursor, limit: 25 };
    switch (kind) {
      case 'user':
        return ok(api.GET('/users/{userId}/history', { params: { path: { userId: ids[0] }, query } }));
      case 'tenant':
        return ok(api.GET('/tenants/{tenantId}/history', { params: { path: { tenantId: ids[0] }, query } }));
      case 'role':
        return ok(api.GET('/roles/{roleId}/history', { params: { path: { roleId: ids[0] }, query } }));
      case 'policy':
        return ok(api.GET('/policies/{policyId}/history', { params: { path: { policyId: ids[0] }, query } }));
      case 'grant':
        return ok(
          api.GET('/tenants/{tenantId}/members/{userId}/history', {
            params: { path: { tenantId: ids[0], userId: ids[1] }, query },
          }),
        );
    }
  };
  return (
    <>
      <h1>History of {kind === 'grant' ? 'the grant' : `the ${kind}`}</h1>
      <p class="id">{ids.join(' / ')}</p>
      <Paged<Schemas['ChangeView']>
        label="Changes"
        deps={[kind, ...ids]}
        load={load}
        head={['When', 'Who', 'Why', 'Changes']}
        empty="No change recorded."
        row={(c) => (
          <tr>
            <td>
              <When at={c.modifiedAt} />
              {c.version ? <div class="hint">version {c.version}</div> : null}
            </td>
            <td class="id">{c.modifiedBy ?? 'the system'}</td>
            <td>{c.modifiedReason ?? ''}</td>
            <td>
              <table class="changes" aria-label="Fields changed">
                <thead>
                  <tr>
                    <th scope="col">Field</th>
                    <th scope="col">Before</th>
                    <th scope="col">After</th>
                  </tr>
                </thead>
                <tbody>
                  {Object.entries(c.changes).map(([field, change]) => (
                    <tr>
                      <th scope="row">{field}</th>
                      <td>
                        <code>{show((change as { before?: unknown }).before)}</code>
                      </td>
                      <td>
                        <code>{show((change as { after?: unknown }).after)}</code>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </td>
          </tr>
        )}
      />
    </>
  );
}

function show(value: unknown): string {
  if (value === undefined || value === null) return '—';
  return typeof value === 'string' ? value : JSON.stringify(value);
}
