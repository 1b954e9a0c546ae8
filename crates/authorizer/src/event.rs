//! The fields of API Gateway's authorizer events that a decision reads,
//! in one pass over the event's JSON, borrowing its strings: REST API
//! REQUEST events (the shape of `aws_lambda_events`'
//! `ApiGatewayCustomAuthorizerRequestTypeRequest`) and HTTP API payload
//! 2.0 events (`ApiGatewayV2CustomAuthorizerV2Request`). Those types read
//! every header into a `HeaderMap` and every field besides; a serde
//! struct of just these fields still took 5 µs of an invocation that
//! decides in less (`make bench`, `event_read`), most of it stepping
//! through what it skips (the token a second time in
//! `multiValueHeaders`, the request context's dozen fields). So the event
//! is read by [`Event::read`]: a scan that steps over a value by its
//! brackets and quotes alone, and reads the few strings a decision uses
//! (escapes decoded by serde_json). The runtime has checked the event is
//! JSON; anything the scan cannot read is a malformed event, never a
//! panic. The tests feed the handler the captured sample events.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

/// An authorizer event of either shape: `version` `"2.0"` is an HTTP
/// API's, anything else a REST API's.
#[derive(Debug, Default)]
pub struct Event<'a> {
    pub version: Option<Text<'a>>,
    /// REST: the request's method, route template, ARN and path.
    pub http_method: Option<Text<'a>>,
    pub resource: Option<Text<'a>>,
    pub method_arn: Option<Text<'a>>,
    pub path: Option<Text<'a>>,
    /// HTTP API: `METHOD /template` (`ANY` for an ANY route), and the ARN.
    pub route_key: Option<Text<'a>>,
    pub route_arn: Option<Text<'a>>,
    pub headers: Option<Headers<'a>>,
    pub path_parameters: Option<HashMap<String, String>>,
    pub request_context: Option<RequestContext<'a>>,
}

impl Event<'_> {
    /// Whether it is an HTTP API (payload 2.0) event.
    pub fn is_http_api(&self) -> bool {
        self.version.as_deref() == Some("2.0")
    }
}

#[derive(Debug, Default)]
pub struct RequestContext<'a> {
    /// REST: the caller's connection, from API Gateway's
    /// `requestContext.identity` object (not an identity at an issuer).
    pub connection: Option<RestCaller<'a>>,
    /// HTTP API: the request.
    pub http: Option<Http<'a>>,
}

#[derive(Debug, Default)]
pub struct RestCaller<'a> {
    pub source_ip: Option<Text<'a>>,
}

#[derive(Debug, Default)]
pub struct Http<'a> {
    pub method: Option<Text<'a>>,
    pub path: Option<Text<'a>>,
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

/// An event the scan could not read, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    /// What was expected.
    pub expected: &'static str,
    /// The byte offset where it was not found.
    pub at: usize,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "expected {} at byte {}", self.expected, self.at)
    }
}

type Read<T> = Result<T, Malformed>;

impl<'a> Event<'a> {
    /// Reads an event (a JSON object), borrowing its strings.
    pub fn read(json: &'a str) -> Read<Self> {
        let mut scan = Scan::new(json);
        let mut event = Event::default();
        scan.object(|scan, key| {
            match &*key {
                "version" => event.version = scan.text()?,
                "httpMethod" => event.http_method = scan.text()?,
                "resource" => event.resource = scan.text()?,
                "methodArn" => event.method_arn = scan.text()?,
                "path" => event.path = scan.text()?,
                "routeKey" => event.route_key = scan.text()?,
                "routeArn" => event.route_arn = scan.text()?,
                "headers" => event.headers = scan.pairs()?.map(Headers),
                "pathParameters" => {
                    event.path_parameters = scan.pairs()?.map(|pairs| {
                        pairs
                            .into_iter()
                            .map(|(k, v)| (k.0.into_owned(), v.0.into_owned()))
                            .collect()
                    })
                }
                "requestContext" => event.request_context = scan.request_context()?,
                _ => scan.skip()?,
            }
            Ok(())
        })?;
        scan.end()?;
        Ok(event)
    }
}

