// One member of a tenant: their grant (roles, when it ends), what each
// permission comes from, changing or removing it.
import { ok } from '../api';
import { useCan } from '../can';
import { go, href } from '../route';
import { useSession } from '../session';
import { ErrorNote, PermissionSources, RemoveButton, Section, When, useLoad } from '../ui';
import { GiveRoles } from './tenants';

export function Member({ tenantId, userId }: { tenantId: string; userId: string }) {
  const { api } = useSession();
  const can = useCan(['member:write'], tenantId);
  const path = { tenantId, userId };
  const grant = useLoad(() => ok(api.GET('/tenants/{tenantId}/members/{userId}', { params: { path } })), [tenantId, userId]);
  const sources = useLoad(
    () => ok(api.GET('/tenants/{tenantId}/members/{userId}/permissions', { params: { path } })),
    [tenantId, userId, grant.data?.version],
  );
  return (
    <>
      <h1>Member of tenant</h1>
      <p>
        User <a href={href('users', userId)}>{userId}</a> in tenant <a href={href('tenants', tenantId)}>{tenantId}</a>
      </p>
      <p>
        <a href={href('history', 'grant', tenantId, userId)}>History of this grant</a>
      </p>
      <ErrorNote error={grant.error} />
      {grant.data ? (
        <Section title="Grant">
          <dl>
            <dt>Roles</dt>
            <dd>{grant.data.roles.join(', ') || 'none'}</dd>
            <dt>Ends</dt>
            <dd>
              <When at={grant.data.expiresAt} />
            </dd>
          </dl>
        </Section>
      ) : null}
      <Section title="Permissions and where they come from">
        <ErrorNote error={sources.error} />
        <PermissionSources permissions={sources.data?.permissions} />
      </Section>
      {can['member:write'] && grant.data ? (
        <Section title="Change">
          <GiveRoles
            tenantId={tenantId}
            userId={userId}
            roles={grant.data.roles}
            expiresAt={grant.data.expiresAt}
            onDone={grant.reload}
          />
          <RemoveButton
            label="Remove from tenant"
            remove={async () => {
              await ok(api.DELETE('/tenants/{tenantId}/members/{userId}', { params: { path } }));
              go('tenants', tenantId);
            }}
          />
        </Section>
      ) : null}
    </>
  );
}
