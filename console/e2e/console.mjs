// The console in a real browser: Debian's chromium driven by playwright-core
// against a running local stack. A platform admin signs in and creates a
// tenant, roles and a user; invites the user, who accepts and becomes the
// tenant's admin: they see only their tenant, and giving a role they do not
// hold shows the refusal's permission. The admin writes an invalid policy
// and sees the error at its line, reads the grant's history and checks
// access. axe-core checks every screen; the main ones are photographed.
//
// Usage: CONSOLE_URL=… ADMIN_LOGIN=… node e2e/console.mjs (SHOTS_DIR keeps
// the screenshots; CHROMIUM, default /usr/bin/chromium). Exits non-zero on
// the first failed expectation, naming it.

import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

import { launch } from './browser.mjs';

const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const CONSOLE_URL = need('CONSOLE_URL');
const ADMIN = need('ADMIN_LOGIN');
const SHOTS = process.env.SHOTS_DIR;
const RUN = Date.now().toString(36);

function need(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

function expect(condition, what) {
  if (!condition) throw new Error(`expected: ${what}`);
  console.log(`ok: ${what}`);
}

/** A person in their own browser profile, with the page's CSP complaints recorded. */
const pages = [];

async function person(browser) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  pages.push(page);
  page.cspViolations = [];
  page.on('console', (m) => {
    if (/Content.Security.Policy/i.test(m.text())) page.cspViolations.push(m.text());
  });
  page.setDefaultTimeout(20000);
  return page;
}

async function signIn(page, login) {
  await page.goto(CONSOLE_URL);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForSelector('input[name="login"]');
  await page.fill('input[name="login"]', login);
  await page.fill('input[name="password"]', 'local');
  await page.click('button[type="submit"]');
  // A first sign-in may ask for consent once.
  const consent = page.getByRole('button', { name: /continue/i });
  await Promise.race([
    page.waitForURL((url) => url.href.startsWith(CONSOLE_URL)),
    consent.waitFor().then(() => consent.click()),
  ]);
  await page.waitForURL((url) => url.href.startsWith(CONSOLE_URL) && !url.search.includes('code='));
  await page.getByRole('heading', { name: /^Welcome/ }).waitFor();
}

/** No serious or critical axe-core violation on the page as it is. */
async function accessible(page, screen) {
  // Evaluated through the debugging protocol: the page's own policy allows
  // no inline script, and this is not the page's.
  await page.evaluate(AXE);
  const result = await page.evaluate(() =>
    // eslint-disable-next-line no-undef
    axe.run(document, { resultTypes: ['violations'] }),
  );
  const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  for (const v of bad) console.error(`${screen}: ${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target).join(' ')}`);
  expect(bad.length === 0, `no serious accessibility violation on ${screen}`);
  expect(page.cspViolations.length === 0, `no Content-Security-Policy violation on ${screen}: ${page.cspViolations.join('; ')}`);
}

