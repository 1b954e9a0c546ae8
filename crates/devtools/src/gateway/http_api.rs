//! What an HTTP API does differently from a REST API, for the example's
//! `TicketsHttpApi`: the payload 2.0 authorizer event and its simple
//! answer (`{"isAuthorized": …, "context": …}`), the payload 2.0 event its
//! integrations receive (the authorizer's context under
//! `requestContext.authorizer.lambda`) and the responses they answer, and
//! its own answers (`{"message": "Unauthorized"}` 401, `Forbidden` 403,
//! `Not Found` 404, `Internal Server Error` 500, `Service Unavailable` 503
//! for a slow integration), which no gateway response reshapes.

use aws_lambda_events::apigw::{
    ApiGatewayRequestAuthorizer, ApiGatewayV2CustomAuthorizerSimpleResponse,
    ApiGatewayV2CustomAuthorizerV2Request, ApiGatewayV2httpRequest, ApiGatewayV2httpRequestContext,
    ApiGatewayV2httpResponse,
};
use aws_lambda_events::encodings::Body;
use aws_lambda_events::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use aws_lambda_events::query_map::QueryMap;
use base64::Engine;
use hyper::body::Bytes;
use serde_json::{json, Map, Value};

use super::{Call, Gateway, Reply};
use crate::lambda::{InvokeError, Invoked};

impl Reply {
    /// One of an HTTP API's own answers: `{"message": …}`, with the
    /// request id header HTTP APIs send.
    pub(super) fn http_api(status: u16, message: &str) -> Self {
        let mut headers = HeaderMap::new();
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        headers.insert(
            HeaderName::from_static("apigw-requestid"),
            HeaderValue::from_str(&ulid::Ulid::new().to_string())
                .expect("a ULID is a header value"),
        );
        Self {
            status: StatusCode::from_u16(status).expect("a valid status"),
            headers,
            body: Bytes::from(json!({ "message": message }).to_string()),
            ..Default::default()
        }
    }
}

/// A simple answer's verdict and context, checked as API Gateway checks
/// it: `isAuthorized` a boolean, the context an object of strings,
/// numbers, booleans (and, unlike a REST API's, objects and arrays).
pub(super) fn simple_answer(value: Value) -> Result<(bool, Map<String, Value>), String> {
    let answer: ApiGatewayV2CustomAuthorizerSimpleResponse<Value> =
        serde_json::from_value(value).map_err(|e| format!("not a simple response: {e}"))?;
    let context = match answer.context {
        Value::Null => Map::new(),
        Value::Object(map) => map,
        other => return Err(format!("context is not an object: {other}")),
    };
    Ok((answer.is_authorized, context))
}

/// Fields the library's payload 2.0 request type also carries for payload
/// 1.0 authorizer events: dropped, as an HTTP API's integration event has
/// none of them.
const NOT_IN_PAYLOAD_2: [&str; 5] = [
    "type",
    "methodArn",
    "httpMethod",
    "identitySource",
    "authorizationToken",
];

impl Gateway {
    /// The request's context as both payload 2.0 events carry it.
    fn http_context(&self, call: &Call<'_>) -> ApiGatewayV2httpRequestContext {
        let now = authz_core::clock::now_since_epoch();
        let mut context = ApiGatewayV2httpRequestContext::default();
        context.route_key = Some(route_key(call));
        context.account_id = Some(self.config.account_id.clone());
        context.stage = Some(self.config.api.stage.clone());
        context.request_id = Some(call.request_id.clone());
        context.apiid = Some(self.config.api_id.clone());
        context.domain_name = call
            .request
            .headers
            .get("host")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        context.time_epoch = now.as_millis() as i64;
        context.http.method = call.method.parse().unwrap_or(Method::GET);
        context.http.path = Some(call.path.to_string());
        context.http.protocol = Some("HTTP/1.1".into());
        context.http.source_ip = Some(call.request.source_ip.clone());
        context.http.user_agent = call
            .request
            .headers
            .get("user-agent")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        context
    }

