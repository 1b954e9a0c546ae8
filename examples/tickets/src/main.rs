//! `tickets`: the backend of a team's own API protected by the authorizer
//! (docs/authorizer.md#protecting-another-api), as small as it can be. It
//! trusts only what the authorizer put in the request context, never the
//! path: the tenant is the context's `tenantId`, the caller its `userId`,
//! what they may do its `permissions`. A request without that context did
//! not come through the authorizer and is refused (401).
//!
//! It keeps nothing: `GET` answers an empty list with who asked, `POST`
//! answers the ticket it would have opened. A real backend stores them.

use lambda_http::request::RequestContext;
use lambda_http::{service_fn, Body, Error, Request, RequestExt, RequestPayloadExt, Response};
use serde_json::{json, Map, Value};

/// What the authorizer decided, as API Gateway passes it on (REST API:
/// `requestContext.authorizer`; HTTP API: `requestContext.authorizer.lambda`).
struct Caller {
    user_id: String,
    tenant_id: String,
    permissions: Vec<String>,
}

impl Caller {
    fn from(request: &Request) -> Option<Self> {
        let context = request.request_context_ref()?;
        let fields: &std::collections::HashMap<String, Value> = match context {
            RequestContext::ApiGatewayV1(c) => &c.authorizer.fields,
            RequestContext::ApiGatewayV2(c) => &c.authorizer.as_ref()?.fields,
            _ => return None,
        };
        // An HTTP API nests a Lambda authorizer's context under `lambda`.
        let fields = match fields.get("lambda").and_then(Value::as_object) {
            Some(lambda) => lambda.clone(),
            None => fields.clone().into_iter().collect::<Map<_, _>>(),
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
        })
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
