//! The Lambda proxy integration: the proxy event a function receives and
//! the HTTP response its answer becomes (502 for a failing integration,
//! 504 for a slow one).

use aws_lambda_events::apigw::{
    ApiGatewayProxyRequest, ApiGatewayProxyRequestContext, ApiGatewayProxyResponse,
};
use aws_lambda_events::encodings::Body;
use aws_lambda_events::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use aws_lambda_events::query_map::QueryMap;
use base64::Engine;
use hyper::body::Bytes;
use serde_json::{json, Map, Value};

use super::routes::resource_id;
use super::{Call, Gateway, Reply};
use crate::lambda::{InvokeError, Invoked};

impl Gateway {
    /// The proxy event for `call`, with the authorizer's context.
    pub(super) fn proxy_event(&self, call: &Call<'_>, authorizer: Map<String, Value>) -> Value {
        let route = call.matched.route;
        let now = authz_core::clock::now_since_epoch();
        let mut context = ApiGatewayProxyRequestContext::default();
        context.account_id = Some(self.config.account_id.clone());
        context.resource_id = Some(resource_id(&route.resource));
        context.stage = Some(self.config.api.stage.clone());
        context.request_id = Some(call.request_id.clone());
        context.identity.source_ip = Some(call.request.source_ip.clone());
        context.identity.user_agent = call
            .request
            .headers
            .get("user-agent")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        context.resource_path = Some(route.resource.clone());
        context.path = Some(call.context_path.clone());
        context.authorizer.fields = authorizer.into_iter().collect();
        context.http_method = call.method.parse().unwrap_or(Method::GET);
        context.request_time_epoch = now.as_millis() as i64;
        context.apiid = Some(self.config.api_id.clone());
        context.protocol = Some("HTTP/1.1".into());
        let mut event = ApiGatewayProxyRequest::default();
        event.resource = Some(route.resource.clone());
        event.path = Some(call.path.to_string());
        event.http_method = context.http_method.clone();
        event.headers = call.request.headers.clone();
        event.multi_value_headers = call.request.headers.clone();
        event.query_string_parameters = QueryMap::from(call.query.clone());
        event.multi_value_query_string_parameters = QueryMap::from(call.query.clone());
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
        serde_json::to_value(event).expect("a proxy event serializes")
    }
}

/// The gateway's answer for an integration's invocation.
pub(super) fn integration_reply(invoked: Result<Invoked, InvokeError>) -> Reply {
    match invoked {
        Ok(Invoked::Response(v)) => proxy_reply(v).unwrap_or_else(|reason| {
            tracing::warn!(%reason, "malformed integration response: 502");
            bad_gateway()
        }),
        Ok(Invoked::FunctionError { message, .. }) => {
            tracing::warn!(%message, "integration error: 502");
            bad_gateway()
        }
        Err(InvokeError {
            timed_out: true, ..
        }) => Reply::gateway(
            504,
            "IntegrationTimeout",
            json!({"message": "Endpoint request timed out"}),
        ),
        Err(e) => {
            tracing::warn!(error = %e, "integration unreachable: 502");
            bad_gateway()
        }
    }
}

fn bad_gateway() -> Reply {
    Reply::gateway(
        502,
        "InternalServerErrorException",
        json!({"message": "Internal server error"}),
    )
}

/// The HTTP response for a proxy integration's answer.
fn proxy_reply(value: Value) -> Result<Reply, String> {
    let response: ApiGatewayProxyResponse =
        serde_json::from_value(value).map_err(|e| e.to_string())?;
    let status = u16::try_from(response.status_code)
        .ok()
        .and_then(|s| StatusCode::from_u16(s).ok())
        .ok_or_else(|| format!("status {}", response.status_code))?;
    let mut headers = HeaderMap::new();
    for (name, value) in response.multi_value_headers.iter() {
        headers.append(name.clone(), value.clone());
    }
    for (name, value) in response.headers.iter() {
        if !headers.contains_key(name) {
            headers.insert(name.clone(), value.clone());
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
    headers.insert(
        HeaderName::from_static("x-amzn-requestid"),
        HeaderValue::from_str(&ulid::Ulid::new().to_string()).expect("a ULID is a header value"),
    );
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
    fn proxy_responses_become_http_responses() {
        let reply = proxy_reply(json!({
            "statusCode": 201,
            "headers": {"content-type": "application/json", "etag": "\"1\""},
            "multiValueHeaders": {"set-cookie": ["a=1", "b=2"]},
            "body": "{\"ok\":true}",
            "isBase64Encoded": false
        }))
        .unwrap();
        assert_eq!(reply.status, StatusCode::CREATED);
        assert_eq!(reply.headers["etag"], "\"1\"");
        assert_eq!(reply.headers.get_all("set-cookie").iter().count(), 2);
        assert_eq!(reply.body, Bytes::from_static(b"{\"ok\":true}"));
        let binary =
            proxy_reply(json!({"statusCode": 200, "body": "aGk=", "isBase64Encoded": true}))
                .unwrap();
        assert_eq!(binary.body, Bytes::from_static(b"hi"));
        assert!(proxy_reply(json!({"statusCode": 99})).is_err());
        assert!(proxy_reply(json!({"body": "x"})).is_err());
    }

    #[test]
    fn failing_and_slow_integrations_are_502_and_504() {
        let failed = |timed_out| {
            Err(InvokeError {
                function: "f".into(),
                reason: "r".into(),
                timed_out,
            })
        };
        assert_eq!(integration_reply(failed(true)).status, 504);
        assert_eq!(integration_reply(failed(false)).status, 502);
        let error = Ok(Invoked::FunctionError {
            error_type: "E".into(),
            message: "m".into(),
        });
        assert_eq!(integration_reply(error).status, 502);
        assert_eq!(
            integration_reply(Ok(Invoked::Response(json!({"statusCode": 99})))).status,
            502
        );
    }
}