    /// The payload 2.0 authorizer event for `call`, naming its route ARN
    /// and the identity sources' values.
    pub(super) fn authorizer_event_v2(
        &self,
        call: &Call<'_>,
        route_arn: &str,
        identity: Vec<String>,
    ) -> Value {
        let mut event = ApiGatewayV2CustomAuthorizerV2Request::default();
        event.version = Some("2.0".into());
        event.type_ = Some("REQUEST".into());
        event.route_arn = Some(route_arn.to_string());
        event.identity_source = Some(identity);
        event.route_key = Some(route_key(call));
        event.raw_path = Some(call.path.to_string());
        event.raw_query_string = Some(call.raw_query.to_string());
        event.headers = call.request.headers.clone();
        event.query_string_parameters = joined(&call.query);
        event.request_context = self.http_context(call);
        event.path_parameters = call.matched.path_parameters.clone();
        serde_json::to_value(event).expect("an authorizer event serializes")
    }

    /// The payload 2.0 event an integration receives, with the
    /// authorizer's context.
    pub(super) fn proxy_event_v2(&self, call: &Call<'_>, authorizer: Map<String, Value>) -> Value {
        let mut context = self.http_context(call);
        let mut lambda = ApiGatewayRequestAuthorizer::default();
        lambda.fields = authorizer.into_iter().collect();
        context.authorizer = Some(lambda);
        let mut event = ApiGatewayV2httpRequest::default();
        event.version = Some("2.0".into());
        event.route_key = Some(route_key(call));
        event.raw_path = Some(call.path.to_string());
        event.raw_query_string = Some(call.raw_query.to_string());
        event.headers = call.request.headers.clone();
        event.query_string_parameters = QueryMap::from(
            joined(&call.query)
                .into_iter()
                .map(|(k, v)| (k, vec![v]))
                .collect::<std::collections::HashMap<_, _>>(),
        );
        event.path_parameters = call.matched.path_parameters.clone();
        event.request_context = context;
        let body = &call.request.body;
        if !body.is_empty() {
            match std::str::from_utf8(body) {
                Ok(text) => event.body = Some(text.to_string()),
                Err(_) => {
                    event.body = Some(base64::engine::general_purpose::STANDARD.encode(body));
                    event.is_base64_encoded = true;
                }
            }
        }
        let mut value = serde_json::to_value(event).expect("a payload 2.0 event serializes");
        if let Some(fields) = value.as_object_mut() {
            for name in NOT_IN_PAYLOAD_2 {
                fields.remove(name);
            }
        }
        value
    }
}

/// `METHOD /resource`, as an HTTP API names a route.
fn route_key(call: &Call<'_>) -> String {
    format!(
        "{} {}",
        call.matched.route.method, call.matched.route.resource
    )
}

/// Query parameters as payload 2.0 carries them: a name's values joined
/// with commas.
fn joined(
    query: &std::collections::HashMap<String, Vec<String>>,
) -> std::collections::HashMap<String, String> {
    query
        .iter()
        .map(|(k, v)| (k.clone(), v.join(",")))
        .collect()
}

/// The HTTP API's answer for an integration's invocation: its response,
/// or 500 for a failing integration and 503 for a slow one.
pub(super) fn integration_reply_v2(invoked: Result<Invoked, InvokeError>) -> Reply {
    match invoked {
        Ok(Invoked::Response(v)) => response_v2(v).unwrap_or_else(|reason| {
            tracing::warn!(%reason, "malformed integration response: 500");
            Reply::http_api(500, "Internal Server Error")
        }),
        Ok(Invoked::FunctionError { message, .. }) => {
            tracing::warn!(%message, "integration error: 500");
            Reply::http_api(500, "Internal Server Error")
        }
        Err(InvokeError {
            timed_out: true, ..
        }) => Reply::http_api(503, "Service Unavailable"),
        Err(e) => {
            tracing::warn!(error = %e, "integration unreachable: 500");
            Reply::http_api(500, "Internal Server Error")
        }
    }
}

