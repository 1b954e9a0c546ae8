// One member of a tenant: who they are, their grant (roles by name, when
// it ends), what each permission comes from, changing it, ending it
// sooner, or removing it (each confirmed, with why).
import { ok } from '../api';
import { useCan } from '../can';
import { go, href } from '../route';
import { useSession } from '../session';
import { Confirm, Copy, ErrorNote, PermissionSources, Section, When, label, reasonHeader, useLoad, useTitle } from '../ui';
import { GiveRoles } from './tenants';

export function Member({ tenantId, userId }: { tenantId: string; userId: string }) {
  const { api } = useSession();
  const can = useCan(['member:write'], tenantId);
  const path = { tenantId, userId };
  const grant = useLoad(() => ok(api.GET('/tenants/{tenantId}/members/{userId}', { params: { path } })), [tenantId, userId]);
  // The member found among the tenant's members, with the names they carry.
  const named = useLoad(
    () => ok(api.GET('/tenants/{tenantId}/members', { params: { path: { tenantId }, query: { q: userId } } })),
    [tenantId, userId, grant.data?.version],
  );
  const names = named.data?.names ?? {};
  const sources = useLoad(
    () => ok(api.GET('/tenants/{tenantId}/members/{userId}/permissions', { params: { path } })),
    [tenantId, userId, grant.data?.version],
  );
  const who = label(names, userId);
  useTitle(`${who} in ${label(names, tenantId)}`);
  return (
    <>
      <h1>
        {who} in {label(names, tenantId)}
      </h1>
      <p>
        User <a href={href('users', userId)}>{who}</a> <Copy text={userId} what="user" /> in tenant{' '}
        <a href={href('tenants', tenantId)}>{label(names, tenantId)}</a> <Copy text={tenantId} what="tenant" />
      </p>
      <p>
        <a href={href('history', 'grant', tenantId, userId)}>History of this grant</a>
      </p>
      <ErrorNote error={grant.error} />
      {grant.data ? (
        <Section title="Grant">
          <dl>
            <dt>Roles</dt>
            <dd>{grant.data.roles.map((r) => label(names, r)).join(', ') || 'none'}</dd>
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
          <div class="row">
            <Confirm
              label="Remove from tenant"
              consequence={<p>{who} loses every role in this tenant at once; the history keeps the grant.</p>}
              reasonRequired
              run={async (reason) => {
                await ok(api.DELETE('/tenants/{tenantId}/members/{userId}', { params: { path }, headers: reasonHeader(reason) }));
                go('tenants', tenantId);
              }}
            />
          </div>
        </Section>
      ) : null}
    </>
  );
}
