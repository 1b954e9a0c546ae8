//! The fields of API Gateway's authorizer events that a decision reads,
//! in one pass over the event's JSON, borrowing its strings: REST API
//! REQUEST events (the shape of `aws_lambda_events`'
//! `ApiGatewayCustomAuthorizerRequestTypeRequest`) and HTTP API payload
//! 2.0 events (`ApiGatewayV2CustomAuthorizerV2Request`). Those types read
//! every header into a `HeaderMap` and every field besides: 7.7 µs of an
//! invocation that decides in 5 (`make bench`), for a token header and
//! five strings. The tests feed the handler the captured sample events.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;

/// An authorizer event of either shape: `version` `"2.0"` is an HTTP
/// API's, anything else a REST API's.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Event<'a> {
    #[serde(borrow)]
    pub version: Option<Text<'a>>,
    /// REST: the request's method, route template, ARN and path.
    #[serde(borrow)]
    pub http_method: Option<Text<'a>>,
    #[serde(borrow)]
    pub resource: Option<Text<'a>>,
    #[serde(borrow)]
    pub method_arn: Option<Text<'a>>,
    #[serde(borrow)]
    pub path: Option<Text<'a>>,
    /// HTTP API: `METHOD /template` (`ANY` for an ANY route), and the ARN.
    #[serde(borrow)]
    pub route_key: Option<Text<'a>>,
    #[serde(borrow)]
    pub route_arn: Option<Text<'a>>,
    #[serde(borrow)]
    pub headers: Option<Headers<'a>>,
    pub path_parameters: Option<HashMap<String, String>>,
    #[serde(borrow)]
    pub request_context: Option<RequestContext<'a>>,
}

impl Event<'_> {
    /// Whether it is an HTTP API (payload 2.0) event.
    pub fn is_http_api(&self) -> bool {
        self.version.as_deref() == Some("2.0")
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RequestContext<'a> {
    /// REST: the caller's connection (API Gateway's `identity` object,
    /// not an identity at an issuer).
    #[serde(borrow)]
    pub identity: Option<RestCaller<'a>>,
    /// HTTP API: the request.
    #[serde(borrow)]
    pub http: Option<Http<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RestCaller<'a> {
    #[serde(borrow)]
    pub source_ip: Option<Text<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Http<'a> {
    #[serde(borrow)]
    pub method: Option<Text<'a>>,
    #[serde(borrow)]
    pub path: Option<Text<'a>>,
    #[serde(borrow)]
    pub source_ip: Option<Text<'a>>,
}

/// A string of the event, borrowed unless JSON escapes made it a copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text<'a>(pub Cow<'a, str>);

impl std::ops::Deref for Text<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(s.to_string())))
            }
            fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(s)))
            }
        }
        d.deserialize_str(V(PhantomData))
    }
}

/// An event's headers, in the event's order (names as the client sent
/// them on REST APIs, lower case on HTTP APIs), each value a string.
#[derive(Debug, Default)]
pub struct Headers<'a>(Vec<(Text<'a>, Text<'a>)>);

impl Headers<'_> {
    /// The header named `name`, whatever its case; of two spellings of
    /// one name, the last (as the library's `HeaderMap` keeps it).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .rfind(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| &**v)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Headers<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Headers<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of header names and values")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut headers = Vec::with_capacity(map.size_hint().unwrap_or(16));
                while let Some(header) = map.next_entry::<Text<'a>, Text<'a>>()? {
                    headers.push(header);
                }
                Ok(Headers(headers))
            }
        }
        d.deserialize_map(V(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REST: &str = include_str!("../../../events/authorizer-rest-request.json");
    const HTTP: &str = include_str!("../../../events/authorizer-http-v2-request.json");

    /// The captured samples read as the library's types read them.
    #[test]
    fn the_samples_read_as_the_librarys_types_read_them() {
        use aws_lambda_events::apigw::{
            ApiGatewayCustomAuthorizerRequestTypeRequest as Rest,
            ApiGatewayV2CustomAuthorizerV2Request as V2,
        };
        let e: Event = serde_json::from_str(REST).unwrap();
        let lib: Rest = serde_json::from_str(REST).unwrap();
        assert!(!e.is_http_api());
        assert_eq!(
            e.http_method.as_deref(),
            lib.http_method.as_ref().map(|m| m.as_str())
        );
        assert_eq!(e.resource.as_deref(), lib.resource.as_deref());
        assert_eq!(e.method_arn.as_deref(), lib.method_arn.as_deref());
        assert_eq!(e.path.as_deref(), lib.path.as_deref());
        assert_eq!(e.path_parameters.unwrap_or_default(), lib.path_parameters);
        let ip = e.request_context.unwrap().identity.unwrap().source_ip;
        assert_eq!(
            ip.as_deref(),
            lib.request_context.identity.unwrap().source_ip.as_deref()
        );
        let headers = e.headers.unwrap();
        for (name, value) in lib.headers.iter() {
            assert_eq!(headers.get(name.as_str()), value.to_str().ok(), "{name}");
        }

        let e: Event = serde_json::from_str(HTTP).unwrap();
        let lib: V2 = serde_json::from_str(HTTP).unwrap();
        assert!(e.is_http_api());
        assert_eq!(e.route_key.as_deref(), lib.route_key.as_deref());
        assert_eq!(e.route_arn.as_deref(), lib.route_arn.as_deref());
        assert_eq!(e.path_parameters.unwrap_or_default(), lib.path_parameters);
        let http = e.request_context.unwrap().http.unwrap();
        assert_eq!(
            http.method.as_deref(),
            Some(lib.request_context.http.method.as_str())
        );
        assert_eq!(
            http.path.as_deref(),
            lib.request_context.http.path.as_deref()
        );
        assert_eq!(
            http.source_ip.as_deref(),
            lib.request_context.http.source_ip.as_deref()
        );
        let headers = e.headers.unwrap();
        for (name, value) in lib.headers.iter() {
            assert_eq!(headers.get(name.as_str()), value.to_str().ok(), "{name}");
        }
    }

    /// Escaped strings are read (as copies), a header's case does not
    /// matter and the last of two spellings wins, as with the library; a
    /// header that is not a string is a malformed event.
    #[test]
    fn escapes_case_and_malformed_headers() {
        let e: Event = serde_json::from_str(
            r#"{"path": "/a\u002fb", "headers": {"AUTHORIZATION": "Bearer x", "authorization": "Bearer y"}}"#,
        )
        .unwrap();
        assert_eq!(e.path.as_deref(), Some("/a/b"));
        assert_eq!(e.headers.unwrap().get("Authorization"), Some("Bearer y"));
        for bad in [
            r#"{"headers": ["a"]}"#,
            r#"{"headers": {"a": null}}"#,
            r#"{"path": 1}"#,
        ] {
            assert!(serde_json::from_str::<Event>(bad).is_err(), "{bad}");
        }
    }
}