/// A payload 2.0 response: with a `statusCode`, the response it describes;
/// without one, the whole answer is a 200's JSON body (API Gateway's rule
/// for payload 2.0).
fn response_v2(mut value: Value) -> Result<Reply, String> {
    let mut headers = HeaderMap::new();
    headers.insert(
        HeaderName::from_static("apigw-requestid"),
        HeaderValue::from_str(&ulid::Ulid::new().to_string()).expect("a ULID is a header value"),
    );
    if value.get("statusCode").is_none() {
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        return Ok(Reply {
            status: StatusCode::OK,
            headers,
            body: Bytes::from(value.to_string()),
            ..Default::default()
        });
    }
    // The library's type requires `cookies`, which a response may leave out.
    if let Some(fields) = value.as_object_mut() {
        fields.entry("cookies").or_insert_with(|| json!([]));
    }
    let response: ApiGatewayV2httpResponse =
        serde_json::from_value(value).map_err(|e| e.to_string())?;
    let status = u16::try_from(response.status_code)
        .ok()
        .and_then(|s| StatusCode::from_u16(s).ok())
        .ok_or_else(|| format!("status {}", response.status_code))?;
    for (name, value) in response.multi_value_headers.iter() {
        headers.append(name.clone(), value.clone());
    }
    for (name, value) in response.headers.iter() {
        if !headers.contains_key(name) {
            headers.insert(name.clone(), value.clone());
        }
    }
    for cookie in &response.cookies {
        if let Ok(v) = HeaderValue::from_str(cookie) {
            headers.append("set-cookie", v);
        }
    }
    let body = match response.body {
        None | Some(Body::Empty) => Bytes::new(),
        Some(Body::Text(text)) if response.is_base64_encoded => Bytes::from(
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|e| format!("body is not base64: {e}"))?,
        ),
        Some(Body::Text(text)) => Bytes::from(text),
        Some(Body::Binary(bytes)) => Bytes::from(bytes),
        Some(_) => Bytes::new(),
    };
    Ok(Reply {
        status,
        headers,
        body,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_answers_are_checked_as_api_gateway_checks_them() {
        let (allowed, context) =
            simple_answer(json!({"isAuthorized": true, "context": {"userId": "U"}})).unwrap();
        assert!(allowed);
        assert_eq!(context["userId"], "U");
        let (allowed, context) = simple_answer(json!({"isAuthorized": false})).unwrap();
        assert!(!allowed && context.is_empty());
        assert!(simple_answer(json!({"isAuthorized": "yes"})).is_err());
        assert!(simple_answer(json!({"context": {}})).is_err());
        assert!(simple_answer(json!({"isAuthorized": true, "context": 3})).is_err());
    }

    #[test]
    fn payload_2_responses_become_http_responses() {
        let reply = response_v2(json!({
            "statusCode": 201,
            "headers": {"content-type": "application/json"},
            "cookies": ["a=1"],
            "body": "{\"ok\":true}",
            "isBase64Encoded": false
        }))
        .unwrap();
        assert_eq!(reply.status, StatusCode::CREATED);
        assert_eq!(reply.headers["set-cookie"], "a=1");
        assert_eq!(reply.body, Bytes::from_static(b"{\"ok\":true}"));
        let bare = response_v2(json!({"tickets": []})).unwrap();
        assert_eq!(
            (bare.status, bare.body),
            (StatusCode::OK, Bytes::from("{\"tickets\":[]}"))
        );
        assert!(response_v2(json!({"statusCode": 99})).is_err());
        let plain = response_v2(json!({"statusCode": 204})).unwrap();
        assert_eq!(plain.status, StatusCode::NO_CONTENT);
        let failed = integration_reply_v2(Err(InvokeError {
            function: "f".into(),
            reason: "r".into(),
            timed_out: true,
        }));
        assert_eq!(failed.status, 503);
    }
}