async function shot(page, name) {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

async function screen(page, name, photo = false) {
  await page.waitForLoadState('networkidle');
  await accessible(page, name);
  if (photo) await shot(page, name);
}

const alert = (page) => page.getByRole('alert').first();

async function main() {
  const browser = await launch();
  try {
    // The page's own headers: a strict policy, never framed.
    const admin = await person(browser);
    const first = await admin.goto(CONSOLE_URL);
    const headers = first.headers();
    expect(/default-src 'none'/.test(headers['content-security-policy'] ?? ''), 'the console sends a strict Content-Security-Policy');
    expect(/frame-ancestors 'none'/.test(headers['content-security-policy'] ?? ''), 'the console may not be framed');
    expect(headers['x-frame-options'] === 'DENY', 'the console says X-Frame-Options: DENY');
    await screen(admin, 'sign-in');
    await admin.goto(CONSOLE_URL.replace(/\/$/, ''));
    expect(admin.url() === CONSOLE_URL, 'the address without its slash moves to it');

    await signIn(admin, ADMIN);
    const sections = admin.getByRole('navigation', { name: 'Sections' });
    for (const name of ['Tenants', 'Users', 'Roles', 'Policies', 'Check access']) {
      await sections.getByRole('link', { name }).waitFor();
    }
    expect(true, 'the platform admin sees every section');
    const storage = await admin.evaluate(() => ({
      cookie: document.cookie,
      local: localStorage.length,
      session: Object.keys(sessionStorage).filter((k) => k.startsWith('oidc.user:')).length,
    }));
    expect(storage.cookie === '' && storage.local === 0, 'no token in a cookie or in local storage');
    expect(storage.session === 1, "the tokens are in the tab's session storage");
    await screen(admin, 'home', true);

    // A tenant, created with the keyboard only.
    await admin.getByRole('link', { name: 'Tenants' }).click();
    await admin.getByRole('heading', { name: 'Tenants', exact: true }).waitFor();
    let reached = false;
    for (let i = 0; i < 40 && !reached; i++) {
      await admin.keyboard.press('Tab');
      reached = await admin.evaluate(() => document.activeElement?.getAttribute('name') === 'tenant-name');
    }
    expect(reached, 'the create-tenant field is reachable by keyboard');
    const tenantName = `console-${RUN}`;
    await admin.keyboard.type(tenantName);
    await admin.keyboard.press('Enter');
    await admin.getByRole('heading', { name: `Tenant ${tenantName}` }).waitFor();
    const tenantId = decodeURIComponent(admin.url().split('#/tenants/')[1]);
    expect(/^[0-9A-Za-z]{26}$/.test(tenantId), `the new tenant's page is open (${tenantId})`);
    await screen(admin, 'tenant', true);
    await admin.goto(`${CONSOLE_URL}#/tenants`);
    await admin.getByRole('link', { name: tenantName }).waitFor();
    await screen(admin, 'tenants', true);

    // Two tenant roles: what the tenant admin holds, and more than that.
    async function createRole(name, permissions) {
      await admin.goto(`${CONSOLE_URL}#/roles`);
      await admin.fill('input[name="role-name"]', name);
      await admin.fill('input[name="role-permissions"]', permissions);
      await admin.getByRole('button', { name: 'Create role' }).click();
      await admin.getByRole('heading', { name: `Role ${name}` }).waitFor();
      return decodeURIComponent(admin.url().split('#/roles/')[1]);
    }
    const adminRole = await createRole(`tenant-admin-${RUN}`, 'tenant:read member:read member:write');
    await screen(admin, 'role');
    const ownerRole = await createRole(`owner-${RUN}`, 'tenant:read tenant:update tenant:delete member:read member:write');
    await admin.goto(`${CONSOLE_URL}#/roles`);
    await admin.getByRole('link', { name: `owner-${RUN}` }).waitFor();
    await screen(admin, 'roles', true);

    // A user who signs in at the provider as their address.
    const erin = `erin-${RUN}@example.com`;
    await admin.goto(`${CONSOLE_URL}#/users`);
    await admin.fill('input[name="user-email"]', erin);
    await admin.fill('input[name="user-subject"]', erin);
    await admin.getByRole('button', { name: 'Create user' }).click();
    await admin.getByRole('heading', { name: `User ${erin}` }).waitFor();
    const erinId = decodeURIComponent(admin.url().split('#/users/')[1]);
    await admin.getByRole('table', { name: 'Email addresses' }).getByText(erin).waitFor();
    // Invitations reach verified addresses: the admin vouches for hers.
    await admin.getByRole('button', { name: `Mark ${erin} verified` }).click();
    await admin.getByText(`${erin} is verified.`).waitFor();
    await screen(admin, 'user', true);
    await admin.goto(`${CONSOLE_URL}#/users`);
    await admin.getByRole('link', { name: erin }).waitFor();
    await screen(admin, 'users');

    // The admin invites her into the tenant as its admin.
    await admin.goto(`${CONSOLE_URL}#/tenants/${tenantId}`);
    const invite = admin.getByRole('region', { name: 'Invite by email' });
    await invite.locator('input[name="invite-email"]').fill(erin);
    await invite.getByRole('checkbox', { name: new RegExp(`^tenant-admin-${RUN}`) }).check();
    await invite.getByRole('button', { name: 'Invite' }).click();
    await invite.getByRole('status').waitFor();
    await admin.getByRole('table', { name: 'Pending invitations' }).getByText(erin).waitFor();
    expect(true, 'the invitation appears among the pending ones at once');

    // Erin, in her own browser, accepts.
    const erinPage = await person(browser);
    await signIn(erinPage, erin);
    await erinPage.getByRole('button', { name: 'Accept' }).click();
    await erinPage.getByText('Accepted: you are a member now.').waitFor();
    // Signed in again later, she lands in her tenant and sees no other.
    await erinPage.goto(CONSOLE_URL);
    await erinPage.waitForURL((url) => url.hash === `#/tenants/${tenantId}`);
    await erinPage.getByRole('heading', { name: `Tenant ${tenantName}` }).waitFor();
    await erinPage.waitForLoadState('networkidle');
    expect(!(await erinPage.getByRole('link', { name: 'Tenants' }).isVisible()), 'the tenant admin has no list of tenants');
    expect(!(await erinPage.getByRole('link', { name: 'Users' }).isVisible()), 'the tenant admin has no list of users');
    expect(!(await erinPage.getByRole('region', { name: 'Delete this tenant' }).isVisible()), 'the tenant admin cannot delete the tenant');
    await erinPage.goto(`${CONSOLE_URL}#/tenants`);
    await erinPage.getByText('You may not list tenants.').waitFor();
    expect(true, 'the list of tenants says she may not list them');
    await erinPage.goto(`${CONSOLE_URL}#/tenants/${tenantId}`);
    await erinPage.getByRole('table', { name: 'Members' }).getByText(erinId).waitFor();
    await screen(erinPage, 'tenant-admin', true);

    // Giving a role she does not hold: the 403 names the permission, and
    // the form keeps what she typed.
    const give = erinPage.getByRole('form', { name: 'Give roles' });
    await give.locator('input[name="member-user"]').fill(erinId);
    await give.locator('input[name="role-ids"]').fill(ownerRole);
    await give.getByRole('button', { name: 'Save roles' }).click();
    const refused = await alert(erinPage).textContent();
    expect(/you do not hold tenant:(update|delete)/.test(refused ?? ''), `the refusal names the permission she lacks: ${refused}`);
    expect((await give.locator('input[name="role-ids"]').inputValue()) === ownerRole, 'the form keeps the roles typed');
    await shot(erinPage, 'refused');

    // An invalid policy: the error at its line.
    await admin.goto(`${CONSOLE_URL}#/policies`);
    await admin.fill('input[name="policy-name"]', `bad-${RUN}`);
    await admin.fill('textarea[name="statement"]', 'forbid(principal, action, resource)\nwhen { context.sourceIp == };');
    await admin.getByRole('button', { name: 'Create policy' }).click();
    const error = await alert(admin).textContent();
    expect(/^Line 2, column \d+/.test(error ?? ''), `the policy's error is shown at its line: ${error}`);
    expect(
      (await admin.locator('textarea[name="statement"]').getAttribute('aria-invalid')) === 'true',
      'the editor is marked invalid',
    );
    await screen(admin, 'policy-error', true);

    // The grant's history: who gave what, when.
    await admin.goto(`${CONSOLE_URL}#/tenants/${tenantId}/members/${erinId}`);
    await admin.getByRole('heading', { name: 'Member of tenant' }).waitFor();
    await screen(admin, 'member');
    await admin.getByRole('link', { name: 'History of this grant' }).click();
    const changes = admin.getByRole('table', { name: 'Changes' });
    await changes.getByRole('row').nth(1).waitFor();
    expect((await changes.textContent()).includes(adminRole), 'the grant history shows the role given');
    await screen(admin, 'history', true);

    // Check access, and why.
    await admin.goto(`${CONSOLE_URL}#/check`);
    await admin.fill('input[name="check-user"]', erinId);
    await admin.fill('input[name="check-tenant"]', tenantId);
    await admin.fill('input[name="check-action"]', 'member:write');
    await admin.getByRole('button', { name: 'Check' }).click();
    const decision = await admin.locator('.decision').textContent();
    expect(/^Allowed/.test(decision ?? ''), `erin may write members: ${decision}`);
    await admin.getByText(`tenant-admin-${RUN} (tenant)`).first().waitFor();
    expect(true, 'the check names the role that gives it');
    await screen(admin, 'check', true);

    // Sign-out forgets the tokens in this tab (and asks the provider to end
    // its session: its confirmation page is where the browser goes).
    await admin.getByRole('button', { name: 'Sign out' }).click();
    await admin.waitForURL((url) => !url.href.startsWith(CONSOLE_URL));
    await admin.goto(CONSOLE_URL);
    await admin.getByRole('button', { name: 'Sign in' }).waitFor();
    expect(true, 'signed out, the console asks to sign in again');
  } catch (e) {
    // What each person saw when it failed.
    for (const [i, page] of pages.entries()) {
      console.error(`person ${i} was at ${page.url()}: ${(await page.locator('main').textContent().catch(() => '?'))?.slice(0, 600)}`);
      await shot(page, `failure-${i}`).catch(() => {});
    }
    throw e;
  } finally {
    await browser.close();
  }
}

main().then(
  () => console.log('console: every expectation held'),
  (e) => {
    console.error(`console: ${e.stack ?? e}`);
    process.exit(1);
  },
);