/// A cursor over an event's JSON.
struct Scan<'a> {
    json: &'a str,
    at: usize,
}

impl<'a> Scan<'a> {
    fn new(json: &'a str) -> Self {
        Self { json, at: 0 }
    }

    fn bytes(&self) -> &'a [u8] {
        self.json.as_bytes()
    }

    fn fail<T>(&self, expected: &'static str) -> Read<T> {
        Err(Malformed {
            expected,
            at: self.at,
        })
    }

    /// The next byte that is not whitespace (the cursor on it).
    fn peek(&mut self) -> Option<u8> {
        while let Some(&b) = self.bytes().get(self.at) {
            if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(b);
            }
            self.at += 1;
        }
        None
    }

    fn eat(&mut self, byte: u8, expected: &'static str) -> Read<()> {
        if self.peek() == Some(byte) {
            self.at += 1;
            Ok(())
        } else {
            self.fail(expected)
        }
    }

    fn end(&mut self) -> Read<()> {
        match self.peek() {
            None => Ok(()),
            Some(_) => self.fail("the end of the event"),
        }
    }

    /// The members of an object, each key handed to `member`, which reads
    /// (or skips) its value.
    fn object(&mut self, mut member: impl FnMut(&mut Self, Text<'a>) -> Read<()>) -> Read<()> {
        self.eat(b'{', "an object")?;
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(());
        }
        loop {
            let key = self.string()?;
            self.eat(b':', "':'")?;
            member(self, key)?;
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return self.fail("',' or '}'"),
            }
        }
    }

    /// Whether the next value is `null` (consumed if so).
    fn null(&mut self) -> bool {
        if self.peek() == Some(b'n') && self.bytes()[self.at..].starts_with(b"null") {
            self.at += 4;
            true
        } else {
            false
        }
    }

    /// A string value, or `None` for `null`.
    fn text(&mut self) -> Read<Option<Text<'a>>> {
        if self.null() {
            return Ok(None);
        }
        self.string().map(Some)
    }

    /// A string, borrowed unless it has escapes.
    fn string(&mut self) -> Read<Text<'a>> {
        if self.peek() != Some(b'"') {
            return self.fail("a string");
        }
        let start = self.at;
        let mut at = start + 1;
        let mut escaped = false;
        loop {
            let Some(rest) = self.bytes().get(at..) else {
                return self.fail("the end of a string");
            };
            match memchr::memchr2(b'"', b'\\', rest) {
                None => return self.fail("the end of a string"),
                Some(i) if self.bytes()[at + i] == b'"' => {
                    at += i + 1;
                    break;
                }
                Some(i) => {
                    escaped = true;
                    at += i + 2;
                }
            }
        }
        self.at = at;
        if !escaped {
            return Ok(Text(Cow::Borrowed(&self.json[start + 1..at - 1])));
        }
        match serde_json::from_str::<String>(&self.json[start..at]) {
            Ok(decoded) => Ok(Text(Cow::Owned(decoded))),
            Err(_) => Err(Malformed {
                expected: "a string",
                at: start,
            }),
        }
    }

    /// An object of strings (headers, path parameters), or `None` for
    /// `null`.
    #[allow(clippy::type_complexity)]
    fn pairs(&mut self) -> Read<Option<Vec<(Text<'a>, Text<'a>)>>> {
        if self.null() {
            return Ok(None);
        }
        let mut pairs = Vec::with_capacity(16);
        self.object(|scan, key| {
            pairs.push((key, scan.string()?));
            Ok(())
        })?;
        Ok(Some(pairs))
    }

    fn request_context(&mut self) -> Read<Option<RequestContext<'a>>> {
        if self.null() {
            return Ok(None);
        }
        let mut context = RequestContext::default();
        self.object(|scan, key| {
            match &*key {
                "identity" if !scan.null() => {
                    let mut caller = RestCaller::default();
                    scan.object(|scan, key| match &*key {
                        "sourceIp" => {
                            caller.source_ip = scan.text()?;
                            Ok(())
                        }
                        _ => scan.skip(),
                    })?;
                    context.connection = Some(caller);
                }
                "http" if !scan.null() => {
                    let mut http = Http::default();
                    scan.object(|scan, key| {
                        match &*key {
                            "method" => http.method = scan.text()?,
                            "path" => http.path = scan.text()?,
                            "sourceIp" => http.source_ip = scan.text()?,
                            _ => scan.skip()?,
                        }
                        Ok(())
                    })?;
                    context.http = Some(http);
                }
                "identity" | "http" => {}
                _ => scan.skip()?,
            }
            Ok(())
        })?;
        Ok(Some(context))
    }

    /// Steps over one value: a string by its quotes, an object or an array
    /// by its brackets (strings inside stepped over whole), anything else
    /// up to the next delimiter.
    fn skip(&mut self) -> Read<()> {
        match self.peek() {
            Some(b'"') => self.string().map(|_| ()),
            Some(b'{' | b'[') => {
                let mut depth = 0usize;
                loop {
                    match self.peek() {
                        Some(b'{' | b'[') => {
                            depth += 1;
                            self.at += 1;
                        }
                        Some(b'}' | b']') => {
                            depth -= 1;
                            self.at += 1;
                            if depth == 0 {
                                return Ok(());
                            }
                        }
                        Some(b'"') => {
                            self.string()?;
                        }
                        Some(_) => self.at += 1,
                        None => return self.fail("the end of an object or array"),
                    }
                }
            }
            Some(b'}' | b']' | b',' | b':') | None => self.fail("a value"),
            Some(_) => {
                while let Some(&b) = self.bytes().get(self.at) {
                    if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    self.at += 1;
                }
                Ok(())
            }
        }
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
        let e = Event::read(REST).unwrap();
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
        let ip = e.request_context.unwrap().connection.unwrap().source_ip;
        assert_eq!(
            ip.as_deref(),
            lib.request_context.identity.unwrap().source_ip.as_deref()
        );
        let headers = e.headers.unwrap();
        for (name, value) in lib.headers.iter() {
            assert_eq!(headers.get(name.as_str()), value.to_str().ok(), "{name}");
        }

        let e = Event::read(HTTP).unwrap();
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
        let e = Event::read(
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
            assert!(Event::read(bad).is_err(), "{bad}");
        }
    }

    /// What the scan steps over is stepped over whole (brackets and quotes
    /// inside strings, escapes, nesting, numbers, literals), escaped keys
    /// are decoded, and anything it cannot read is an error that says
    /// where, never a panic: cut anywhere, the sample is refused.
    #[test]
    fn the_scan_steps_over_what_it_skips_and_refuses_what_it_cannot_read() {
        let e = Event::read(
            r#" { "multiValueHeaders": {"x": ["}\"]", "{["]}, "stageVariables": null,
                 "n": -1.5e3, "t": true, "q": [1, [2, {"a": "]"}]],
                 "requestContext": {"identity": null, "http": {"sourceIp": "203.0.113.9"}},
                 "pathParameters": {"tenant\u0049d": "T"}, "methodArn": "arn" } "#,
        )
        .unwrap();
        assert_eq!(e.method_arn.as_deref(), Some("arn"));
        assert_eq!(e.path_parameters.unwrap()["tenantId"], "T");
        let context = e.request_context.unwrap();
        assert!(context.connection.is_none());
        assert_eq!(
            context.http.unwrap().source_ip.as_deref(),
            Some("203.0.113.9")
        );
        for cut in 0..REST.len() - 1 {
            if REST.is_char_boundary(cut) {
                let refused = Event::read(&REST[..cut]);
                assert!(refused.is_err(), "cut at {cut}");
            }
        }
        assert!(
            Event::read(&format!("{REST} {{}}")).is_err(),
            "trailing input"
        );
        assert_eq!(
            Event::read(r#"{"path": "/a"#).unwrap_err().expected,
            "the end of a string"
        );
    }
}
