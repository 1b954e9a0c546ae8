//! Routing from the template: which resource and method a request's path
//! names, the path parameters it binds, the query parameters, and the
//! resource ids API Gateway shows.

use std::collections::HashMap;

use testkit::template::ApiRoute;

/// A route matched to a request.
pub(super) struct Matched<'a> {
    pub route: &'a ApiRoute,
    pub path_parameters: HashMap<String, String>,
}

/// Matches `path` (without the stage) against the resource templates the
/// way API Gateway does: at each segment a literal beats a `{param}`, which
/// beats a greedy `{param+}`; one trailing `/` is ignored, as API Gateway
/// ignores it. `Err(true)`: the resource exists, not the method.
pub(super) fn match_route<'a>(
    routes: &'a [ApiRoute],
    method: &str,
    path: &str,
) -> Result<Matched<'a>, bool> {
    let path = match path.strip_suffix('/') {
        Some(trimmed) if !trimmed.is_empty() => trimmed,
        _ => path,
    };
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let mut best: Option<(Vec<u8>, &str, HashMap<String, String>)> = None;
    let mut resources: Vec<&str> = routes.iter().map(|r| r.resource.as_str()).collect();
    resources.dedup();
    for resource in resources {
        let Some((rank, params)) = match_resource(resource, &segments) else {
            continue;
        };
        if best.as_ref().is_none_or(|(r, _, _)| rank > *r) {
            best = Some((rank, resource, params));
        }
    }
    let Some((_, resource, path_parameters)) = best else {
        return Err(false);
    };
    let route = routes
        .iter()
        .find(|r| r.resource == resource && r.method == method)
        .or_else(|| {
            routes
                .iter()
                .find(|r| r.resource == resource && r.method == "ANY")
        })
        .ok_or(true)?;
    Ok(Matched {
        route,
        path_parameters,
    })
}

/// The specificity of `resource` for `segments` (higher wins) and the path
/// parameters it binds, or `None` when it does not match.
fn match_resource(resource: &str, segments: &[&str]) -> Option<(Vec<u8>, HashMap<String, String>)> {
    let template: Vec<&str> = resource.trim_start_matches('/').split('/').collect();
    let mut rank = Vec::new();
    let mut params = HashMap::new();
    for (i, part) in template.iter().enumerate() {
        if let Some(name) = part.strip_prefix('{').and_then(|p| p.strip_suffix("+}")) {
            if i >= segments.len() || segments[i].is_empty() {
                return None;
            }
            params.insert(name.to_string(), segments[i..].join("/"));
            rank.push(0);
            return Some((rank, params));
        }
        let segment = *segments.get(i)?;
        if let Some(name) = part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
            if segment.is_empty() {
                return None;
            }
            params.insert(name.to_string(), decode_path_segment(segment));
            rank.push(1);
        } else if *part == segment {
            rank.push(2);
        } else {
            return None;
        }
    }
    (template.len() == segments.len()).then_some((rank, params))
}

/// A path segment's `%XX` escapes decoded (a `+` stays a `+`: only query
/// strings are form-encoded); invalid escapes are kept as they are.
fn decode_path_segment(segment: &str) -> String {
    percent_encoding::percent_decode_str(segment)
        .decode_utf8_lossy()
        .into_owned()
}

/// The query string's parameters, form-decoded, every value of each name.
pub(super) fn parse_query(query: &str) -> HashMap<String, Vec<String>> {
    let mut map: HashMap<String, Vec<String>> = HashMap::new();
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        map.entry(name.into_owned())
            .or_default()
            .push(value.into_owned());
    }
    map
}

/// A stable six-character id for a resource, as API Gateway shows them.
pub(super) fn resource_id(resource: &str) -> String {
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, resource.as_bytes());
    digest.as_ref()[..3]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(method: &str, resource: &str) -> ApiRoute {
        ApiRoute {
            method: method.into(),
            resource: resource.into(),
            function: "f".into(),
            authorized: true,
        }
    }

    #[test]
    fn literal_segments_beat_parameters() {
        let routes = vec![
            route("GET", "/tenants/{tenantId}"),
            route("GET", "/tenants/by-name/{name}"),
            route("GET", "/tenants/{tenantId}/members"),
            route("ANY", "/files/{path+}"),
        ];
        let m = match_route(&routes, "GET", "/tenants/by-name/acme")
            .ok()
            .unwrap();
        assert_eq!(m.route.resource, "/tenants/by-name/{name}");
        assert_eq!(m.path_parameters["name"], "acme");
        let m = match_route(&routes, "GET", "/tenants/T1").ok().unwrap();
        assert_eq!(m.route.resource, "/tenants/{tenantId}");
        assert_eq!(m.path_parameters["tenantId"], "T1");
        let m = match_route(&routes, "GET", "/tenants/by-name")
            .ok()
            .unwrap();
        assert_eq!(
            m.route.resource, "/tenants/{tenantId}",
            "a parameter matches a literal-looking value"
        );
        let m = match_route(&routes, "DELETE", "/files/a/b%20c")
            .ok()
            .unwrap();
        assert_eq!(m.path_parameters["path"], "a/b%20c");
        assert!(matches!(
            match_route(&routes, "POST", "/tenants/T1"),
            Err(true)
        ));
        assert!(matches!(
            match_route(&routes, "GET", "/nothing"),
            Err(false)
        ));
        assert!(matches!(
            match_route(&routes, "GET", "/tenants/T1/members/x"),
            Err(false)
        ));
        assert!(matches!(
            match_route(&routes, "GET", "/tenants//members"),
            Err(false)
        ));
    }

    #[test]
    fn path_parameters_and_queries_are_decoded() {
        assert_eq!(decode_path_segment("a%40b.com"), "a@b.com");
        assert_eq!(decode_path_segment("100%"), "100%");
        assert_eq!(decode_path_segment("%zz"), "%zz");
        assert_eq!(
            decode_path_segment("a+b%2Bc"),
            "a+b+c",
            "a + in a path is a +"
        );
        let q = parse_query("limit=5&tag=a&tag=b%20c&flag");
        assert_eq!(q["limit"], ["5"]);
        assert_eq!(q["tag"], ["a", "b c"]);
        assert_eq!(q["flag"], [""]);
        let q = parse_query("q=a+b%2Bc&&e=x=y");
        assert_eq!(q["q"], ["a b+c"], "a + in a query is a space");
        assert_eq!(q["e"], ["x=y"]);
    }

    #[test]
    fn a_trailing_slash_names_the_same_resource() {
        let routes = vec![route("GET", "/console"), route("GET", "/console/{proxy+}")];
        let m = match_route(&routes, "GET", "/console/").ok().unwrap();
        assert_eq!(m.route.resource, "/console");
        assert!(m.path_parameters.is_empty());
        let m = match_route(&routes, "GET", "/console/assets/a.js")
            .ok()
            .unwrap();
        assert_eq!(m.route.resource, "/console/{proxy+}");
        assert_eq!(m.path_parameters["proxy"], "assets/a.js");
    }

    #[test]
    fn path_parameters_are_decoded_through_the_router() {
        let routes = vec![route("GET", "/users/{email}")];
        let m = match_route(&routes, "GET", "/users/a+b%40c.com")
            .ok()
            .unwrap();
        assert_eq!(m.path_parameters["email"], "a+b@c.com");
    }
}
