"""The contract test's hooks (Schemathesis): values the document states but
no generator can draw, drawn here, and the tester's own account left alone.

- A list's `cursor` is whatever the list gave: a made-up one is refused (400
  naming `cursor`), so cases meant to be valid carry none.
- `rolesExpireAt` and `expiresAt` must be in the future: valid cases get a
  time a week ahead.
- A verification `code` is the one mailed to the address, which the test
  never reads: valid cases vouch for the address instead (`verified: true`,
  which the tester, a platform administrator, may do).
- A policy `statement` is Cedar, checked against the schema: valid cases
  get one of a few statements that parse, validate and stop nobody; on a
  tenant's own policy routes, one confined to that tenant (as the routes
  require).
- An `Idempotency-Key` names one request: valid cases get a fresh one, so
  two different requests never share a key (a 422 by design).
- A PATCH names the version it changes, in `If-Match` or in the body's
  `version` (not both with different values), as the descriptions say:
  valid cases carry one. (Whether it is the current one is the server's
  state: a 412, like a 404 for an id that does not exist.)
- `GET /roles` lists one `scope` a page at a time (optionally by
  `namePrefix`), or every role granting a `permission` in one page (so no
  `namePrefix`, `limit` or `cursor` beside it), as its
  parameters' descriptions say; OpenAPI cannot state a rule between
  parameters, so valid cases follow it here.
- The tester never writes to its own user (`CONTRACT_ADMIN_USER_ID`, put in
  place of a user id nobody has; reading it is harmless): deleting or
  suspending it, or unlinking its identity, would end the run's session.
"""

import datetime
import os
import uuid

import schemathesis
from schemathesis.generation import GenerationMode

ADMIN = os.environ["CONTRACT_ADMIN_USER_ID"].upper()
# A user id nobody has: where the tester's own would go.
NOBODY = "7ZZZZZZZZZZZZZZZZZZZZZZZZZ"

STATEMENTS = [
    'permit(principal, action == Action::"tenant:read", resource) when { context.method == "GET" };',
    'forbid(principal, action == Action::"tenant:delete", resource) when { context.route == "/contract-test/never" };',
    'permit(principal, action in [Action::"member:read", Action::"tenant:read"], resource);',
]


def _positive(case):
    return case.meta is not None and case.meta.generation.mode == GenerationMode.POSITIVE


@schemathesis.hook
def map_case(context, case):
    if case.method.upper() != "GET":
        for name, value in (case.path_parameters or {}).items():
            if str(value).upper() == ADMIN:
                case.path_parameters[name] = NOBODY
    if not _positive(case):
        return case
    if case.query is None:
        case.query = {}
    query = case.query
    query.pop("cursor", None)
    if case.method.upper() == "GET" and case.operation.path == "/roles":
        if "permission" in query:
            query.pop("limit", None)
            query.pop("namePrefix", None)
        else:
            query.setdefault("scope", "tenant")
    if case.headers is None:
        case.headers = {}
    headers = case.headers
    if "Idempotency-Key" in headers:
        headers["Idempotency-Key"] = uuid.uuid4().hex
    if isinstance(case.body, dict) and case.body.get("version") is None:
        case.body.pop("version", None)
    if isinstance(case.body, dict) and "version" in case.body:
        headers.pop("If-Match", None)
    elif case.method.upper() == "PATCH":
        headers.setdefault("If-Match", "1")
    if isinstance(case.body, dict):
        week_ahead = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=7)
        for field in ("rolesExpireAt", "expiresAt"):
            if isinstance(case.body.get(field), str):
                case.body[field] = week_ahead.strftime("%Y-%m-%dT%H:%M:%SZ")
        if isinstance(case.body.get("code"), str):
            case.body = {"verified": True}
        tenant = (case.path_parameters or {}).get("tenantId")
        own = tenant is not None and case.operation.path.startswith("/tenants/{tenantId}/policies")
        if isinstance(case.body.get("statement"), str):
            if own:
                case.body["statement"] = (
                    'forbid(principal, action == Action::"tenant:delete", '
                    f'resource in Tenant::"{str(tenant).upper()}") '
                    'when { context.route == "/contract-test/never" };'
                )
            else:
                case.body["statement"] = STATEMENTS[len(case.body["statement"]) % len(STATEMENTS)]
    return case
