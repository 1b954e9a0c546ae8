// The signed-in console: the header (who, sign out), the navigation the
// person's permissions allow, and the screen the address names.
import { useEffect, useRef } from 'preact/hooks';

import type { Action } from './api';
import { useCanOrError } from './can';
import { href, useRoute } from './route';
import { useSession } from './session';
import { useTitle } from './ui';
import { Check } from './screens/check';
import { Feed, History } from './screens/history';
import { Home } from './screens/home';
import { Member } from './screens/member';
import { Policies, Policy } from './screens/policies';
import { Role, Roles } from './screens/roles';
import { Tenant, Tenants } from './screens/tenants';
import { User, Users } from './screens/users';

const PLATFORM: Action[] = ['tenant:list', 'user:read', 'role:read', 'policy:read', 'history:read', 'authz:check'];

export function App() {
  const { me, signOut } = useSession();
  const [platform, unknown] = useCanOrError(PLATFORM);
  const route = useRoute();
  const key = route.join('/');
  // A new screen (a link, a submit that moves on, Back): the focus moves to
  // its heading, else to the content, never left on <body>. The page's
  // first screen keeps the browser's focus.
  const shown = useRef(key);
  useEffect(() => {
    if (shown.current === key) return;
    shown.current = key;
    const main = document.getElementById('main');
    const heading = main?.querySelector<HTMLElement>('h1');
    if (heading) {
      heading.tabIndex = -1;
      heading.focus();
    } else {
      main?.focus();
    }
  }, [key]);
  return (
    <>
      <a
        class="skip"
        href="#main"
        onClick={(e) => {
          // The address's fragment is the console's route: move focus only.
          e.preventDefault();
          document.getElementById('main')?.focus();
        }}
      >
        Skip to the content
      </a>
      <header>
        <a class="brand" href={href()}>
          Authorization console
        </a>
        <nav aria-label="Sections">
          <a href={href()}>Home</a>
          {platform['tenant:list'] ? <a href={href('tenants')}>Tenants</a> : null}
          {platform['user:read'] ? <a href={href('users')}>Users</a> : null}
          {platform['role:read'] ? <a href={href('roles')}>Roles</a> : null}
          {platform['policy:read'] ? <a href={href('policies')}>Policies</a> : null}
          {platform['history:read'] || me.tenants.length ? <a href={href('history')}>History</a> : null}
          {platform['authz:check'] ? <a href={href('check')}>Check access</a> : null}
        </nav>
        <span class="who">{me.user.email}</span>
        <button type="button" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        {unknown ? (
          <p class="error" role="alert">
            The API could not say what you may do, so nothing is offered: {unknown.message}
          </p>
        ) : null}
        {/* A new address is a new screen: no form keeps another entity's values. */}
        <Screen key={key} route={route} platform={platform} />
      </main>
    </>
  );
}

function Screen({ route, platform }: { route: string[]; platform: Record<string, boolean | undefined> }) {
  const [section, id, sub, subId] = route;
  switch (section) {
    case 'tenants':
      if (id && sub === 'members' && subId) return <Member tenantId={id} userId={subId} />;
      return id ? <Tenant tenantId={id} /> : <Tenants />;
    case 'users':
      return id ? <User userId={id} /> : <Users />;
    case 'roles':
      return id ? <Role roleId={id} /> : <Roles />;
    case 'policies':
      return id ? <Policy policyId={id} /> : <Policies />;
    case 'history':
      if (id === 'user' || id === 'tenant' || id === 'role' || id === 'policy' || id === 'grant') {
        return <History kind={id} ids={route.slice(2)} />;
      }
      return id ? <NoSuchPage /> : <Feed />;
    case 'feed':
      return id ? <Feed tenantId={id} /> : <Feed />;
    case 'check':
      return <Check />;
    case undefined:
      return <Home platform={platform} />;
  }
  return <NoSuchPage />;
}

function NoSuchPage() {
  useTitle('No such page');
  return (
    <>
      <h1>No such page</h1>
      <p>
        <a href={href()}>Home</a>
      </p>
    </>
  );
}
