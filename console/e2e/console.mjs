// The console in a real browser: Debian's chromium driven by playwright-core
// against a running local stack, nobody typing an id. A platform admin
// signs in, creates a tenant (the focus then on its heading), roles (from
// the known permissions: a misspelt one is refused with the nearest named)
// and users, gives one roles by picking them by address and the role by
// the start of its name, and invites three people at once. A newcomer
// signs up on first sign-in and accepts; the tenant's admin accepts,
// finds a member by address and gives him a role, bulk-removes members,
// is refused removing themselves (the tenant's last admin) and giving a
// role they do not hold, revokes an invitation, invites three people at
// once, creates a directory (SCIM) token, maps the group the directory
// pushes to a role and revokes the token, and reads the tenant's changes
// from History, filtered by who (among the members) and when. The
// platform admin suspends two users at once, finds a user through the
// search and suspends him with a reason, finds both in the history and
// the feed (filtered by who made them), links and unlinks an identity,
// adds an address, vouches for it, makes it primary and removes the old
// one, writes an invalid policy (the error at its line), checks access
// by name (the focus on the decision) and deletes a role one person holds
// (told so). axe-core checks every screen in every state reached (an unverified address, an
// error, an open dialog) at 1280 and at 390 px, where nothing scrolls
// sideways; no two screens share a title; the main screens are
// photographed.
//
// Usage: CONSOLE_URL=… ADMIN_LOGIN=… node e2e/console.mjs (SHOTS_DIR keeps
// the screenshots; CHROMIUM, default /usr/bin/chromium). Exits non-zero on
// the first failed expectation, naming it.

import { mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

import { launch } from './browser.mjs';

const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const CONSOLE_URL = need('CONSOLE_URL');
const ADMIN = need('ADMIN_LOGIN');
const SHOTS = process.env.SHOTS_DIR;
const RUN = Date.now().toString(36);
const WIDE = { width: 1280, height: 900 };
const NARROW = { width: 390, height: 844 };

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
  const context = await browser.newContext({ viewport: WIDE });
  const page = await context.newPage();
  pages.push(page);
  page.cspViolations = [];
  page.on('console', (m) => {
    if (/Content.Security.Policy/i.test(m.text())) page.cspViolations.push(m.text());
  });
  page.setDefaultTimeout(20000);
  return page;
}

/** Signs in at the local provider; `landing` is the heading the console then shows. */
async function signIn(page, login, landing = /^Welcome/) {
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
  await page.getByRole('heading', { name: landing }).waitFor();
}

/** No axe-core violation of any impact on the page as it is. */
async function accessible(page, screen) {
  // Evaluated through the debugging protocol: the page's own policy allows
  // no inline script, and this is not the page's.
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE);
  const result = await page.evaluate(() =>
    // eslint-disable-next-line no-undef
    axe.run(document, { resultTypes: ['violations'] }),
  );
  for (const v of result.violations) {
    console.error(`${screen}: ${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target).join(' ')}`);
  }
  expect(result.violations.length === 0, `no accessibility violation on ${screen}`);
  expect(page.cspViolations.length === 0, `no Content-Security-Policy violation on ${screen}: ${page.cspViolations.join('; ')}`);
}

