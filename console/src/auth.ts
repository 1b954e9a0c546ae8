// Sign-in with the deployment's OpenID provider: authorization code with
// PKCE by oidc-client-ts, the tokens in this tab's session storage (never a
// cookie), the session over when the access token expires.
import { User, UserManager, WebStorageStateStore } from 'oidc-client-ts';

/** What the console function serves as `config.json` (the deployment's). */
export interface ConsoleConfig {
  issuer: string;
  clientId: string;
  scope: string;
  audience?: string | null;
  /** The issuers whose people may create their own account on first sign-in. */
  signUpIssuers?: string[];
}

/** Whether `issuer` is one of `config.signUpIssuers` (`{tid}` is any tenant id). */
export function opensSignUp(config: ConsoleConfig, issuer: string): boolean {
  return (config.signUpIssuers ?? []).some((pattern) => {
    const [before, after] = pattern.split('{tid}');
    if (after === undefined) return pattern === issuer;
    if (!issuer.startsWith(before) || !issuer.endsWith(after)) return false;
    return /^[A-Za-z0-9-]+$/.test(issuer.slice(before.length, issuer.length - after.length));
  });
}

/** The console's own address: the directory its page is served from. */
export function consoleRoot(): string {
  const here = new URL(location.href);
  here.hash = '';
  here.search = '';
  return new URL('./', here).href;
}

/** The API the console is part of: the console lives at `<api>/console/`. */
export function apiBase(): string {
  return new URL('../', consoleRoot()).href.replace(/\/$/, '');
}

export async function loadConfig(): Promise<ConsoleConfig> {
  const response = await fetch('./config.json', { cache: 'no-store' });
  const body = await response.json().catch(() => null);
  if (!response.ok) throw new Error(`the console's configuration answered ${response.status}`);
  if (body?.configured === false) throw new Error(body.message);
  return body as ConsoleConfig;
}

export function userManager(config: ConsoleConfig): UserManager {
  const root = consoleRoot();
  return new UserManager({
    authority: config.issuer,
    client_id: config.clientId,
    redirect_uri: root,
    post_logout_redirect_uri: root,
    response_type: 'code',
    scope: config.scope,
    extraQueryParams: config.audience ? { audience: config.audience } : {},
    userStore: new WebStorageStateStore({ store: sessionStorage }),
    stateStore: new WebStorageStateStore({ store: sessionStorage }),
    automaticSilentRenew: false,
    monitorSession: false,
    loadUserInfo: false,
  });
}

/**
 * The signed-in user after a return from the provider (the code in the
 * address is exchanged, then removed from it), or the one this tab holds.
 */
export async function signedIn(manager: UserManager): Promise<User | null> {
  const params = new URLSearchParams(location.search);
  if (params.has('code') || params.has('error')) {
    try {
      const user = await manager.signinRedirectCallback();
      const back = typeof user.state === 'string' ? user.state : '';
      history.replaceState(null, '', consoleRoot() + back);
      return user;
    } catch (e) {
      history.replaceState(null, '', consoleRoot());
      throw e;
    }
  }
  const user = await manager.getUser();
  return user && !user.expired ? user : null;
}
