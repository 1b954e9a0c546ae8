// The local stack's OpenID provider: npm `oidc-provider` (OpenID
// Certified), on 127.0.0.1, started by `authz-local` as a child process.
// Discovery, JWKS, authorization code with PKCE through its development
// login and consent pages (any login name signs in; the subject is the
// name), and client credentials. Access tokens are RFC 9068 JWTs for the
// resource `urn:authz:local`. Prints `ready <issuer>` once it listens.
//
// Usage: node provider.mjs <port> <public client redirect URI>... (each is
// also where a sign-out may return: the console's address)

import { generateKeyPairSync } from 'node:crypto';

import Provider from 'oidc-provider';

const port = Number(process.argv[2] || 3001);
const redirects = process.argv.slice(3);
const issuer = `http://127.0.0.1:${port}`;
const RESOURCE = 'urn:authz:local';

// Any login name is an account: its subject is the name; its address the
// name itself when it is one, else name@example.com, verified.
async function findAccount(_ctx, sub) {
  const email = sub.includes('@') ? sub : `${sub}@example.com`;
  return {
    accountId: sub,
    async claims() {
      return { sub, email, email_verified: true };
    },
  };
}

// Signing keys made at start (they live as long as the process, as the
// stack does): ES256 for access tokens, RS256 for ID tokens.
function signingKey(type, options, alg) {
  const { privateKey } = generateKeyPairSync(type, options);
  return { ...privateKey.export({ format: 'jwk' }), alg, use: 'sig', kid: `local-${alg.toLowerCase()}` };
}
const jwks = {
  keys: [
    signingKey('ec', { namedCurve: 'P-256' }, 'ES256'),
    signingKey('rsa', { modulusLength: 2048 }, 'RS256'),
  ],
};

const provider = new Provider(issuer, {
  jwks,
  clients: [
    {
      // The console and the scripted sign-ins: a public client, PKCE only.
      client_id: 'authz-console',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: [`${issuer}/callback`, ...redirects],
      post_logout_redirect_uris: redirects,
    },
    {
      // A backend service: client credentials, a machine (never a user).
      client_id: 'authz-service',
      client_secret: 'local-service-secret',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
    },
  ],
  findAccount,
  claims: { openid: ['sub'], email: ['email', 'email_verified'] },
  scopes: ['openid', 'email', 'offline_access'],
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => RESOURCE,
      getResourceServerInfo: () => ({
        scope: 'openid email',
        audience: RESOURCE,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'ES256' } },
      }),
      useGrantedResource: () => true,
    },
  },
  // The access token carries who it is for, as Cognito's and Auth0's do.
  extraTokenClaims: async (_ctx, token) => {
    if (token.kind !== 'AccessToken' || !token.accountId) return undefined;
    const email = token.accountId.includes('@') ? token.accountId : `${token.accountId}@example.com`;
    return { email, email_verified: true };
  },
  loadExistingGrant: async (ctx) => {
    // Consent is given once per client and account: scripted sign-ins do
    // not stop at it again.
    const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) return ctx.oidc.provider.Grant.find(grantId);
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope('openid email offline_access');
    grant.addResourceScope(RESOURCE, 'openid email');
    await grant.save();
    return grant;
  },
  ttl: { AccessToken: 3600, AuthorizationCode: 60, ClientCredentials: 3600, Session: 86400, Interaction: 600, Grant: 86400 },
  cookies: { keys: ['local-only-cookie-key'] },
});
provider.proxy = false;

const server = provider.listen(port, '127.0.0.1', () => {
  process.stdout.write(`ready ${issuer}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