async function shot(page, name) {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/**
 * Each title seen, with the screens (their address, `#/…`) it was seen on:
 * one screen may show it in several states, two screens may not share it.
 */
const titles = new Map();

/** The screen as it is, checked at 1280 px and at 390 px (no sideways scrolling there). */
async function screen(page, name, photo = false) {
  await page.waitForLoadState('networkidle');
  const title = await page.title();
  expect(/^\S.* · Authorization console$/.test(title), `${name} has a title of its own: ${title}`);
  const route = new URL(page.url()).hash.replace(/^#\/?/, '').split('?')[0];
  if (!titles.has(title)) titles.set(title, new Set());
  titles.get(title).add(route || 'home');
  await accessible(page, `${name} at 1280 px`);
  if (photo) await shot(page, name);
  await page.setViewportSize(NARROW);
  try {
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    if (width > NARROW.width) {
      await shot(page, `${name}-390`);
      const wide = await page.evaluate((limit) =>
        [...document.querySelectorAll('body *')]
          .filter((e) => e.getBoundingClientRect().left + e.scrollWidth > limit && !e.closest('.scroll'))
          .slice(0, 5)
          .map((e) => `${e.tagName.toLowerCase()}.${e.className} (${Math.round(e.getBoundingClientRect().right)} px)`),
      NARROW.width);
      console.error(`${name} at 390 px: wider than the screen: ${wide.join(', ')}`);
    }
    expect(width <= NARROW.width, `${name} fits 390 px without sideways scrolling (${width} px)`);
    await accessible(page, `${name} at 390 px`);
  } finally {
    await page.setViewportSize(WIDE);
  }
}

const alert = (page) => page.getByRole('alert').first();
const status = (page) => page.getByRole('status').first();

/** The open confirmation dialog: gives the reason and confirms. */
async function confirm(page, reason, { check } = {}) {
  const dialog = page.getByRole('dialog');
  await dialog.waitFor();
  if (check) await check(dialog);
  // Every confirmation is a state of its screen: checked like one.
  const asks = (await dialog.getByRole('heading').first().textContent().catch(() => '')) || 'a confirmation';
  await screen(page, `the dialog "${asks.trim()}"`);
  await dialog.getByLabel(/^Why/).fill(reason);
  await dialog.locator('button[type="submit"]').click();
  return dialog;
}

/** Finds a user through the Users screen's search (among those of `status`); answers the link to their page. */
async function findUser(page, text, name, status = 'active') {
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Users' }).click();
  await page.getByRole('heading', { name: 'Users', exact: true }).waitFor();
  const find = page.getByRole('search', { name: 'Find users' });
  await find.getByRole('combobox', { name: /^Status/ }).selectOption(status);
  await find.getByRole('textbox').fill(text);
  await find.getByRole('button', { name: 'Search' }).click();
  const link = page.getByRole('table', { name: 'Users' }).getByRole('link', { name, exact: true });
  await link.waitFor();
  return link;
}

/** The labels of the role checkboxes a form's role picker shows, once they are `count`. */
async function roleChoices(page, form, count) {
  await page.waitForFunction(
    ({ form, count }) =>
      document.querySelectorAll(`form[aria-label="${form}"] [data-field="roles"] input[type="checkbox"]`).length === count,
    { form, count },
  );
  return page.evaluate(
    (form) =>
      [...document.querySelectorAll(`form[aria-label="${form}"] [data-field="roles"] label`)].map((l) => l.textContent.trim()),
    form,
  );
}

/** A day as a date input takes it (`YYYY-MM-DD`), `offset` days from today in the browser's time zone. */
async function day(page, offset) {
  return page.evaluate((n) => {
    const d = new Date(Date.now() + n * 86_400_000);
    return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
  }, offset);
}

/** Finds a user with a picker by what they are called, and chooses them. */
async function pick(scope, search, choice) {
  await scope.getByRole('textbox', { name: search.label }).fill(search.text);
  await scope.getByRole('button', { name: 'Find' }).first().click();
  await scope.getByRole('radio', { name: choice }).check();
}

/** The JavaScript the console ships (console/dist, which the stack serves), gzipped. */
function shippedScripts() {
  const assets = new URL('../dist/assets/', import.meta.url).pathname;
  return readdirSync(assets)
    .filter((f) => f.endsWith('.js'))
    .reduce((n, f) => n + gzipSync(readFileSync(join(assets, f)), { level: 9 }).length, 0);
}

async function main() {
  const gzipped = shippedScripts();
  expect(gzipped <= 200_000, `the console's JavaScript is within 200 KB gzipped (${(gzipped / 1000).toFixed(1)} KB)`);
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
    for (const name of ['Tenants', 'Users', 'Roles', 'Policies', 'History', 'Check access']) {
      await sections.getByRole('link', { name }).waitFor();
    }
    expect(true, 'the platform admin sees every section, history among them');
    await admin.waitForFunction(() => document.title === 'Home · Authorization console');
    expect(true, 'the page is titled by its screen');
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
    // The form shows once the page knows what the caller may do.
    await admin.locator('[name="tenant-name"]').waitFor();
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
    await admin.waitForFunction((title) => document.title.startsWith(title), `Tenant ${tenantName} · `);
    expect(true, 'the tenant page is titled by its name');
    // The submit moved to another screen: the focus is on its heading, not on the body.
    await admin
      .waitForFunction(() => document.activeElement?.tagName === 'H1', null, { timeout: 5000 })
      .catch(() => {});
    const focus = await admin.evaluate(() => `${document.activeElement?.tagName.toLowerCase()}: ${document.activeElement?.textContent}`);
    expect(focus === `h1: Tenant ${tenantName}`, `after creating the tenant the focus is on the new screen's heading: ${focus}`);
    await admin.goto(`${CONSOLE_URL}#/tenants`);
    await admin.getByRole('link', { name: tenantName }).waitFor();
    await screen(admin, 'tenants', true);
    // A name another tenant has (in another case): the 409 names the field
    // once, in words, and the focus is on it, marked invalid.
    await admin.fill('[name="tenant-name"]', tenantName.toUpperCase());
    await admin.press('[name="tenant-name"]', 'Enter');
    const taken = (await alert(admin).textContent()) ?? '';
    expect(/^Name\b/.test(taken) && (taken.match(/name/gi) ?? []).length === 1, `a taken name is refused naming the field once: ${taken}`);
    await admin.waitForFunction(
      () => document.activeElement?.getAttribute('name') === 'tenant-name' && document.activeElement?.getAttribute('aria-invalid') === 'true',
      null,
      { timeout: 5000 },
    );
    expect(true, 'the focus is on the taken name, marked invalid');
    await screen(admin, 'tenant-name-taken');
    await admin.fill('[name="tenant-name"]', '');

    // Roles from the permissions this deployment knows; a misspelt one is
    // refused with the nearest known named, the focus on the choices.
    async function createRole(name, permissions, misspelt) {
      await admin.goto(`${CONSOLE_URL}#/roles`);
      await admin.fill('input[name="role-name"]', name);
      const choices = admin.getByRole('group', { name: 'Permissions' });
      for (const p of permissions) await choices.getByRole('checkbox', { name: new RegExp(`^${p}( |$)`) }).check();
      if (misspelt) {
        await choices.getByRole('textbox', { name: /wildcard/ }).fill(misspelt);
        await choices.getByRole('button', { name: 'Add' }).click();
        await admin.getByRole('button', { name: 'Create role' }).click();
        const refused = await alert(admin).textContent();
        expect(
          refused.includes(misspelt) && /member:read/.test(refused) && !/permissions\[/.test(refused),
          `the misspelt permission is refused, the nearest known named, in words: ${refused}`,
        );
        const focused = await admin
          .waitForFunction(
            () =>
              document.activeElement?.getAttribute('aria-invalid') === 'true' &&
              !!document.activeElement.closest('fieldset[data-field="permissions"]'),
            null,
            { timeout: 5000 },
          )
          .then(() => true, () => false);
        expect(focused, 'the focus is on the permissions, marked invalid');
        await screen(admin, 'role-refused');
        // A wildcard's box goes away when cleared.
        await choices.getByRole('checkbox', { name: misspelt }).click();
        await choices.getByRole('checkbox', { name: misspelt }).waitFor({ state: 'detached' });
      }
      await admin.getByRole('button', { name: 'Create role' }).click();
      await admin.getByRole('heading', { name: `Role ${name}` }).waitFor();
      return decodeURIComponent(admin.url().split('#/roles/')[1]);
    }
    // A name with a space: refused with the field named once, in words,
    // the focus on it, marked invalid and described by the refusal.
    await admin.goto(`${CONSOLE_URL}#/roles`);
    await admin.fill('input[name="role-name"]', `two words ${RUN}`);
    await admin.getByRole('group', { name: 'Permissions' }).getByRole('checkbox', { name: /^tenant:read( |$)/ }).check();
    await admin.getByRole('button', { name: 'Create role' }).click();
    const badName = await alert(admin).textContent();
    expect(
      /a space/i.test(badName) && (badName.match(/name/gi) ?? []).length === 1,
      `a name with a space is refused, the field named once: ${badName}`,
    );
    const described = await admin
      .waitForFunction(
        () => {
          const field = document.activeElement;
          const by = field?.getAttribute('aria-describedby');
          return (
            field?.getAttribute('name') === 'role-name' &&
            field.getAttribute('aria-invalid') === 'true' &&
            !!by &&
            !!document.getElementById(by)?.textContent?.trim()
          );
        },
        null,
        { timeout: 5000 },
      )
      .then(() => true, () => false);
    expect(described, 'the focus is on the name, marked invalid and described by the refusal');
    await createRole(`tenant-admin-${RUN}`, ['tenant:read', 'member:read', 'member:write'], 'membr:read');
    await screen(admin, 'role');
    await createRole(`owner-${RUN}`, ['tenant:read', 'tenant:update', 'tenant:delete', 'member:read', 'member:write']);
    await createRole(`viewer-${RUN}`, ['tenant:read', 'member:read']);
    const spare = await createRole(`spare-${RUN}`, ['tenant:read']);
    await admin.goto(`${CONSOLE_URL}#/roles`);
    await admin.getByRole('link', { name: `owner-${RUN}` }).waitFor();
    await screen(admin, 'roles', true);

    // Deleting a role says how many hold it and asks why.
    await admin.getByRole('link', { name: `spare-${RUN}`, exact: true }).click();
    await admin.waitForFunction((id) => location.hash === `#/roles/${id}`, spare);
    await admin.getByRole('button', { name: 'Delete role' }).click();
    await confirm(admin, 'never used', {
      check: async (dialog) => {
        await dialog.getByText(/^0 holder/).waitFor();
        expect(true, 'the delete dialog says nobody holds the role');
        await screen(admin, 'delete-role-dialog');
      },
    });
    await admin.getByRole('heading', { name: 'Roles', exact: true }).waitFor();
    expect(!(await admin.getByRole('link', { name: `spare-${RUN}` }).isVisible()), 'the role is deleted');

    // Users, by name: Erin signs in as her address; Dave will be given
    // roles by picking him by his.
    async function createUser(email, given, family, subject) {
      await admin.goto(`${CONSOLE_URL}#/users`);
      await admin.fill('input[name="user-email"]', email);
      await admin.fill('input[name="user-given"]', given);
      await admin.fill('input[name="user-family"]', family);
      if (subject) await admin.fill('input[name="user-subject"]', subject);
      await admin.getByRole('button', { name: 'Create user' }).click();
      await admin.getByRole('heading', { name: `${given} ${family} <${email}>` }).waitFor();
      return decodeURIComponent(admin.url().split('#/users/')[1]);
    }
    const erin = `erin-${RUN}@example.com`;
    const bob = `bob-${RUN}@example.com`;
    const carol = `carol-${RUN}@example.com`;
    const dave = `dave-${RUN}@example.com`;
    await createUser(erin, 'Erin', 'Example', erin);
    await admin.getByRole('table', { name: 'Email addresses' }).getByRole('cell', { name: erin, exact: true }).waitFor();
    await screen(admin, 'user-unverified');
    // Invitations reach verified addresses: the admin vouches for hers.
    await admin.getByRole('button', { name: `Vouch for ${erin}` }).click();
    await admin.getByText(`${erin} is verified.`).waitFor();
    await screen(admin, 'user', true);
    await createUser(dave, 'Dave', 'Doe');
    await findUser(admin, `dave-${RUN}`, `Dave Doe <${dave}>`);
    expect(true, 'a user is found by the start of their address');
    await screen(admin, 'users');

    // Roles for Dave, picked by his address.
    await openTenant(admin, tenantName);
    const give = admin.getByRole('form', { name: 'Give roles' });
    await pick(give, { label: 'Find the user', text: dave }, `Dave Doe <${dave}>`);
    // The role found by the start of its name; checked, it stays in view
    // through another search.
    const giveRoles = give.getByRole('group', { name: 'Roles', exact: true });
    const findRole = async (prefix) => {
      await giveRoles.getByRole('textbox', { name: /^Find a role/ }).fill(prefix);
      await giveRoles.getByRole('button', { name: 'Find' }).click();
    };
    await findRole(`viewer-${RUN}`);
    let shown = await roleChoices(admin, 'Give roles', 1);
    expect(shown[0].startsWith(`viewer-${RUN}`), `the role picker finds a role by the start of its name: ${shown.join('; ')}`);
    await give.getByRole('checkbox', { name: new RegExp(`^viewer-${RUN}`) }).check();
    await findRole(`owner-${RUN}`);
    shown = await roleChoices(admin, 'Give roles', 2);
    expect(
      shown.some((r) => r.startsWith(`owner-${RUN}`)) && (await give.getByRole('checkbox', { name: new RegExp(`^viewer-${RUN}`) }).isChecked()),
      `another search shows its role and keeps the checked one in view, checked: ${shown.join('; ')}`,
    );
    await screen(admin, 'role-picker-search');
    await give.getByRole('button', { name: 'Save roles' }).click();
    await give.getByText('Roles saved.').waitFor();
    await admin.getByRole('table', { name: 'Members' }).getByRole('link', { name: `Dave Doe <${dave}>` }).waitFor();
    expect(true, 'the member list names the member given roles by picking his address');
    // Picked again, a member is not given roles from here (that would
    // replace his unseen): the form says so, links his page, and waits.
    await give.getByText(/is a member here already, with viewer-/).waitFor();
    expect(await give.getByRole('button', { name: 'Save roles' }).isDisabled(), 'a member picked again is not saved over');
    await give.getByRole('link', { name: 'change their roles on their member page' }).waitFor();
    await screen(admin, 'a member picked again');

    // Three invited at once, as the tenant's admins.
    const invite = admin.getByRole('region', { name: 'Invite by email' });
    await invite.locator('textarea[name="invite-emails"]').fill(`${erin}\n${bob}, ${carol}`);
    await invite.getByRole('checkbox', { name: new RegExp(`^tenant-admin-${RUN}`) }).check();
    await invite.getByRole('button', { name: 'Invite' }).click();
    await invite.getByText(`Invited ${erin}, ${bob}, ${carol}.`).waitFor();
    const pending = admin.getByRole('table', { name: 'Pending invitations' });
    for (const email of [erin, bob, carol]) await pending.getByRole('cell', { name: email, exact: true }).waitFor();
    expect((await pending.textContent()).includes(`tenant-admin-${RUN}`), 'the pending invitations name their roles');
    const sentBy = await pending.getByRole('row', { name: new RegExp(erin) }).textContent();
    expect(sentBy.includes(ADMIN), `the pending invitations name who sent them: ${sentBy}`);
    await screen(admin, 'tenant', true);

    // Bob has no account: on his first sign-in he is shown who he is and
    // offered to create it, then accepts.
    const bobPage = await person(browser);
    await signIn(bobPage, bob, 'Create your account');
    const identity = bobPage.getByRole('definition');
    expect((await identity.allTextContents()).some((t) => t.includes(bob)), 'the newcomer is shown the subject to send an admin');
    expect((await identity.allTextContents()).some((t) => /^https?:\/\/\S+/.test(t.trim())), 'and the issuer it is at');
    await screen(bobPage, 'sign-up');
    await bobPage.getByRole('button', { name: 'Create my account' }).click();
    await bobPage.getByRole('heading', { name: /^Welcome/ }).waitFor();
    await bobPage.getByText(new RegExp(`To ${tenantName} as tenant-admin-${RUN}`)).waitFor();
    expect(true, 'his invitation names the tenant and the roles');
    await bobPage.getByRole('button', { name: 'Accept' }).click();
    await bobPage.getByText('Accepted: you are a member now.').waitFor();

    // Where the deployment closes sign-up (its configuration names no
    // issuer open to it, as the console function serves it then), a person
    // unknown here is told who they are, to send an administrator, and is
    // offered no account.
    const strangerPage = await person(browser);
    await strangerPage.route('**/console/config.json', async (route) => {
      const served = await route.fetch();
      const config = await served.json();
      await route.fulfill({ response: served, json: { ...config, signUpIssuers: [] } });
    });
    const stranger = `stranger-${RUN}`;
    await signIn(strangerPage, stranger, 'This service does not know you yet');
    const told = await strangerPage.getByRole('definition').allTextContents();
    expect(told.some((t) => t.includes(stranger)), 'the stranger is shown the subject to send an admin');
    expect(told.some((t) => /^https?:\/\/\S+/.test(t.trim())), 'and the issuer it is at');
    expect((await strangerPage.getByRole('button', { name: 'Create my account' }).count()) === 0, 'and no account is offered');
    await screen(strangerPage, 'stranger');

    // Erin, in her own browser, accepts; signed in again later, she lands
    // in her tenant and sees no other.
    const erinPage = await person(browser);
    await signIn(erinPage, erin);
    await screen(erinPage, 'invited', true);
    await erinPage.getByRole('button', { name: 'Accept' }).click();
    await erinPage.getByText('Accepted: you are a member now.').waitFor();
    await erinPage.goto(CONSOLE_URL);
    await erinPage.getByRole('heading', { name: `Tenant ${tenantName}` }).waitFor();
    const tenantId = decodeURIComponent(erinPage.url().split('#/tenants/')[1]);
    await erinPage.waitForLoadState('networkidle');
    expect(!(await erinPage.getByRole('link', { name: 'Tenants' }).isVisible()), 'the tenant admin has no list of tenants');
    expect(!(await erinPage.getByRole('link', { name: 'Users' }).isVisible()), 'the tenant admin has no list of users');
    expect(!(await erinPage.getByRole('region', { name: 'Delete this tenant' }).isVisible()), 'the tenant admin cannot delete the tenant');
    const members = erinPage.getByRole('table', { name: 'Members' });
    await members.getByRole('link', { name: `Erin Example <${erin}>` }).waitFor();
    await screen(erinPage, 'tenant-admin', true);

    // Her members, searched by address.
    const find = erinPage.getByRole('search', { name: /^Find a member/ });
    await find.getByRole('textbox').fill(`bob-${RUN}`);
    await find.getByRole('button', { name: 'Search' }).click();
    await members.getByRole('link', { name: `Dave Doe <${dave}>` }).waitFor({ state: 'detached' });
    await members.getByRole('link', { name: bob }).waitFor();
    expect((await members.getByRole('row').count()) === 2, 'the search finds the one member');
    // Found by his address, Bob is given a role she holds.
    await members.getByRole('row', { name: new RegExp(`bob-${RUN}`) }).getByRole('link', { name: 'Change roles' }).click();
    await erinPage.getByRole('heading', { name: `${bob} in ${tenantName}` }).waitFor();
    const forBob = erinPage.getByRole('form', { name: 'Give roles' });
    await forBob.getByRole('checkbox', { name: new RegExp(`^viewer-${RUN}`) }).check();
    // Meanwhile the platform admin gives Bob the same on his page: Erin's
    // save, from the grant she read, is refused and says so (nothing of
    // the admin's replaced); reloaded, hers goes through.
    await admin.goto(erinPage.url());
    const adminForBob = admin.getByRole('form', { name: 'Give roles' });
    await adminForBob.getByRole('checkbox', { name: new RegExp(`^viewer-${RUN}`) }).check();
    await adminForBob.getByRole('button', { name: 'Save roles' }).click();
    await adminForBob.getByText('Roles saved.').waitFor();
    await forBob.getByRole('button', { name: 'Save roles' }).click();
    const stale = (await alert(erinPage).textContent()) ?? '';
    expect(/^Someone changed this since you opened it\. Nothing was saved/.test(stale), `a stale save is refused, saying why: ${stale}`);
    await screen(erinPage, 'stale-save');
    await erinPage.reload();
    await forBob.getByRole('checkbox', { name: new RegExp(`^viewer-${RUN}`) }).waitFor();
    expect(await forBob.getByRole('checkbox', { name: new RegExp(`^viewer-${RUN}`) }).isChecked(), 'reloaded, the page shows the change made meanwhile');
    await forBob.getByRole('button', { name: 'Save roles' }).click();
    await forBob.getByText('Roles saved.').waitFor();
    await screen(erinPage, 'member');
    await erinPage.goto(`${CONSOLE_URL}#/tenants/${tenantId}`);
    await find.getByRole('textbox').fill(`bob-${RUN}`);
    await find.getByRole('button', { name: 'Search' }).click();
    const bobRow = await members.getByRole('row', { name: new RegExp(`bob-${RUN}`) }).textContent();
    expect(bobRow.includes(`viewer-${RUN}`), `the tenant admin gives a member found by his address a role: ${bobRow}`);
    await find.getByRole('textbox').fill('');
    await find.getByRole('button', { name: 'Search' }).click();
    await members.getByRole('link', { name: `Dave Doe <${dave}>` }).waitFor();

    // Giving a role she does not hold: the 403 names the permission, and
    // the form keeps what she chose.
    await members.getByRole('row', { name: new RegExp(`Erin Example`) }).getByRole('link', { name: 'Change roles' }).click();
    await erinPage.getByRole('heading', { name: `Erin Example <${erin}> in ${tenantName}` }).waitFor();
    const change = erinPage.getByRole('form', { name: 'Give roles' });
    const owner = change.getByRole('checkbox', { name: new RegExp(`^owner-${RUN}`) });
    await owner.check();
    await change.getByRole('button', { name: 'Save roles' }).click();
    const refused = await alert(erinPage).textContent();
    expect(/you do not hold tenant:(update|delete)/.test(refused ?? ''), `the refusal names the permission she lacks: ${refused}`);
    expect(await owner.isChecked(), 'the form keeps the role chosen');
    await screen(erinPage, 'refused', true);

    // Bob and Dave removed together, with why; Erin, selected after them,
    // is the tenant's last admin: the refusal says who was done, and they
    // leave the list and the selection, Erin staying selected.
    await erinPage.goto(`${CONSOLE_URL}#/tenants/${tenantId}`);
    await members.getByRole('checkbox', { name: `Select ${bob}` }).check();
    await members.getByRole('checkbox', { name: `Select Dave Doe <${dave}>` }).check();
    await members.getByRole('checkbox', { name: `Select Erin Example <${erin}>` }).check();
    await erinPage.getByRole('button', { name: 'Remove 3 selected' }).click();
    const partly = await confirm(erinPage, 'moved to another team', { check: () => screen(erinPage, 'bulk-remove-dialog') });
    const said = (await partly.getByRole('alert').textContent()) ?? '';
    expect(
      said.startsWith('Done for') && said.includes(bob) && said.includes(dave) && /Erin Example.*refused/.test(said),
      `the refusal says who was done and who was refused: ${said}`,
    );
    await partly.getByRole('button', { name: 'Cancel' }).click();
    await members.getByRole('link', { name: bob }).waitFor({ state: 'detached' });
    expect(!(await members.getByText(dave).isVisible()), 'both are removed');
    await erinPage.getByRole('button', { name: 'Remove 1 selected' }).waitFor();
    expect(true, 'only the refused one stays selected');
    await members.getByRole('checkbox', { name: `Select Erin Example <${erin}>` }).uncheck();

    // The last admin cannot remove herself: the 409 says why.
    await members.getByRole('row', { name: /Erin Example/ }).getByRole('button', { name: 'Remove' }).click();
    const dialog = await confirm(erinPage, 'leaving');
    const kept = await dialog.getByRole('alert').textContent();
    expect(
      /without an administrator/.test(kept ?? '') && /member:write/.test(kept ?? ''),
      `removing the last admin is refused, saying why and what to do first: ${kept}`,
    );
    expect(
      await members.getByRole('row', { name: /Erin Example/ }).isVisible(),
      'the last admin is still a member',
    );
    await screen(erinPage, 'last-admin-refused');
    await dialog.getByRole('button', { name: 'Cancel' }).click();

    // Carol's invitation revoked.
    const invitations = erinPage.getByRole('table', { name: 'Pending invitations' });
    await invitations.getByRole('row', { name: new RegExp(carol) }).getByRole('button', { name: 'Revoke' }).click();
    await confirm(erinPage, 'sent by mistake');
    await invitations.getByRole('cell', { name: carol, exact: true }).waitFor({ state: 'detached' });
    expect(true, 'the invitation is revoked');

    // Three invited at once by her, with a role she holds: pending, sent by her.
    const joiners = ['hal', 'ivy', 'jo'].map((n) => `${n}-${RUN}@example.com`);
    const herInvite = erinPage.getByRole('region', { name: 'Invite by email' });
    await herInvite.locator('textarea[name="invite-emails"]').fill(joiners.join('\n'));
    await herInvite.getByRole('checkbox', { name: new RegExp(`^viewer-${RUN}`) }).check();
    await herInvite.getByRole('button', { name: 'Invite' }).click();
    await herInvite.getByText(`Invited ${joiners.join(', ')}.`).waitFor();
    for (const email of joiners) {
      const row = await invitations.getByRole('row', { name: new RegExp(email) }).textContent();
      expect(row.includes(erin) && row.includes(`viewer-${RUN}`), `${email} is invited by her, with the role: ${row}`);
    }

    // Her tenant's directory: a token, shown once with its SCIM base; a
    // group the directory pushes, mapped to a role picked by name; the
    // token revoked, and refused.
    await erinPage.goto(`${CONSOLE_URL}#/tenants/${tenantId}`);
    const tokenForm = erinPage.getByRole('form', { name: 'Create a directory token' });
    await tokenForm.locator('input[name="scim-token-name"]').fill('Okta');
    await tokenForm.getByRole('button', { name: 'Create token' }).click();
    await tokenForm.getByText(/^Created the token Okta/).waitFor();
    const secret = ((await erinPage.locator('.issued code.secret').textContent()) ?? '').trim();
    const base = ((await erinPage.locator('.issued code').first().textContent()) ?? '').trim();
    expect(secret.startsWith('scim_') && base.endsWith(`/scim/v2/${tenantId}`), 'the token is shown once, with its SCIM base');
    await screen(erinPage, 'directory-token');
    const scim = (method, path, body) =>
      fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/scim+json' },
        body: body ? JSON.stringify(body) : undefined,
      });
    const pushed = await scim('POST', '/Groups', { displayName: `Support ${RUN}` });
    expect(pushed.status === 201, `the directory pushes a group (${pushed.status})`);
    await erinPage.reload();
    const group = erinPage.getByRole('form', { name: `Group Support ${RUN}` });
    await group.getByRole('checkbox', { name: new RegExp(`^viewer-${RUN}`) }).check();
    await group.getByRole('button', { name: `Save the roles of Support ${RUN}` }).click();
    await group.getByText(`Support ${RUN} gives viewer-${RUN} now.`).waitFor();
    expect(true, "the directory's group is mapped to a role picked by name");
    await screen(erinPage, 'directory', true);
    const tokenRow = erinPage.getByRole('table', { name: 'Directory tokens' }).getByRole('row', { name: /Okta/ });
    await tokenRow.getByRole('button', { name: 'Revoke Okta' }).click();
    await confirm(erinPage, 'rotating the token');
    await erinPage.getByText('Revoked Okta.').waitFor();
    let cutOff = false;
    for (let i = 0; i < 50 && !cutOff; i++) {
      const answer = await scim('GET', '/Groups');
      cutOff = answer.status === 401 || answer.status === 403;
      if (!cutOff) await new Promise((done) => setTimeout(done, 200));
    }
    expect(cutOff, 'the revoked token is refused');

    // Her tenant's changes, with names and reasons, from History (her
    // tenants to choose from).
    await erinPage.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'History' }).click();
    await erinPage.getByRole('heading', { name: 'History', exact: true }).waitFor();
    await erinPage.getByRole('main').getByRole('link', { name: tenantName, exact: true }).waitFor();
    await screen(erinPage, 'history-index');
    await erinPage.getByRole('main').getByRole('link', { name: tenantName, exact: true }).click();
    await erinPage.getByRole('heading', { name: `Changes in ${tenantName}` }).waitFor();
    const feed = erinPage.getByRole('table', { name: 'Changes' });
    await feed.getByText('moved to another team').first().waitFor();
    expect((await feed.textContent()).includes(`Dave Doe <${dave}> in ${tenantName}`), "the tenant's feed names who and where");
    await screen(erinPage, 'tenant-feed', true);

    // Filtered to what she did (picked among the members: she may not search
    // every user), then by date: nothing before today, her removals today.
    const filterForm = erinPage.getByRole('search', { name: 'Filter the changes' });
    await pick(filterForm, { label: /^Made by/, text: erin }, `Erin Example <${erin}>`);
    await filterForm.getByLabel('Until', { exact: true }).fill(await day(erinPage, -1));
    await filterForm.getByRole('button', { name: 'Show' }).click();
    await erinPage.getByText('No change recorded.').waitFor();
    expect(true, 'the feed filtered to before today shows nothing she did');
    await filterForm.getByLabel('From', { exact: true }).fill(await day(erinPage, 0));
    await filterForm.getByLabel('Until', { exact: true }).fill(await day(erinPage, 0));
    await filterForm.getByRole('button', { name: 'Show' }).click();
    await feed.getByRole('row', { name: /moved to another team/ }).first().waitFor();
    const madeBy = await feed.locator('tbody tr td:nth-child(2)').allTextContents();
    expect(
      madeBy.length > 0 && madeBy.every((w) => w === `Erin Example <${erin}>`),
      `the feed filtered to her, today, shows her changes only: ${[...new Set(madeBy)].join(', ')}`,
    );
    await screen(erinPage, 'tenant-feed-filtered');

    // The platform admin suspends two at once, with why (confirmed), and
    // finds them suspended.
    const fay = `bulk-${RUN}-1@example.com`;
    const gus = `bulk-${RUN}-2@example.com`;
    const fayId = await createUser(fay, 'Fay', 'First', fay);
    await createUser(gus, 'Gus', 'Second');
    // Fay holds a role in the tenant before she is suspended.
    await openTenant(admin, tenantName);
    const giveFay = admin.getByRole('form', { name: 'Give roles' });
    await pick(giveFay, { label: 'Find the user', text: fay }, `Fay First <${fay}>`);
    const fayRoles = giveFay.getByRole('group', { name: 'Roles', exact: true });
    await fayRoles.getByRole('textbox', { name: /^Find a role/ }).fill(`viewer-${RUN}`);
    await fayRoles.getByRole('button', { name: 'Find' }).click();
    await giveFay.getByRole('checkbox', { name: new RegExp(`^viewer-${RUN}`) }).check();
    await giveFay.getByRole('button', { name: 'Save roles' }).click();
    await giveFay.getByText('Roles saved.').waitFor();
    await findUser(admin, `bulk-${RUN}`, `Fay First <${fay}>`);
    const usersTable = admin.getByRole('table', { name: 'Users' });
    await usersTable.getByRole('link', { name: `Gus Second <${gus}>`, exact: true }).waitFor();
    await usersTable.getByRole('checkbox', { name: `Select Fay First <${fay}>` }).check();
    await usersTable.getByRole('checkbox', { name: `Select Gus Second <${gus}>` }).check();
    await admin.getByRole('button', { name: 'Suspend 2 selected' }).click();
    await confirm(admin, 'contract ended', {
      check: async (dialog) => {
        const says = (await dialog.textContent()) ?? '';
        expect(says.includes(`Fay First <${fay}>`) && says.includes(`Gus Second <${gus}>`), 'the bulk suspension names both');
      },
    });
    await admin.getByText('Suspended 2 users.').waitFor();
    await usersTable.getByRole('link', { name: `Fay First <${fay}>`, exact: true }).waitFor({ state: 'detached' });
    await admin.getByRole('search', { name: 'Find users' }).getByRole('combobox', { name: /^Status/ }).selectOption('suspended');
    await usersTable.getByRole('link', { name: `Fay First <${fay}>`, exact: true }).waitFor();
    await usersTable.getByRole('link', { name: `Gus Second <${gus}>`, exact: true }).waitFor();
    expect(true, 'both are listed as suspended');
    await screen(admin, 'users-suspended');
    // Fay, signing in while suspended, is told her account is not active
    // (not that nobody knows her), and is offered no account.
    const fayPage = await person(browser);
    await signIn(fayPage, fay, 'Your account here is not active');
    expect(
      (await fayPage.getByRole('definition').allTextContents()).some((t) => t.includes(fay)),
      'the suspended user is shown the identity to name to an admin',
    );
    expect((await fayPage.getByRole('button', { name: 'Create my account' }).count()) === 0, 'and no account is offered');
    await screen(fayPage, 'inactive');

    // The platform admin finds Dave through the Users search, suspends him
    // with a reason, and finds it in his history and in the platform's feed.
    await (await findUser(admin, `dave-${RUN}`, `Dave Doe <${dave}>`)).click();
    await admin.getByRole('heading', { name: `Dave Doe <${dave}>` }).waitFor();
    await admin.getByRole('button', { name: 'Suspend' }).click();
    // The reason as a phone types it (a curly apostrophe, an accent).
    await confirm(admin, 'left the company – didn’t renew, départ', { check: () => screen(admin, 'suspend-dialog') });
    await admin.getByText('Status is now suspended.').waitFor();
    await admin.getByRole('link', { name: 'History of this user' }).click();
    await admin.getByRole('table', { name: 'Changes' }).getByText('left the company – didn’t renew, départ').waitFor();
    expect(true, "the user's history says why he was suspended");
    await screen(admin, 'history', true);
    await admin.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'History' }).click();
    await admin.getByRole('heading', { name: 'History of the platform' }).waitFor();
    await admin.locator('select[name="kind"]').selectOption('user');
    await admin.getByRole('button', { name: 'Show' }).click();
    await admin.getByRole('table', { name: 'Changes' }).getByRole('row', { name: /left the company/ }).getByRole('link', { name: `user Dave Doe <${dave}>` }).waitFor();
    expect(true, "the platform's feed shows the suspension, by name");
    const bulkRows = admin.getByRole('table', { name: 'Changes' }).getByRole('row', { name: /contract ended/ });
    await bulkRows.getByRole('link', { name: `user Fay First <${fay}>` }).waitFor();
    await bulkRows.getByRole('link', { name: `user Gus Second <${gus}>` }).waitFor();
    expect(true, "the platform's feed shows the bulk suspension, with its reason");
    await screen(admin, 'feed', true);
    // Filtered to what Erin made (any kind): her removals, and nobody else's change.
    const platformFilter = admin.getByRole('search', { name: 'Filter the changes' });
    await platformFilter.locator('select[name="kind"]').selectOption('');
    await pick(platformFilter, { label: /^Made by/, text: erin }, `Erin Example <${erin}>`);
    await platformFilter.getByRole('button', { name: 'Show' }).click();
    const platformFeed = admin.getByRole('table', { name: 'Changes' });
    await platformFeed.getByRole('row', { name: /moved to another team/ }).first().waitFor();
    const erinMade = await platformFeed.locator('tbody tr td:nth-child(2)').allTextContents();
    expect(
      erinMade.length > 0 && erinMade.every((w) => w === `Erin Example <${erin}>`),
      `the platform's feed filtered to Erin shows her changes only: ${[...new Set(erinMade)].join(', ')}`,
    );
    await screen(admin, 'feed-by-actor');

    // An identity linked, then unlinked, on Dave's page (found again, he is
    // suspended now).
    await (await findUser(admin, `dave-${RUN}`, `Dave Doe <${dave}>`, 'suspended')).click();
    await admin.getByRole('heading', { name: `Dave Doe <${dave}>` }).waitFor();
    const subject = `dave-alt-${RUN}`;
    await admin.fill('input[name="identity-subject"]', subject);
    await admin.getByRole('button', { name: 'Link identity' }).click();
    await admin.getByText(`Linked ${subject}.`).waitFor();
    await admin.getByRole('button', { name: `Unlink ${subject}` }).click();
    await confirm(admin, 'a test identity');
    await admin.getByText(`Unlinked ${subject}.`).waitFor();
    await admin.getByRole('listitem').filter({ hasText: subject }).waitFor({ state: 'detached' });
    expect(true, 'the identity is linked, then unlinked');

    // Another address for Dave: added (unverified until proved), vouched
    // for, made primary; the old one then removed, with why.
    const daveNew = `dave.new-${RUN}@example.com`;
    await admin.fill('input[name="add-email"]', daveNew);
    await admin.getByRole('button', { name: 'Add address' }).click();
    const addresses = admin.getByRole('table', { name: 'Email addresses' });
    await addresses.getByRole('row', { name: daveNew }).getByText('not verified').waitFor();
    await screen(admin, 'user-second-address');
    // A wrong code for the second of his two unverified addresses is
    // refused naming the field once, and marks that address's box (not
    // the first's), which takes the focus.
    const codeBox = addresses.getByRole('textbox', { name: `Code sent to ${daveNew}` });
    await codeBox.fill('WRONG1');
    await addresses.getByRole('button', { name: `Verify ${daveNew}` }).click();
    await admin.locator('[aria-invalid="true"]').first().waitFor();
    const wrongCode = (await alert(admin).textContent()) ?? '';
    expect(/^Code: /.test(wrongCode) && !/code: .*code: /i.test(wrongCode), `a wrong code is refused, naming the field once: ${wrongCode}`);
    const firstBox = addresses.getByRole('textbox', { name: `Code sent to ${dave}` });
    expect(
      (await codeBox.getAttribute('aria-invalid')) === 'true' && (await firstBox.getAttribute('aria-invalid')) !== 'true',
      'the wrong code marks its own address box only',
    );
    expect(await codeBox.evaluate((el) => el === document.activeElement), 'the marked box has the focus');
    await screen(admin, 'user-wrong-code');
    await admin.getByRole('button', { name: `Vouch for ${daveNew}` }).click();
    await admin.getByText(`${daveNew} is verified.`).waitFor();
    await admin.getByRole('button', { name: `Make ${daveNew} primary` }).click();
    await admin.getByText(`${daveNew} is the primary address now.`).waitFor();
    await admin.getByRole('button', { name: `Remove ${dave}` }).click();
    await confirm(admin, 'old address retired');
    await admin.getByText(`Removed ${dave}.`).waitFor();
    await addresses.getByRole('cell', { name: dave, exact: true }).waitFor({ state: 'detached' });
    const primary = await addresses.getByRole('row', { name: daveNew }).textContent();
    expect(primary.includes('primary'), `the new address is his primary one, the old one gone: ${primary}`);


    // Every other state a person reaches, checked as the rest: Fay's
    // grant page names her though she is suspended, its history, and the
    // dialogs not confirmed elsewhere (each opened, then cancelled).
    const cancel = async (page, button, name) => {
      await page.getByRole('button', { name: button, exact: true }).click();
      const dialog = page.getByRole('dialog');
      await dialog.waitFor();
      await screen(page, name);
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'hidden' });
    };
    // Reached by clicking: the tenants, the tenant, her row.
    await admin.goto(`${CONSOLE_URL}#/tenants`);
    await admin.getByRole('main').getByRole('link', { name: tenantName, exact: true }).click();
    await admin.getByRole('main').getByRole('link', { name: fay }).first().click();
    await admin.waitForFunction((path) => location.hash === path, `#/tenants/${tenantId}/members/${fayId}`);
    await admin.getByRole('heading', { name: `Fay First <${fay}> in ${tenantName}` }).waitFor();
    expect(true, "a suspended member's page names her, her tenant and her roles");
    await admin.getByText(new RegExp(`viewer-${RUN}`)).first().waitFor();
    await screen(admin, 'member-suspended');
    await admin.fill('input[name="grant-end"]', '2031-01-01T10:00');
    await cancel(admin, 'End the grant sooner', 'end-sooner-dialog');
    await admin.getByRole('link', { name: 'History of this grant' }).click();
    await admin.getByRole('table', { name: 'Changes' }).waitFor();
    await screen(admin, 'grant-history');
    await (await findUser(admin, `dave.new-${RUN}`, `Dave Doe <${daveNew}>`, 'suspended')).click();
    await admin.getByRole('heading', { name: `Dave Doe <${daveNew}>` }).waitFor();
    await cancel(admin, 'Activate', 'activate-dialog');
    await cancel(admin, 'Delete user', 'delete-user-dialog');
    await openTenant(admin, tenantName);
    const memberSearch = admin.getByRole('search', { name: 'Find a member (name, email, id)' });
    await memberSearch.getByRole('textbox', { name: 'Find a member (name, email, id)' }).fill(fay);
    await memberSearch.getByRole('button', { name: 'Search' }).click();
    await admin.getByRole('table', { name: 'Members' }).getByRole('link', { name: `Fay First <${fay}>` }).waitFor();
    expect(true, 'a member search finds a suspended member');
    await cancel(admin, 'Delete tenant', 'delete-tenant-dialog');
    await admin.getByRole('link', { name: 'History of this tenant' }).click();
    await admin.getByRole('table', { name: 'Changes' }).waitFor();
    await screen(admin, 'tenant-history');
    // The platform's feed over a span with no change: its empty state.
    await admin.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'History' }).click();
    await admin.getByRole('heading', { name: 'History of the platform' }).waitFor();
    const emptySpan = admin.getByRole('search', { name: 'Filter the changes' });
    await emptySpan.getByLabel(/^From/).fill('2001-01-01');
    await emptySpan.getByLabel(/^Until/).fill('2001-01-02');
    await emptySpan.getByRole('button', { name: 'Show' }).click();
    await admin.getByText('No change recorded.').waitFor();
    await screen(admin, 'feed-empty');
    await admin.goto(`${CONSOLE_URL}#/no-such-screen`);
    await admin.getByRole('heading', { name: 'No such page' }).waitFor();
    await screen(admin, 'no-such-page');

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
    // Corrected, created, then deleted: the dialog asks why, and the list
    // no longer has it.
    await admin.fill('textarea[name="statement"]', 'forbid(principal, action == Action::"policy:delete", resource)\nwhen { false };');
    await admin.getByRole('button', { name: 'Create policy' }).click();
    await admin.getByRole('link', { name: 'History of this policy' }).click();
    await admin.getByRole('table', { name: 'Changes' }).waitFor();
    await screen(admin, 'policy-history');
    await admin.goBack();
    await admin.getByRole('button', { name: 'Delete policy' }).click();
    await confirm(admin, 'tried in the console test');
    await admin.waitForURL((url) => url.hash === '#/policies');
    await admin.getByRole('heading', { name: 'Cedar policies' }).waitFor();
    expect(!(await admin.getByRole('link', { name: `bad-${RUN}` }).isVisible()), 'a deleted policy is gone from the list');

    // Check access, by name, and why.
    await admin.goto(`${CONSOLE_URL}#/check`);
    const question = admin.getByRole('region', { name: 'Question' });
    await pick(question, { label: /^Who/, text: erin }, `Erin Example <${erin}>`);
    await question.getByRole('textbox', { name: /^Where/ }).fill(tenantName);
    await question.getByRole('button', { name: 'Find' }).nth(1).click();
    await question.getByRole('radio', { name: tenantName }).check();
    await question.locator('select[name="check-action"]').selectOption('member:write');
    await question.getByRole('button', { name: 'Check' }).click();
    const decision = await admin.locator('.decision').textContent();
    expect(/^Allowed/.test(decision ?? ''), `erin may write members: ${decision}`);
    const heard = await admin
      .waitForFunction(() => document.activeElement?.classList.contains('decision'), null, { timeout: 5000 })
      .then(() => true, () => false);
    expect(heard, 'the focus is on the decision');
    await admin.getByText(`tenant-admin-${RUN} (tenant)`).first().waitFor();
    expect(true, 'the check names the role that gives it');
    await screen(admin, 'check', true);


    // Deleting a role someone holds says so.
    const adminRole = admin.getByRole('link', { name: `tenant-admin-${RUN}` });
    await admin.goto(`${CONSOLE_URL}#/roles`);
    // The permissions offered arrive above the list: once they have, the
    // list stays where the click lands.
    await admin.getByRole('checkbox', { name: /^authz:check/ }).waitFor();
    // Found by the start of its name.
    const findRoles = admin.getByRole('search', { name: 'Name starts with' });
    await findRoles.getByRole('textbox', { name: 'Name starts with' }).fill(`tenant-admin-${RUN}`);
    await findRoles.getByRole('button', { name: 'Search' }).click();
    await admin.getByRole('table', { name: 'Roles' }).getByRole('link').nth(1).waitFor({ state: 'detached' });
    expect(true, 'the roles search finds the role by the start of its name, alone');
    await adminRole.click();
    await admin.getByRole('heading', { name: `Role tenant-admin-${RUN}` }).waitFor();
    await admin.getByRole('link', { name: 'History of this role' }).click();
    await admin.getByRole('table', { name: 'Changes' }).waitFor();
    await screen(admin, 'role-history');
    await admin.goBack();
    await admin.getByRole('heading', { name: `Role tenant-admin-${RUN}` }).waitFor();
    await admin.getByRole('button', { name: 'Delete role' }).click();
    await confirm(admin, 'replaced by the directory\'s groups', {
      check: async (dialog) => {
        await dialog.getByText(/^1 holder/).waitFor();
        expect(true, 'the delete dialog says one person (Erin) holds the role');
      },
    });
    await admin.getByRole('heading', { name: 'Roles', exact: true }).waitFor();

    // Screens that differ have titles that differ.
    const shared = [...titles].filter(([, routes]) => routes.size > 1);
    expect(
      shared.length === 0,
      `each of the ${titles.size} titles seen names one screen${shared.map(([t, r]) => `; ${t} on ${[...r].join(', ')}`).join('')}`,
    );

    // Sign-out forgets the tokens in this tab (and asks the provider to end
    // its session: its confirmation page is where the browser goes).
    await admin.getByRole('button', { name: 'Sign out' }).click();
    await admin.waitForURL((url) => !url.href.startsWith(CONSOLE_URL));
    await admin.goto(CONSOLE_URL);
    await admin.getByRole('button', { name: 'Sign in' }).waitFor();
    expect(true, 'signed out, the console asks to sign in again');
    await screen(admin, 'not-signed-in');
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

/** Opens the tenant named `name` from the list of tenants. */
async function openTenant(page, name) {
  await page.goto(`${CONSOLE_URL}#/tenants`);
  await page.getByRole('link', { name, exact: true }).click();
  await page.getByRole('heading', { name: `Tenant ${name}` }).waitFor();
}

main().then(
  () => console.log('console: every expectation held'),
  (e) => {
    console.error(`console: ${e.stack ?? e}`);
    process.exit(1);
  },
);
