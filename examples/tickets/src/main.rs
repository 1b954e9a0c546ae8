//! `tickets`: the backend of a team's own API protected by the authorizer
//! (docs/authorizer.md#protecting-another-api), as small as it can be. It
//! trusts only what the authorizer put in the request context, never the
//! path: the tenant is the context's `tenantId`, the caller its `userId`,
//! what they may do its `permissions`. A request without that context did
//! not come through the authorizer and is refused (401); one whose answer
//! API Gateway reused past its `accessUntil` (the caller's grant or global
//! roles ended since) is refused (403).
//!
//! It keeps nothing: `GET` answers an empty list with who asked, `POST`
//! answers the ticket it would have opened. A real backend stores them.

use lambda_http::request::RequestContext;
use lambda_http::{service_fn, Body, Error, Request, RequestExt, RequestPayloadExt, Response};
use serde_json::{json, Value};

/// What the authorizer decided, as API Gateway passes it on (REST API:
/// `requestContext.authorizer`; HTTP API: `requestContext.authorizer.lambda`).
struct Caller {
    user_id: String,
    tenant_id: String,
    permissions: Vec<String>,
    /// When the authorizer's answer stops being right (seconds since the
    /// epoch), if it does.
    access_until: Option<u64>,
}

impl Caller {
    fn from(request: &Request) -> Option<Self> {
        // `fields` is the context in either form (an HTTP API's
        // `authorizer.lambda`).
        let fields = match request.request_context_ref()? {
            RequestContext::ApiGatewayV1(c) => &c.authorizer.fields,
            RequestContext::ApiGatewayV2(c) => &c.authorizer.as_ref()?.fields,
            _ => return None,
        };
        let text = |name: &str| {
            fields
                .get(name)
                .and_then(Value::as_str)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        };
        Some(Self {
            user_id: text("userId")?,
            tenant_id: text("tenantId")?,
            permissions: text("permissions")
                .unwrap_or_default()
                .split(',')
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect(),
            // `never`, or absent from an older authorizer's answer: none.
            access_until: text("accessUntil").and_then(|t| t.parse().ok()),
        })
    }

    /// Whether the answer API Gateway passed on has stopped being right:
    /// it may reuse an answer for up to its result cache's TTL.
    fn ended(&self) -> bool {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.access_until.is_some_and(|end| end <= now)
    }
}

fn reply(status: u16, body: Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .expect("a response")
}

fn error(status: u16, code: &str, message: &str) -> Response<Body> {
    reply(status, json!({"error": {"code": code, "message": message}}))
}

async fn handle(request: Request) -> Result<Response<Body>, Error> {
    let Some(caller) = Caller::from(&request) else {
        return Ok(error(
            401,
            "unauthenticated",
            "the request did not come through the authorizer",
        ));
    };
    if caller.ended() {
        return Ok(error(
            403,
            "forbidden",
            "the caller's access here has ended",
        ));
    }
    let who = json!({"userId": caller.user_id, "permissions": caller.permissions});
    Ok(match request.method().as_str() {
        "GET" => reply(
            200,
            json!({"tenantId": caller.tenant_id, "caller": who, "tickets": []}),
        ),
        "POST" => {
            let title = match request.payload::<Value>() {
                Ok(Some(body)) => body
                    .get("title")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                _ => None,
            };
            let Some(title) = title.filter(|t| !t.trim().is_empty()) else {
                return Ok(error(400, "invalid", "title: must not be empty"));
            };
            reply(
                201,
                json!({
                    "ticketId": ulid::Ulid::new().to_string(),
                    "tenantId": caller.tenant_id,
                    "title": title,
                    "openedBy": caller.user_id,
                }),
            )
        }
        _ => error(405, "method_not_allowed", "GET or POST"),
    })
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_http::run(service_fn(handle)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An HTTP API (payload 2.0) request, as API Gateway sends it after a
    /// Lambda authorizer's simple answer with a context.
    fn http_api_event(method: &str, authorizer: Value) -> Request {
        let event = json!({
            "version": "2.0",
            "routeKey": format!("{method} /tenants/{{tenantId}}/tickets"),
            "rawPath": "/tenants/01ARZ3NDEKTSV4RRFFQ69G5FAV/tickets",
            "rawQueryString": "",
            "headers": {"content-type": "application/json"},
            "requestContext": {
                "accountId": "123456789012",
                "apiId": "api",
                "authorizer": authorizer,
                "domainName": "api.example.com",
                "domainPrefix": "api",
                "http": {
                    "method": method,
                    "path": "/tenants/01ARZ3NDEKTSV4RRFFQ69G5FAV/tickets",
                    "protocol": "HTTP/1.1",
                    "sourceIp": "192.0.2.1",
                    "userAgent": "test"
                },
                "requestId": "id",
                "routeKey": format!("{method} /tenants/{{tenantId}}/tickets"),
                "stage": "$default",
                "time": "26/Nov/2026:10:00:00 +0000",
                "timeEpoch": 1795600000000u64
            },
            "body": "{\"title\": \"printer on fire\"}",
            "isBase64Encoded": false
        });
        lambda_http::request::from_str(&event.to_string()).expect("an HTTP API event")
    }

    fn body(response: &Response<Body>) -> Value {
        serde_json::from_slice(response.body().as_ref()).unwrap()
    }

    #[tokio::test]
    async fn an_http_api_request_is_answered_from_the_lambda_context() {
        let context = json!({"lambda": {
            "userId": "01ARZ3NDEKTSV4RRFFQ69G5FAW",
            "tenantId": "01ARZ3NDEKTSV4RRFFQ69G5FAV",
            "permissions": "ticket:read,ticket:create"
        }});
        let listed = handle(http_api_event("GET", context.clone()))
            .await
            .unwrap();
        assert_eq!(listed.status(), 200);
        assert_eq!(body(&listed)["tenantId"], "01ARZ3NDEKTSV4RRFFQ69G5FAV");
        assert_eq!(
            body(&listed)["caller"]["permissions"],
            json!(["ticket:read", "ticket:create"])
        );
        let opened = handle(http_api_event("POST", context)).await.unwrap();
        assert_eq!(opened.status(), 201);
        assert_eq!(body(&opened)["openedBy"], "01ARZ3NDEKTSV4RRFFQ69G5FAW");
    }

    /// An answer API Gateway reused past its `accessUntil` is refused;
    /// one that has not ended, or never does, is served.
    #[tokio::test]
    async fn an_answer_reused_past_its_access_until_is_refused() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        for (until, status) in [
            ((now - 1).to_string(), 403),
            (now.to_string(), 403),
            ((now + 60).to_string(), 200),
            ("never".to_string(), 200),
        ] {
            let context = json!({"lambda": {
                "userId": "01ARZ3NDEKTSV4RRFFQ69G5FAW",
                "tenantId": "01ARZ3NDEKTSV4RRFFQ69G5FAV",
                "permissions": "ticket:read",
                "accessUntil": until
            }});
            let answer = handle(http_api_event("GET", context)).await.unwrap();
            assert_eq!(answer.status(), status, "accessUntil {until}");
        }
    }

    #[tokio::test]
    async fn a_request_without_the_authorizer_context_is_refused() {
        let refused = handle(http_api_event("GET", json!({}))).await.unwrap();
        assert_eq!(refused.status(), 401);
        assert_eq!(body(&refused)["error"]["code"], "unauthenticated");
    }
}
